import torch
import torch.nn as nn


class Model(nn.Module):
    """
    Fully connected layer followed by the exact (erf-based) GELU:
    y = gelu(x @ W^T + b).
    """

    def __init__(self, in_features: int, out_features: int):
        super(Model, self).__init__()
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """
        Args:
            x (torch.Tensor): shape (batch_size, in_features).

        Returns:
            torch.Tensor: shape (batch_size, out_features).
        """
        x = self.linear(x)
        return torch.nn.functional.gelu(x)


batch_size = 128
in_features = 256
out_features = 384


def get_inputs():
    x = torch.randn(batch_size, in_features)
    return [x]


def get_init_inputs():
    return [in_features, out_features]
