"""Honest OpenMP kernel for 7_RMSNorm: per-row mean of squares, reciprocal root and learned scale in one C++ pass."""
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

_CPP_SOURCE = r"""
#include <torch/extension.h>
#include <cmath>

torch::Tensor rms_norm_forward(torch::Tensor x, torch::Tensor weight, double eps) {
  TORCH_CHECK(x.scalar_type() == torch::kFloat32 && weight.scalar_type() == torch::kFloat32,
              "rms_norm_forward: expected float32");
  TORCH_CHECK(x.dim() >= 1 && weight.dim() == 1 && weight.size(0) == x.size(-1),
              "rms_norm_forward: weight must match the last dimension");
  torch::Tensor xc = x.contiguous();
  torch::Tensor wc = weight.contiguous();
  torch::Tensor y = torch::empty_like(xc);
  const int64_t cols = xc.size(-1);
  const int64_t rows = cols == 0 ? 0 : xc.numel() / cols;
  const float* px = xc.data_ptr<float>();
  const float* pw = wc.data_ptr<float>();
  float* py = y.data_ptr<float>();
  const float feps = static_cast<float>(eps);
#pragma omp parallel for schedule(static)
  for (int64_t r = 0; r < rows; ++r) {
    const float* src = px + r * cols;
    float* dst = py + r * cols;
    float sum_sq = 0.0f;
#pragma omp simd reduction(+ : sum_sq)
    for (int64_t c = 0; c < cols; ++c) sum_sq += src[c] * src[c];
    const float inv_rms = 1.0f / std::sqrt(sum_sq / static_cast<float>(cols) + feps);
#pragma omp simd
    for (int64_t c = 0; c < cols; ++c) dst[c] = src[c] * inv_rms * pw[c];
  }
  return y;
}
"""

_ext = load_inline(
    name="kgym_sample_rms_norm",
    cpp_sources=_CPP_SOURCE,
    functions=["rms_norm_forward"],
    extra_cflags=["-O3", "-fopenmp"],
    extra_ldflags=["-fopenmp"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self, num_features: int, eps: float = 1e-6):
        super(ModelNew, self).__init__()
        self.eps = eps
        # Same name as the reference; the harness loads the reference's values into it.
        self.weight = nn.Parameter(torch.ones(num_features))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return _ext.rms_norm_forward(x, self.weight, self.eps)
