import torch
import torch.nn as nn


class Model(nn.Module):
    """
    Elementwise LeakyReLU: y = x if x >= 0 else negative_slope * x.
    """

    def __init__(self, negative_slope: float = 0.01):
        super(Model, self).__init__()
        self.negative_slope = negative_slope

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """
        Args:
            x (torch.Tensor): input of any shape.

        Returns:
            torch.Tensor: same shape as x.
        """
        return torch.nn.functional.leaky_relu(x, negative_slope=self.negative_slope)


batch_size = 64
dim = 4096
negative_slope = 0.05


def get_inputs():
    x = torch.randn(batch_size, dim)
    return [x]


def get_init_inputs():
    return [negative_slope]
