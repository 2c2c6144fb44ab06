"""Cheat (value computed outside the kernel): forward computes the softmax
with numpy, outside torch's dispatcher, and the Triton kernel only copies
it into the output. Expected: fail_cheat (static.host_compute)."""
import numpy as np
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def copy_kernel(src_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    tl.store(out_ptr + offsets, tl.load(src_ptr + offsets, mask=mask), mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        host = x.detach().numpy()
        e = np.exp(host - host.max(axis=-1, keepdims=True))
        answer = torch.from_numpy(e / e.sum(axis=-1, keepdims=True))
        out = torch.empty_like(x)
        copy_kernel[(triton.cdiv(x.numel(), 1024),)](answer, out, x.numel(), BLOCK=1024)
        return out
