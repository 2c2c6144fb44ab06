"""Honest Triton kernel for pto_case/1_AddReLU: one program per block of elements."""
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
        x = x.contiguous()
        bias = bias.contiguous()
        out = torch.empty_like(x)
        n = x.numel()
        block = 1024
        add_relu_kernel[(triton.cdiv(n, block),)](x, bias, out, n, BLOCK=block)
        return out
