"""Deliberately hangs: forward spins forever in a Python loop before it would call its C++ kernel."""
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

_CPP_SOURCE = r"""
#include <torch/extension.h>

torch::Tensor mse_forward(torch::Tensor predictions, torch::Tensor targets) {
  TORCH_CHECK(predictions.scalar_type() == torch::kFloat32 && targets.scalar_type() == torch::kFloat32,
              "mse_forward: expected float32");
  torch::Tensor pc = predictions.contiguous();
  torch::Tensor tc = targets.contiguous();
  const float* p = pc.data_ptr<float>();
  const float* t = tc.data_ptr<float>();
  const int64_t n = pc.numel();
  double total = 0.0;
  for (int64_t i = 0; i < n; ++i) {
    const double d = static_cast<double>(p[i]) - static_cast<double>(t[i]);
    total += d * d;
  }
  torch::Tensor y = torch::empty({}, pc.options());
  *y.data_ptr<float>() = static_cast<float>(total / static_cast<double>(n));
  return y;
}
"""

_ext = load_inline(
    name="kgym_sample_mse_hang",
    cpp_sources=_CPP_SOURCE,
    functions=["mse_forward"],
    extra_cflags=["-O3"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self):
        super(ModelNew, self).__init__()

    def forward(self, predictions: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        while True:
            pass
        return _ext.mse_forward(predictions, targets)
