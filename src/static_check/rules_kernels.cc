// Rules about where a candidate's numbers are computed (docs/anti-cheat.md):
// tensor data taken out of torch into host Python or numpy
// (static.host_compute), and a decorated kernel whose body runs something
// other than its language (static.kernel_body). Both matter most on a host
// interpreter, where a @triton.jit body is plain Python and numpy is out of
// the op trace's sight, but hold on every backend.
#include <fmt/format.h>

#include <algorithm>
#include <set>

#include "static_check/rule_context.h"

namespace kgym::static_check {
namespace {

// Methods that hand a tensor's data to host Python or numpy.
const std::set<std::string, std::less<>> kHostMethods = {
    "numpy", "tolist", "__array__", "__dlpack__", "untyped_storage", "storage", "_typed_storage"};

// Functions that make or read arrays from tensor memory (after resolving
// import aliases: np.asarray -> numpy.asarray).
constexpr std::string_view kHostFunctions[] = {
    "torch.from_numpy", "torch.from_dlpack", "torch.utils.dlpack", "torch.frombuffer", "numpy.asarray",
    "numpy.asanyarray", "numpy.array",       "numpy.ascontiguousarray", "numpy.frombuffer", "numpy.from_dlpack",
    "memoryview"};

// Each kernel decorator of every backend: a body under any of them is a kernel.
bool kernel_decorator_line(const PythonSource& src, const LogicalLine& l, std::string* decorator) {
  if (!is_op(l.tokens[0], "@")) return false;
  std::string name = resolve_import(src, dotted_name(l.tokens, 1));
  for (const Backend& b : all_backends()) {
    for (const KernelDecorator& d : b.decorators) {
      std::string full = fmt::format("{}.{}", d.module, d.name);
      if (name == full || name.starts_with(full + "(") || name.starts_with(full + ".")) {
        *decorator = full;
        return true;
      }
    }
  }
  return false;
}

// Module-level functions defined without a kernel decorator (helpers a
// kernel body must not call: they run as plain Python).
std::set<std::string> plain_functions(const PythonSource& src) {
  std::set<std::string> out;
  for (std::size_t li = 0; li < src.lines.size(); ++li) {
    const auto& t = src.lines[li].tokens;
    if (src.lines[li].depth != 0 || !is_name(t[0], "def") || t.size() < 2) continue;
    std::string decorator;
    bool decorated = li > 0 && kernel_decorator_line(src, src.lines[li - 1], &decorator);
    if (!decorated) out.insert(t[1].text);
  }
  return out;
}

}  // namespace

std::vector<DecoratedKernel> decorated_kernels(const PythonSource& src) {
  std::vector<DecoratedKernel> kernels;
  for (std::size_t li = 0; li + 1 < src.lines.size(); ++li) {
    std::string decorator;
    if (!kernel_decorator_line(src, src.lines[li], &decorator)) continue;
    std::size_t def = li + 1;
    while (def < src.lines.size() && is_op(src.lines[def].tokens[0], "@")) ++def;
    if (def >= src.lines.size() || !is_name(src.lines[def].tokens[0], "def") || src.lines[def].tokens.size() < 2)
      continue;
    DecoratedKernel k{src.lines[def].tokens[1].text, decorator, def, block_end(src, def)};
    for (std::size_t other = 0; other < src.lines.size() && !k.launched; ++other) {
      if (other == def) continue;
      for (const Token& t : src.lines[other].tokens) {
        if (is_name(t, k.name)) k.launched = true;
      }
    }
    kernels.push_back(std::move(k));
    li = def;
  }
  return kernels;
}

void check_host_compute(RuleContext& ctx) {
  for (const auto& l : ctx.src.lines) {
    const auto& t = l.tokens;
    for (std::size_t i = 1; i + 1 < t.size(); ++i) {
      if (t[i].kind == TokenKind::kName && is_op(t[i - 1], ".") && is_op(t[i + 1], "(") &&
          kHostMethods.contains(t[i].text)) {
        ctx.add("static.host_compute", kFatal, t[i].line, "." + t[i].text + "()",
                fmt::format(".{}() hands tensor data to host Python or numpy, where compute escapes the op "
                            "trace; the outputs must come from your kernel",
                            t[i].text));
      }
    }
    for (std::size_t i = 0; i < t.size(); ++i) {
      if (t[i].kind != TokenKind::kName || (i > 0 && is_op(t[i - 1], "."))) continue;
      std::string name = dotted_name(t, i);
      std::string resolved = resolve_import(ctx.src, name);
      if (resolved.starts_with("np.")) resolved = "numpy." + resolved.substr(3);
      for (std::string_view f : kHostFunctions) {
        if (resolved == f || resolved.starts_with(std::string(f) + ".")) {
          ctx.add("static.host_compute", kFatal, t[i].line, name,
                  fmt::format("{} moves tensor data between torch and host arrays, where compute escapes the "
                              "op trace; the outputs must come from your kernel",
                              name));
          break;
        }
      }
    }
  }
}

void check_kernel_bodies(RuleContext& ctx) {
  std::set<std::string> plain = plain_functions(ctx.src);
  for (const DecoratedKernel& k : decorated_kernels(ctx.src)) {
    // The language's own module ("triton", "pypto") and its aliases (tl).
    std::string language = k.decorator.substr(0, k.decorator.find('.'));
    for (std::size_t li = k.def_line + 1; li < k.body_end; ++li) {
      const auto& t = ctx.src.lines[li].tokens;
      if (is_name(t[0], "import") || is_name(t[0], "from")) {
        ctx.add("static.kernel_body", kFatal, t[0].line, t[0].text,
                fmt::format("the kernel {} imports a module: a kernel body may use only {}", k.name, language));
        continue;
      }
      for (std::size_t i = 0; i < t.size(); ++i) {
        if (t[i].kind != TokenKind::kName || (i > 0 && is_op(t[i - 1], "."))) continue;
        std::string name = dotted_name(t, i);
        std::string root = name.substr(0, name.find('.'));
        std::string resolved = resolve_import(ctx.src, name);
        bool foreign_module = ctx.src.imported_names.contains(root) && !resolved.starts_with(language);
        bool helper_call = plain.contains(root) && i + 1 < t.size() && is_op(t[i + 1], "(");
        if (foreign_module || helper_call) {
          ctx.add("static.kernel_body", kFatal, t[i].line, name,
                  fmt::format("the kernel {} calls {}, which is not {}: under an interpreter its body runs as "
                              "plain Python, so only the kernel language may compute there",
                              k.name, name, language));
        }
      }
    }
  }
}

}  // namespace kgym::static_check
