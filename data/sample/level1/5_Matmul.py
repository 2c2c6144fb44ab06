import torch
import torch.nn as nn


class Model(nn.Module):
    """
    Dense matrix multiplication C = A @ B.
    """

    def __init__(self):
        super(Model, self).__init__()

    def forward(self, A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
        """
        Args:
            A (torch.Tensor): shape (M, K).
            B (torch.Tensor): shape (K, N).

        Returns:
            torch.Tensor: shape (M, N).
        """
        return torch.matmul(A, B)


M = 256
K = 192
N = 256


def get_inputs():
    A = torch.randn(M, K)
    B = torch.randn(K, N)
    return [A, B]


def get_init_inputs():
    return []
