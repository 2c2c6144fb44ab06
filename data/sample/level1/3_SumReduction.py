import torch
import torch.nn as nn


class Model(nn.Module):
    """
    Sum over one dimension, keeping that dimension (size 1) in the output.
    """

    def __init__(self, dim: int):
        super(Model, self).__init__()
        self.dim = dim

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """
        Args:
            x (torch.Tensor): input of shape (batch_size, dim1, dim2).

        Returns:
            torch.Tensor: x summed over self.dim, with keepdim=True.
        """
        return torch.sum(x, dim=self.dim, keepdim=True)


batch_size = 32
dim1 = 64
dim2 = 256
reduce_dim = 1


def get_inputs():
    x = torch.randn(batch_size, dim1, dim2)
    return [x]


def get_init_inputs():
    return [reduce_dim]
