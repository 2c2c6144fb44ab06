import torch
import torch.nn as nn


class Model(nn.Module):
    """
    Softmax over the last dimension of a 2-D input.
    """

    def __init__(self):
        super(Model, self).__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """
        Args:
            x (torch.Tensor): input of shape (batch_size, num_features).

        Returns:
            torch.Tensor: same shape; every row is non-negative and sums to 1.
        """
        return torch.softmax(x, dim=-1)


batch_size = 64
num_features = 2048


def get_inputs():
    # scaled so that a softmax without max-subtraction would overflow
    x = torch.randn(batch_size, num_features) * 30.0
    return [x]


def get_init_inputs():
    return []
