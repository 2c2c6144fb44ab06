"""Deliberately wrong: OpenMP sum reduction with an off-by-one that skips the last element of the reduced dimension."""
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

_CPP_SOURCE = r"""
#include <torch/extension.h>

// Views x as (outer, reduced, inner) around `dim` and sums over `reduced`.
torch::Tensor sum_dim_forward(torch::Tensor x, int64_t dim) {
  TORCH_CHECK(x.scalar_type() == torch::kFloat32, "sum_dim_forward: expected float32");
  torch::Tensor xc = x.contiguous();
  if (dim < 0) dim += xc.dim();
  TORCH_CHECK(dim >= 0 && dim < xc.dim(), "sum_dim_forward: dim out of range");
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < dim; ++d) outer *= xc.size(d);
  for (int64_t d = dim + 1; d < xc.dim(); ++d) inner *= xc.size(d);
  const int64_t reduced = xc.size(dim);
  std::vector<int64_t> out_shape = xc.sizes().vec();
  out_shape[dim] = 1;
  torch::Tensor y = torch::zeros(out_shape, xc.options());
  const float* in = xc.data_ptr<float>();
  float* out = y.data_ptr<float>();
#pragma omp parallel for schedule(static)
  for (int64_t o = 0; o < outer; ++o) {
    float* dst = out + o * inner;
    // BUG (intended): "reduced - 1" leaves out the last slice.
    for (int64_t r = 0; r < reduced - 1; ++r) {
      const float* src = in + (o * reduced + r) * inner;
#pragma omp simd
      for (int64_t i = 0; i < inner; ++i) dst[i] += src[i];
    }
  }
  return y;
}
"""

_ext = load_inline(
    name="kgym_sample_sum_offbyone",
    cpp_sources=_CPP_SOURCE,
    functions=["sum_dim_forward"],
    extra_cflags=["-O3", "-fopenmp"],
    extra_ldflags=["-fopenmp"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self, dim: int):
        super(ModelNew, self).__init__()
        self.dim = dim

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return _ext.sum_dim_forward(x, self.dim)
