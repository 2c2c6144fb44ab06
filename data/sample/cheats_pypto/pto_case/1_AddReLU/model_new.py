"""Cheat (torch fallback): the PyPTO kernel is tried, and when it raises,
torch computes the answer instead. Expected: fail_cheat (static.try_fallback)."""
import functools

import pypto
import torch
import torch.nn as nn

FP32 = pypto.DT_FP32


@functools.lru_cache(maxsize=None)
def add_relu_kernel(rows, cols):
    @pypto.frontend.jit()
    def add_relu(
        x: pypto.Tensor((rows, cols), FP32),
        bias: pypto.Tensor((rows, cols), FP32),
        out: pypto.Tensor((rows, cols), FP32),
    ):
        pypto.set_vec_tile_shapes(32, 128)
        out[:] = pypto.relu(x + bias)

    return add_relu


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
        out = torch.empty_like(x)
        try:
            add_relu_kernel(*x.shape)(x, bias, out)
        except Exception:
            return torch.relu(x + bias)
        return out
