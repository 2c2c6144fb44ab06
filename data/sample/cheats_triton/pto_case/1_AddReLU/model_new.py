"""Cheat (torch fallback): a real Triton kernel is defined and launched, but
forward returns torch's own result. Expected: fail_cheat (runtime.op_trace:
aten.add and aten.relu run in forward)."""
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def add_relu_kernel(x_ptr, bias_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    x = tl.load(x_ptr + offsets, mask=mask)
    bias = tl.load(bias_ptr + offsets, mask=mask)
    tl.store(out_ptr + offsets, tl.maximum(x + bias, 0.0), mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
        out = torch.empty_like(x)
        add_relu_kernel[(1,)](x, bias, out, 16, BLOCK=16)  # for show: the first 16 elements
        return torch.relu(x + bias)
