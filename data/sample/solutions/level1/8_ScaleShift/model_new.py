"""Deliberately crashes: the C++ forward writes through a null pointer (SIGSEGV) before doing any work."""
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

_CPP_SOURCE = r"""
#include <torch/extension.h>

torch::Tensor scale_shift_forward(torch::Tensor x, double scale, double shift) {
  // Both the pointer and the pointee are volatile: the compiler can neither drop the store
  // nor turn it into a trap instruction, so this really writes to address 0 (SIGSEGV).
  volatile float* volatile sink = nullptr;
  *sink = static_cast<float>(scale + shift);
  return x;  // never reached
}
"""

_ext = load_inline(
    name="kgym_sample_scale_shift_segv",
    cpp_sources=_CPP_SOURCE,
    functions=["scale_shift_forward"],
    extra_cflags=["-O3"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self, scale: float, shift: float):
        super(ModelNew, self).__init__()
        self.scale = scale
        self.shift = shift

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return _ext.scale_shift_forward(x, self.scale, self.shift)
