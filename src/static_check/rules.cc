#include "static_check/rules.h"

#include <fmt/format.h>
#include <algorithm>

#include "core/backend.h"
#include "static_check/rule_context.h"

namespace kgym::static_check {

std::string Finding::evidence() const {
  return line > 0 ? fmt::format("{}:{}: {}", file, line, token) : fmt::format("{}: {}", file, token);
}

const Finding* first_fatal(const std::vector<Finding>& findings) {
  auto it = std::ranges::find_if(findings, [](const Finding& f) { return f.fatal(); });
  return it == findings.end() ? nullptr : &*it;
}

namespace {

bool is_library_root(const std::string& dotted) {
  static const std::vector<std::string> kRoots = {"torch.", "F.", "nn.", "functional.", "np.", "numpy."};
  return std::ranges::any_of(kRoots, [&](const std::string& r) { return dotted.starts_with(r); });
}

// The first library call (torch.relu, F.gelu, ...) in the forward of ModelNew, for the message.
std::optional<std::pair<int, std::string>> library_call_in_forward(const RuleContext& ctx) {
  auto fwd = find_def(ctx.src, ctx.model_begin, ctx.model_end, "forward");
  if (!fwd) return std::nullopt;
  for (std::size_t li = *fwd + 1; li < block_end(ctx.src, *fwd); ++li) {
    const auto& t = ctx.src.lines[li].tokens;
    for (std::size_t i = 0; i < t.size(); ++i) {
      std::size_t end = i;
      std::string name = dotted_name(t, i, &end);
      if (name.empty() || (i > 0 && is_op(t[i - 1], ".")) || end >= t.size() || !is_op(t[end], "(")) continue;
      if (is_library_root(name)) return std::pair{t[i].line, name};
      // A renamed import: `import torch.nn.functional as F2` ... `F2.relu(x)`.
      if (std::string resolved = resolve_import(ctx.src, name);
          resolved != name && is_library_root(resolved)) {
        return std::pair{t[i].line, fmt::format("{} ({})", name, resolved)};
      }
    }
  }
  return std::nullopt;
}

// Does any line of ModelNew other than the build itself use the built extension?
bool used_by_model(const RuleContext& ctx, const ExtensionBuild& b) {
  if (b.bound_to.empty()) return true;  // bound in a way not followed here; the runtime trace decides
  for (std::size_t li = ctx.model_begin; li < ctx.model_end; ++li) {
    if (li == b.line_index) continue;
    for (const Token& t : ctx.src.lines[li].tokens) {
      if (is_name(t, b.bound_to)) return true;
    }
  }
  return false;
}

bool has_decorator(const PythonSource& src, std::string_view module, std::string_view attr) {
  for (const auto& l : src.lines) {
    const auto& t = l.tokens;
    if (!is_op(t[0], "@")) continue;
    std::string name = dotted_name(t, 1);
    if (name == fmt::format("{}.{}", module, attr) || name.starts_with(fmt::format("{}.{}", module, attr)) ||
        (name == attr && src.imported_names.contains(std::string(attr)))) {
      return true;
    }
  }
  return false;
}

// load_inline sources that count as the backend's own kernel.
bool inline_kernel(const CppScan& scan, const Backend& backend) {
  if (!backend.runs_inline_kernels) return false;
  return backend.inline_needs_global ? scan.has_cuda_kernel : scan.has_function_body;
}

// A function decorated as one of the backend's kernels (@triton.jit, @pypto.jit).
bool has_kernel_decorator(const PythonSource& src, const Backend& backend) {
  return std::ranges::any_of(backend.decorators, [&](const KernelDecorator& d) {
    return has_decorator(src, d.module, d.name);
  });
}

}  // namespace

void check_model_and_kernel(RuleContext& ctx) {
  auto cls = find_class(ctx.src, "ModelNew");
  if (!cls) {
    ctx.add("static.no_model_new", kFatal, 0, "ModelNew", "the file defines no class ModelNew");
    return;
  }
  ctx.model_begin = *cls;
  ctx.model_end = block_end(ctx.src, *cls);

  const Backend& backend = backend_named(ctx.options.backend, ctx.options.execution);
  bool kernel = false;
  std::string missing(backend.no_kernel);
  for (const auto& b : ctx.builds) {
    bool real = b.file_sources && backend.runs_inline_kernels;
    for (const auto& s : b.sources) real = real || inline_kernel(s.scan, backend);
    if (!real) {
      missing = backend.no_inline_kernel;
    } else if (!used_by_model(ctx, b)) {
      missing = fmt::format("the extension '{}' is built but never used by ModelNew", b.bound_to);
    } else {
      kernel = true;
    }
  }
  if (has_kernel_decorator(ctx.src, backend)) {
    // A decorated kernel counts once something launches it.
    auto kernels = decorated_kernels(ctx.src);
    if (kernels.empty() || std::ranges::any_of(kernels, [](const DecoratedKernel& k) { return k.launched; })) {
      kernel = true;
    } else {
      missing = fmt::format("the kernel '{}' is defined but never launched", kernels.front().name);
    }
  }
  if (kernel) return;
  if (auto call = library_call_in_forward(ctx)) {
    ctx.add("static.no_kernel", kFatal, call->first, call->second,
            fmt::format("forward calls {} and {}", call->second, missing));
  } else {
    ctx.add("static.no_kernel", kFatal, ctx.src.lines[*cls].line, "ModelNew",
            fmt::format("ModelNew has no kernel of its own: {}", missing));
  }
}

void check_reference_import(RuleContext& ctx) {
  for (const auto& l : ctx.src.lines) {
    const auto& t = l.tokens;
    bool import_line = is_name(t[0], "import") || is_name(t[0], "from");
    for (std::size_t i = 0; i < t.size(); ++i) {
      if (is_name(t[i], "task_desc") || is_name(t[i], "reference")) {
        if (is_name(t[i], "reference") && !import_line) continue;
        ctx.add("static.reference_import", kFatal, t[i].line, t[i].text,
                "the candidate imports the reference problem module");
      } else if (import_line && is_name(t[i], "Model") && i > 0 && !is_op(t[i - 1], ".")) {
        ctx.add("static.reference_import", kFatal, t[i].line, "import Model",
                "the candidate imports the reference Model");
      } else if ((is_name(t[i], "__import__") || is_name(t[i], "import_module")) && i + 2 < t.size() &&
                 t[i + 2].kind == TokenKind::kString &&
                 (t[i + 2].text.find("task_desc") != std::string::npos ||
                  t[i + 2].text.find("reference") != std::string::npos)) {
        ctx.add("static.reference_import", kFatal, t[i].line, t[i].text + "(" + t[i + 2].text + ")",
                "the candidate imports the reference problem module dynamically");
      }
    }
    // class ModelNew(Model) / class ModelNew(task_desc.Model)
    if (t.size() > 3 && is_name(t[0], "class") && is_name(t[1], "ModelNew") && is_op(t[2], "(")) {
      std::size_t close = closing_bracket(t, 2);
      for (std::size_t i = 3; i < close; ++i) {
        if (is_name(t[i], "Model")) {
          ctx.add("static.reference_import", kFatal, t[i].line, "class ModelNew(Model)",
                  "ModelNew subclasses the reference Model and inherits its forward");
        }
      }
    }
  }
}

void check_cpp_sources(RuleContext& ctx) {
  for (const auto& b : ctx.builds) {
    for (const auto& s : b.sources) {
      for (const auto& hit : s.scan.library_calls) {
        ctx.add("static.cpp_library_call", kFatal, s.first_line + hit.line - 1, hit.name,
                fmt::format("the C++ source calls the library op {} instead of computing it", hit.name));
      }
      // Work on another stream than the current one finishes after the
      // timer's event on the current stream; unless the source waits for it,
      // forward returns early and the time is short.
      for (const auto& hit : s.scan.side_streams) {
        ctx.add("static.side_stream", s.scan.synchronizes ? kWarn : kFatal, s.first_line + hit.line - 1, hit.name,
                s.scan.synchronizes
                    ? fmt::format("the C++ source uses {}; its work must be waited for before forward returns",
                                  hit.name)
                    : fmt::format("the C++ source launches work on a side stream ({}) and never waits for it: "
                                  "forward returns before the work finishes",
                                  hit.name));
      }
      for (const auto& hit : s.scan.introspection) {
        ctx.add("static.introspection", kFatal, s.first_line + hit.line - 1, hit.name,
                fmt::format("the C++ source uses {}: it reads or switches the dispatcher's or profiler's "
                            "state (whether the op trace is watching, or a way below it) or reaches into the "
                            "Python interpreter (the worker's clock and timing code)",
                            hit.name));
      }
      if (!ctx.problem_is_float32) continue;
      for (const auto& hit : s.scan.reduced_precision) {
        ctx.add("static.precision_downgrade", kWarn, s.first_line + hit.line - 1, hit.name,
                fmt::format("the C++ source uses {} on a float32 problem", hit.name));
      }
    }
  }
}

std::vector<std::string> problem_dtypes(std::string_view problem_source) {
  static const std::vector<std::string> kDtypes = {"float16", "half", "bfloat16", "float64", "double"};
  std::vector<std::string> found;
  PythonSource src = parse_python(problem_source);
  for (const auto& l : src.lines) {
    for (std::size_t i = 1; i < l.tokens.size(); ++i) {
      const Token& t = l.tokens[i];
      if (t.kind != TokenKind::kName || !is_op(l.tokens[i - 1], ".")) continue;
      if (std::ranges::find(kDtypes, t.text) == kDtypes.end()) continue;
      std::string canonical = t.text == "half" ? "float16" : t.text == "double" ? "float64" : t.text;
      if (std::ranges::find(found, canonical) == found.end()) found.push_back(canonical);
    }
  }
  if (found.empty()) found.push_back("float32");
  return found;
}

bool defines_kernel(const PythonSource& src, const std::vector<ExtensionBuild>& builds,
                    const Backend& backend) {
  for (const auto& b : builds) {
    if (b.file_sources && backend.runs_inline_kernels) return true;
    for (const auto& s : b.sources) {
      if (inline_kernel(s.scan, backend)) return true;
    }
  }
  return has_kernel_decorator(src, backend);
}

std::vector<Finding> check_candidate(std::string_view source, std::string_view file_name,
                                     const CheckOptions& options) {
  std::vector<Finding> findings = check_source(source, file_name, options, true);
  std::ranges::stable_sort(findings, [](const Finding& a, const Finding& b) {
    if (a.fatal() != b.fatal()) return a.fatal();
    return a.line < b.line;
  });
  return findings;
}

std::vector<Finding> check_source(std::string_view source, std::string_view file_name,
                                  const CheckOptions& options, bool defines_model) {
  std::vector<Finding> findings;
  PythonSource src = parse_python(source);
  RuleContext ctx{src, options, std::string(file_name), &findings, find_extension_builds(src)};
  auto f32 = [](const std::vector<std::string>& v) {
    return std::ranges::all_of(v, [](const std::string& d) { return d == "float32" || d == "float"; });
  };
  ctx.problem_is_float32 = f32(options.input_dtypes) && f32(options.output_dtypes);
  if (src.error) {
    ctx.add("static.syntax", kWarn, src.error->line, "tokenize", src.error->message);
  }
  if (defines_model) check_model_and_kernel(ctx);
  check_reference_import(ctx);
  check_cpp_sources(ctx);
  check_try_fallback(ctx);
  check_host_compute(ctx);
  check_kernel_bodies(ctx);
  check_monkeypatch(ctx);
  check_concurrency_and_introspection(ctx);
  check_frame_attributes(ctx);
  check_computed_torch_names(ctx);
  check_file_access(ctx);
  check_env_switch(ctx);
  check_precision(ctx);
  return findings;
}

}  // namespace kgym::static_check
