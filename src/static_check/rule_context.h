#pragma once
// Internal to static_check/: what the rule families share while checking one
// candidate.
#include <string>
#include <vector>

#include "core/backend.h"
#include "static_check/cpp_scan.h"
#include "static_check/python_source.h"
#include "static_check/rules.h"

namespace kgym::static_check {

// One load_inline / cpp_extension.load call and what it was given.
struct ExtensionBuild {
  std::size_t line_index = 0;
  std::string bound_to;       // the name the result is assigned to ("_ext"), or ""
  bool file_sources = false;  // cpp_extension.load(sources=[files]): not scannable here
  struct Source {
    int first_line = 0;  // file line of the first body line of the string
    CppScan scan;
  };
  std::vector<Source> sources;
};

struct RuleContext {
  const PythonSource& src;
  const CheckOptions& options;
  std::string file;
  std::vector<Finding>* out;
  std::vector<ExtensionBuild> builds;
  std::size_t model_begin = 0;  // lines of class ModelNew: [model_begin, model_end)
  std::size_t model_end = 0;
  bool problem_is_float32 = true;

  void add(std::string_view rule, std::string_view severity, int line, std::string token,
           std::string message) const {
    out->push_back(
        Finding{std::string(rule), std::string(severity), file, line, std::move(token), std::move(message)});
  }
};

std::vector<ExtensionBuild> find_extension_builds(const PythonSource& src);

// The checks of one file: `defines_model` runs the ModelNew and kernel rules
// (the candidate), false skips them (a sibling module). Unsorted.
std::vector<Finding> check_source(std::string_view source, std::string_view file_name,
                                  const CheckOptions& options, bool defines_model);

// Does the file define a kernel of its own: a load_inline / load build with
// real sources, or a triton.jit (cuda) / pypto.jit (npu) function?
bool defines_kernel(const PythonSource& src, const std::vector<ExtensionBuild>& builds,
                    const Backend& backend);

// A function under a kernel decorator (@triton.jit, @pypto.frontend.jit)
// and whether the file names it anywhere but its own def (a launch).
struct DecoratedKernel {
  std::string name;
  std::string decorator;  // "triton.jit"
  std::size_t def_line = 0;
  std::size_t body_end = 0;
  bool launched = false;
};
std::vector<DecoratedKernel> decorated_kernels(const PythonSource& src);

// Rule families (rules.cc: model, kernel, reference, C++; rules_kernels.cc:
// host compute and kernel bodies; rules_behaviour.cc: the rest).
void check_model_and_kernel(RuleContext& ctx);
void check_reference_import(RuleContext& ctx);
void check_cpp_sources(RuleContext& ctx);
void check_try_fallback(RuleContext& ctx);
void check_host_compute(RuleContext& ctx);
void check_kernel_bodies(RuleContext& ctx);
void check_monkeypatch(RuleContext& ctx);
void check_concurrency_and_introspection(RuleContext& ctx);
void check_frame_attributes(RuleContext& ctx);
void check_computed_torch_names(RuleContext& ctx);
void check_file_access(RuleContext& ctx);
void check_env_switch(RuleContext& ctx);
void check_precision(RuleContext& ctx);

}  // namespace kgym::static_check
