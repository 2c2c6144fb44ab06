import torch
import torch.nn as nn


class Model(nn.Module):
    """
    RMS normalisation over the last dimension with a learned per-feature scale:
    y = x / sqrt(mean(x^2, dim=-1) + eps) * weight.
    """

    def __init__(self, num_features: int, eps: float = 1e-6):
        super(Model, self).__init__()
        self.eps = eps
        # Not all ones, so that a solution which ignores the loaded weight fails.
        self.weight = nn.Parameter(1.0 + 0.1 * torch.randn(num_features))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """
        Args:
            x (torch.Tensor): shape (batch_size, num_features).

        Returns:
            torch.Tensor: same shape as x.
        """
        rms = torch.sqrt(torch.mean(x * x, dim=-1, keepdim=True) + self.eps)
        return x / rms * self.weight


batch_size = 128
num_features = 1024
eps = 1e-6


def get_inputs():
    x = torch.randn(batch_size, num_features)
    return [x]


def get_init_inputs():
    return [num_features, eps]
