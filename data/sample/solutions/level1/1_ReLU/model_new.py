"""Honest OpenMP kernel for 1_ReLU: elementwise max(x, 0) in C++."""
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

_CPP_SOURCE = r"""
#include <torch/extension.h>

torch::Tensor relu_forward(torch::Tensor x) {
  TORCH_CHECK(x.scalar_type() == torch::kFloat32, "relu_forward: expected float32");
  torch::Tensor xc = x.contiguous();
  torch::Tensor y = torch::empty_like(xc);
  const float* in = xc.data_ptr<float>();
  float* out = y.data_ptr<float>();
  const int64_t n = xc.numel();
#pragma omp parallel for simd schedule(static)
  for (int64_t i = 0; i < n; ++i) {
    // written as "< 0 ? 0 : v" so that NaN passes through like torch.relu
    out[i] = in[i] < 0.0f ? 0.0f : in[i];
  }
  return y;
}
"""

_ext = load_inline(
    name="kgym_sample_relu",
    cpp_sources=_CPP_SOURCE,
    functions=["relu_forward"],
    extra_cflags=["-O3", "-fopenmp"],
    extra_ldflags=["-fopenmp"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self):
        super(ModelNew, self).__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return _ext.relu_forward(x)
