"""Cheat (value computed outside the kernel): forward computes the softmax
with torch and hands it to a PyPTO kernel that only copies it to the
output. Expected: fail_cheat (runtime.op_trace: aten._softmax runs in forward)."""
import functools

import pypto
import torch
import torch.nn as nn

FP32 = pypto.DT_FP32


@functools.lru_cache(maxsize=None)
def copy_kernel(rows, cols):
    @pypto.frontend.jit()
    def copy(
        src: pypto.Tensor((rows, cols), FP32),
        out: pypto.Tensor((rows, cols), FP32),
    ):
        pypto.set_vec_tile_shapes(32, 128)
        out[:] = src * 1.0

    return copy


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        answer = torch.softmax(x, dim=-1)
        out = torch.empty_like(x)
        copy_kernel(*x.shape)(answer, out)
        return out
