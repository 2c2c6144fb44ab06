import torch
import torch.nn as nn


class Model(nn.Module):
    """
    Elementwise affine map with constant coefficients: y = x * scale + shift.
    """

    def __init__(self, scale: float, shift: float):
        super(Model, self).__init__()
        self.scale = scale
        self.shift = shift

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """
        Args:
            x (torch.Tensor): input of any shape.

        Returns:
            torch.Tensor: same shape as x.
        """
        return x * self.scale + self.shift


batch_size = 64
dim = 4096
scale = 1.5
shift = -0.25


def get_inputs():
    x = torch.rand(batch_size, dim)
    return [x]


def get_init_inputs():
    return [scale, shift]
