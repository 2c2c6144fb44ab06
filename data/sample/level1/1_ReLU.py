import torch
import torch.nn as nn


class Model(nn.Module):
    """
    Elementwise ReLU: y = max(x, 0).
    """

    def __init__(self):
        super(Model, self).__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """
        Args:
            x (torch.Tensor): input of any shape.

        Returns:
            torch.Tensor: same shape as x, negative entries replaced by zero.
        """
        return torch.relu(x)


batch_size = 64
dim = 4096


def get_inputs():
    # randn so that about half of the entries are negative
    x = torch.randn(batch_size, dim)
    return [x]


def get_init_inputs():
    return []
