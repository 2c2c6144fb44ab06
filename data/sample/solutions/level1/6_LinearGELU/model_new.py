"""Honest OpenMP kernel for 6_LinearGELU: fused x @ W^T + b and exact erf GELU in C++, using the loaded nn.Linear parameters."""
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

_CPP_SOURCE = r"""
#include <torch/extension.h>
#include <cmath>

namespace {
inline float gelu_exact(float v) {
  return 0.5f * v * (1.0f + std::erf(v * 0.70710678118654752f));
}
}

// x: (B, in), weight: (out, in) as stored by nn.Linear, bias: (out).
torch::Tensor linear_gelu_forward(torch::Tensor x, torch::Tensor weight, torch::Tensor bias) {
  TORCH_CHECK(x.scalar_type() == torch::kFloat32 && weight.scalar_type() == torch::kFloat32 &&
                  bias.scalar_type() == torch::kFloat32,
              "linear_gelu_forward: expected float32");
  TORCH_CHECK(x.dim() == 2 && weight.dim() == 2 && x.size(1) == weight.size(1) &&
                  bias.dim() == 1 && bias.size(0) == weight.size(0),
              "linear_gelu_forward: shape mismatch");
  torch::Tensor xc = x.contiguous();
  torch::Tensor wc = weight.contiguous();
  torch::Tensor bc = bias.contiguous();
  const int64_t rows = xc.size(0), in_f = xc.size(1), out_f = wc.size(0);
  torch::Tensor y = torch::empty({rows, out_f}, xc.options());
  const float* px = xc.data_ptr<float>();
  const float* pw = wc.data_ptr<float>();
  const float* pb = bc.data_ptr<float>();
  float* py = y.data_ptr<float>();
#pragma omp parallel for schedule(static)
  for (int64_t r = 0; r < rows; ++r) {
    const float* xr = px + r * in_f;
    float* yr = py + r * out_f;
    int64_t o = 0;
    // four output features at a time: each x element is loaded once per four dot products
    for (; o + 4 <= out_f; o += 4) {
      const float* w0 = pw + (o + 0) * in_f;
      const float* w1 = pw + (o + 1) * in_f;
      const float* w2 = pw + (o + 2) * in_f;
      const float* w3 = pw + (o + 3) * in_f;
      float s0 = 0.0f, s1 = 0.0f, s2 = 0.0f, s3 = 0.0f;
#pragma omp simd reduction(+ : s0, s1, s2, s3)
      for (int64_t k = 0; k < in_f; ++k) {
        const float xv = xr[k];
        s0 += xv * w0[k];
        s1 += xv * w1[k];
        s2 += xv * w2[k];
        s3 += xv * w3[k];
      }
      yr[o + 0] = gelu_exact(s0 + pb[o + 0]);
      yr[o + 1] = gelu_exact(s1 + pb[o + 1]);
      yr[o + 2] = gelu_exact(s2 + pb[o + 2]);
      yr[o + 3] = gelu_exact(s3 + pb[o + 3]);
    }
    for (; o < out_f; ++o) {
      const float* w = pw + o * in_f;
      float s = 0.0f;
#pragma omp simd reduction(+ : s)
      for (int64_t k = 0; k < in_f; ++k) s += xr[k] * w[k];
      yr[o] = gelu_exact(s + pb[o]);
    }
  }
  return y;
}
"""

_ext = load_inline(
    name="kgym_sample_linear_gelu",
    cpp_sources=_CPP_SOURCE,
    functions=["linear_gelu_forward"],
    extra_cflags=["-O3", "-fopenmp"],
    extra_ldflags=["-fopenmp"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self, in_features: int, out_features: int):
        super(ModelNew, self).__init__()
        # Same attribute name as the reference, so its state_dict (linear.weight, linear.bias) loads.
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return _ext.linear_gelu_forward(x, self.linear.weight, self.linear.bias)
