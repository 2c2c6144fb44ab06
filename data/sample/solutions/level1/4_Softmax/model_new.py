"""Honest OpenMP kernel for 4_Softmax: numerically stable row softmax (max, exp-sum, scale) in C++."""
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

_CPP_SOURCE = r"""
#include <torch/extension.h>
#include <cmath>

torch::Tensor softmax_lastdim_forward(torch::Tensor x) {
  TORCH_CHECK(x.scalar_type() == torch::kFloat32, "softmax_lastdim_forward: expected float32");
  TORCH_CHECK(x.dim() >= 1, "softmax_lastdim_forward: expected at least one dimension");
  torch::Tensor xc = x.contiguous();
  torch::Tensor y = torch::empty_like(xc);
  const int64_t cols = xc.size(-1);
  const int64_t rows = cols == 0 ? 0 : xc.numel() / cols;
  const float* in = xc.data_ptr<float>();
  float* out = y.data_ptr<float>();
#pragma omp parallel for schedule(static)
  for (int64_t r = 0; r < rows; ++r) {
    const float* src = in + r * cols;
    float* dst = out + r * cols;
    float row_max = -INFINITY;
#pragma omp simd reduction(max : row_max)
    for (int64_t c = 0; c < cols; ++c) row_max = src[c] > row_max ? src[c] : row_max;
    float total = 0.0f;
    for (int64_t c = 0; c < cols; ++c) {
      const float e = std::exp(src[c] - row_max);
      dst[c] = e;
      total += e;
    }
    const float inv_total = 1.0f / total;
#pragma omp simd
    for (int64_t c = 0; c < cols; ++c) dst[c] *= inv_total;
  }
  return y;
}
"""

_ext = load_inline(
    name="kgym_sample_softmax",
    cpp_sources=_CPP_SOURCE,
    functions=["softmax_lastdim_forward"],
    extra_cflags=["-O3", "-fopenmp"],
    extra_ldflags=["-fopenmp"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self):
        super(ModelNew, self).__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return _ext.softmax_lastdim_forward(x)
