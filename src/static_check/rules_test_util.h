#pragma once
// Shared by the static_check rule tests: an honest cpu candidate to vary and
// short descriptions of findings.
#include <string>
#include <vector>

#include "static_check/rules.h"

namespace kgym::static_check::testing {

// An honest load_inline ReLU; `extra_module` goes after the imports,
// `forward_body` replaces the body of forward (8-space indented lines).
inline std::string candidate(std::string extra_module = "",
                             std::string forward_body = "        return _ext.relu_forward(x)\n") {
  return "\"\"\"A candidate.\"\"\"\n"
         "import torch\n"
         "import torch.nn as nn\n"
         "from torch.utils.cpp_extension import load_inline\n" +
         extra_module +
         "\n_SRC = r\"\"\"\n"
         "#include <torch/extension.h>\n"
         "torch::Tensor relu_forward(torch::Tensor x) {\n"
         "  auto y = torch::empty_like(x);\n"
         "  const float* in = x.data_ptr<float>();\n"
         "  float* out = y.data_ptr<float>();\n"
         "  for (int64_t i = 0; i < x.numel(); ++i) out[i] = in[i] < 0 ? 0 : in[i];\n"
         "  return y;\n"
         "}\n"
         "\"\"\"\n"
         "_ext = load_inline(name=\"relu\", cpp_sources=_SRC, functions=[\"relu_forward\"])\n"
         "\n"
         "class ModelNew(nn.Module):\n"
         "    def forward(self, x):\n" +
         forward_body;
}

// "rule/severity@line" per finding.
inline std::vector<std::string> describe(const std::vector<Finding>& findings) {
  std::vector<std::string> out;
  for (const auto& f : findings) out.push_back(f.rule + "/" + f.severity + "@" + std::to_string(f.line));
  return out;
}

inline std::vector<std::string> check(const std::string& source, CheckOptions options = {}) {
  return describe(check_candidate(source, "model_new.py", options));
}

// Findings of one rule only.
inline std::vector<std::string> check_rule(const std::string& source, std::string_view rule,
                                           CheckOptions options = {}) {
  std::vector<std::string> out;
  for (const auto& f : check_candidate(source, "model_new.py", options)) {
    if (f.rule == rule) out.push_back(f.severity + "@" + std::to_string(f.line) + ":" + f.token);
  }
  return out;
}

}  // namespace kgym::static_check::testing
