import torch
import torch.nn as nn


class Model(nn.Module):
    """
    Mean squared error between predictions and targets, reduced to a scalar.
    """

    def __init__(self):
        super(Model, self).__init__()

    def forward(self, predictions: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        """
        Args:
            predictions (torch.Tensor): shape (batch_size, dim).
            targets (torch.Tensor): same shape as predictions.

        Returns:
            torch.Tensor: 0-dimensional tensor, mean((predictions - targets)^2).
        """
        return torch.mean((predictions - targets) ** 2)


batch_size = 128
dim = 1024


def get_inputs():
    predictions = torch.randn(batch_size, dim)
    targets = torch.randn(batch_size, dim)
    return [predictions, targets]


def get_init_inputs():
    return []
