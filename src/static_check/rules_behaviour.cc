// Rule families about what the candidate's Python does besides computing:
// fallbacks, monkeypatching, concurrency, introspection, files, environment
// switches and precision (the model/kernel/reference families are in rules.cc).
#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <set>

#include "static_check/rule_context.h"

namespace kgym::static_check {
namespace {

using NameSet = std::set<std::string, std::less<>>;

// Statements an honest except branch may hold without re-raising.
const NameSet kHarmlessHandlerStarts = {"pass", "print",     "logging", "logger",   "log",  "warnings",
                                        "sys",  "traceback", "del",     "continue", "break"};

bool is_literal_assignment(const std::vector<Token>& t) {
  // `name = None` / `name = False` / `name = 0`: a feature flag, not a result.
  return t.size() == 3 && t[0].kind == TokenKind::kName && is_op(t[1], "=") &&
         (t[2].kind == TokenKind::kNumber || is_name(t[2], "None") || is_name(t[2], "False") ||
          is_name(t[2], "True"));
}

// Each call of `fn(`-style dotted names in the line: (token index, dotted name).
std::vector<std::pair<std::size_t, std::string>> dotted_names(const std::vector<Token>& t) {
  std::vector<std::pair<std::size_t, std::string>> out;
  for (std::size_t i = 0; i < t.size(); ++i) {
    if (t[i].kind != TokenKind::kName || (i > 0 && is_op(t[i - 1], "."))) continue;
    std::size_t end = i;
    out.emplace_back(i, dotted_name(t, i, &end));
  }
  return out;
}

// A name below torch's private C bindings, or its mode utilities, that
// switches dispatch or the tracing modes off, reads them, or calls an op
// below some dispatch keys (`no_dispatch`, `_DisableTorchDispatch`,
// `DisableTorchFunction`, `_ExcludeDispatchKeyGuard`, `_dispatch_*`, the
// mode stacks, `redispatch`): the op trace is a dispatch mode, so each is a
// way past it. The family, not a list: any component naming dispatch,
// torch functions or modes.
bool python_switches_dispatch(std::string_view resolved) {
  if (resolved.starts_with("torch.utils._mode_utils") || resolved.starts_with("torch._dispatch") ||
      resolved.starts_with("torch._python_dispatcher"))
    return true;
  std::size_t last = resolved.rfind('.');
  std::string_view leaf = last == std::string_view::npos ? resolved : resolved.substr(last + 1);
  if (leaf == "redispatch" || leaf == "redispatch_boxed") return true;
  if (!resolved.starts_with("torch._C.") && !resolved.starts_with("torch._ops.") && resolved != "torch._C") return false;
  std::string lower;
  for (char c : resolved) lower.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
  for (std::string_view word : {"dispatch", "torch_function", "torchfunction", "_mode", "pythontls"}) {
    if (lower.find(word) != std::string::npos) return true;
  }
  return false;
}

bool starts_with_any(std::string_view name, std::initializer_list<std::string_view> prefixes) {
  for (auto p : prefixes) {
    if (name == p ||
        (name.starts_with(p) && name.size() > p.size() && (name[p.size()] == '.' || p.back() == '.'))) {
      return true;
    }
  }
  return false;
}

}  // namespace

void check_try_fallback(RuleContext& ctx) {
  const auto& lines = ctx.src.lines;
  for (std::size_t li = 0; li < lines.size(); ++li) {
    const auto& t = lines[li].tokens;
    if (is_name(t[0], "with") && dotted_names(t).size() > 1 &&
        dotted_names(t)[1].second == "contextlib.suppress") {
      ctx.add("static.try_fallback", kWarn, t[0].line, "contextlib.suppress",
              "errors are silently suppressed");
    }
    if (!is_name(t[0], "except")) continue;
    // The handler's statements: an inline body after ':' and the indented
    // block, split at ';'.
    std::vector<std::vector<Token>> body;
    auto add_statements = [&body](const std::vector<Token>& toks, std::size_t from) {
      std::vector<Token> stmt;
      for (std::size_t k = from; k <= toks.size(); ++k) {
        if (k == toks.size() || is_op(toks[k], ";")) {
          if (!stmt.empty()) body.push_back(std::move(stmt));
          stmt.clear();
        } else {
          stmt.push_back(toks[k]);
        }
      }
    };
    add_statements(t, header_colon(t, 1) + 1);
    for (std::size_t k = li + 1; k < block_end(ctx.src, li); ++k) add_statements(lines[k].tokens, 0);
    bool reraises = false;
    const Token* returns = nullptr;
    const Token* computing = nullptr;
    for (const auto& stmt : body) {
      for (const Token& tok : stmt) {
        reraises = reraises || is_name(tok, "raise");
        if (!returns && (is_name(tok, "return") || is_name(tok, "yield"))) returns = &tok;
      }
      if (!computing && !kHarmlessHandlerStarts.contains(stmt[0].text) && !is_literal_assignment(stmt)) {
        computing = &stmt[0];
      }
    }
    const Token* culprit = returns ? returns : reraises ? nullptr : computing;
    if (!culprit) continue;
    ctx.add("static.try_fallback", kFatal, culprit->line, culprit->text,
            fmt::format("the except branch of line {} computes a result instead of re-raising", t[0].line));
  }
}

void check_monkeypatch(RuleContext& ctx) {
  NameSet roots = {"torch",  "time",      "builtins",  "sys",     "os",        "gc",
                   "math",   "numpy",     "np",        "F",       "nn",        "triton",
                   "random", "functools", "importlib", "inspect", "threading", "timeit"};
  for (const auto& n : ctx.src.imported_names) roots.insert(n);
  for (const auto& l : ctx.src.lines) {
    const auto& t = l.tokens;
    // <root>.attr[...]... = value  (also augmented assignment)
    if (t[0].kind == TokenKind::kName && roots.contains(t[0].text) && t.size() > 2 &&
        (is_op(t[1], ".") || is_op(t[1], "["))) {
      std::size_t i = 1;
      while (i < t.size()) {
        if (is_op(t[i], ".") && i + 1 < t.size()) {
          i += 2;
        } else if (is_op(t[i], "[")) {
          i = closing_bracket(t, i) + 1;
        } else {
          break;
        }
      }
      bool assigns = i < t.size() && t[i].kind == TokenKind::kOp && t[i].text.ends_with("=") &&
                     t[i].text != "==" && t[i].text != "<=" && t[i].text != ">=" && t[i].text != "!=";
      if (assigns) {
        std::string target;
        for (std::size_t k = 0; k < i; ++k) target += t[k].text;
        // torch.backends.* are the library's own tuning switches (cudnn.benchmark, ...).
        bool setting = target.starts_with("torch.backends.");
        ctx.add("static.monkeypatch", setting ? kWarn : kFatal, t[0].line, target,
                setting
                    ? fmt::format("sets the library switch {}", target)
                    : fmt::format("assigns to {}, replacing part of a module the harness relies on", target));
      }
    }
    for (std::size_t i = 0; i + 2 < t.size(); ++i) {
      if (!(is_name(t[i], "setattr") || is_name(t[i], "delattr")) || !is_op(t[i + 1], "(")) continue;
      std::string target = dotted_name(t, i + 2);
      if (!target.empty() && roots.contains(target.substr(0, target.find('.')))) {
        ctx.add("static.monkeypatch", kFatal, t[i].line, fmt::format("{}({}", t[i].text, target),
                fmt::format("{} on the module {}", t[i].text, target));
      }
    }
    for (const Token& tok : t) {
      if (is_name(tok, "builtins")) {
        ctx.add("static.monkeypatch", kFatal, tok.line, tok.text, "touches the interpreter's builtins");
      }
    }
  }
}

void check_concurrency_and_introspection(RuleContext& ctx) {
  for (const auto& l : ctx.src.lines) {
    const auto& t = l.tokens;
    bool import_line = is_name(t[0], "import") || is_name(t[0], "from");
    for (const auto& [i, name] : dotted_names(t)) {
      int line = t[i].line;
      if ((import_line || name.find('.') != std::string::npos) &&
          starts_with_any(
              name, {"threading", "_thread", "multiprocessing", "subprocess", "socket", "ctypes", "cffi",
                     "concurrent", "asyncio", "signal", "selectors", "pty", "torch.multiprocessing"})) {
        ctx.add("static.concurrency", kFatal, line, name,
                fmt::format("{}: threads, processes, sockets, signals or foreign calls are not allowed in a "
                            "candidate",
                            name));
      } else if (starts_with_any(name, {"os.fork", "os.forkpty", "os.system", "os.popen", "os.kill",
                                        "os.posix_spawn", "os.posix_spawnp"}) ||
                 name.starts_with("os.spawn") || name.starts_with("os.exec")) {
        ctx.add("static.concurrency", kFatal, line, name,
                fmt::format("{} starts or signals a process", name));
      } else if (starts_with_any(name, {"torch.cuda.Stream", "torch.cuda.stream"})) {
        ctx.add("static.concurrency", kWarn, line, name,
                "work on a side stream must be synchronised before forward returns");
      } else if ((import_line && starts_with_any(name, {"inspect"})) || name.starts_with("inspect.") ||
                 starts_with_any(name,
                                 {"sys._getframe", "sys._current_frames", "sys.modules", "sys.settrace",
                                  "sys.setprofile", "gc.get_objects", "gc.get_referrers", "gc.get_referents",
                                  "importlib", "__import__", "__builtins__", "globals", "locals", "vars"})) {
        bool mild = name == "globals" || name == "locals" || name == "vars";
        ctx.add("static.introspection", mild ? kWarn : kFatal, line, name,
                fmt::format("{} reaches into the interpreter's frames, modules or objects", name));
      } else if (starts_with_any(
                     resolve_import(ctx.src, name),
                     {"torch.utils._python_dispatch", "torch._C._get_torch_dispatch_mode",
                      "torch._C._len_torch_dispatch_stack", "torch._C._get_dispatch_stack_at",
                      "torch._C._is_torch_function_mode_enabled", "torch._C._get_function_stack_at",
                      "torch.overrides._get_current_function_mode", "torch._C._dispatch_tls",
                      "torch.autograd.profiler", "torch.profiler", "torch._C._autograd", "torch._C._profiler",
                      "torch.autograd._profiler_enabled", "torch._C._is_any_autocast_enabled"})) {
        // The runtime op trace is a dispatch mode; asking for one is asking
        // whether the ops are being watched.
        ctx.add("static.introspection", kFatal, line, name,
                fmt::format("{} inspects the dispatcher's modes or the profiler (whether its ops are being "
                            "traced)",
                            name));
      } else if (python_switches_dispatch(resolve_import(ctx.src, name))) {
        ctx.add("static.introspection", kFatal, line, name,
                fmt::format("{} switches the dispatcher's modes or keys (the op trace is one) or calls below "
                            "them",
                            name));
      }
    }
  }
}

// getattr(X, NAME) where X is torch or below it and NAME is anything but
// one string literal: a name of torch's computed at run time ("_Disable" +
// "TorchDispatch"), which no rule here can read. Honest code names what it
// uses.
void check_computed_torch_names(RuleContext& ctx) {
  for (const auto& l : ctx.src.lines) {
    const auto& t = l.tokens;
    for (std::size_t i = 0; i + 2 < t.size(); ++i) {
      if (!is_name(t[i], "getattr") || (i > 0 && is_op(t[i - 1], ".")) || !is_op(t[i + 1], "(")) continue;
      std::size_t end = i + 2;
      if (t[end].kind != TokenKind::kName) continue;
      std::string object = resolve_import(ctx.src, dotted_name(t, i + 2, &end));
      if (object != "torch" && !object.starts_with("torch.")) continue;
      // `end` is just past the dotted name; a comma must follow.
      if (end >= t.size() || !is_op(t[end], ",")) continue;
      std::size_t arg = end + 1;
      bool literal = arg + 1 < t.size() && t[arg].kind == TokenKind::kString &&
                     (is_op(t[arg + 1], ")") || is_op(t[arg + 1], ","));
      if (!literal)
        ctx.add("static.introspection", kFatal, t[i].line, fmt::format("getattr({}, ...)", object),
                fmt::format("getattr on {} with a name computed at run time: a candidate names the torch API it "
                            "uses",
                            object));
    }
  }
}

void check_frame_attributes(RuleContext& ctx) {
  static const NameSet kFrameAttributes = {"f_back",   "f_locals",    "f_globals",      "tb_frame",
                                           "gi_frame", "__globals__", "__subclasses__", "__closure__"};
  for (const auto& l : ctx.src.lines) {
    const auto& t = l.tokens;
    for (std::size_t i = 1; i < t.size(); ++i) {
      if (t[i].kind == TokenKind::kName && is_op(t[i - 1], ".") && kFrameAttributes.contains(t[i].text)) {
        ctx.add("static.introspection", kFatal, t[i].line, t[i].text,
                fmt::format("{} reaches into the interpreter's frames or objects", t[i].text));
      }
    }
  }
}

void check_file_access(RuleContext& ctx) {
  for (const auto& l : ctx.src.lines) {
    const auto& t = l.tokens;
    for (const auto& [i, name] : dotted_names(t)) {
      int line = t[i].line;
      bool call = i + 1 < t.size() && is_op(t[i + 1], "(");
      if (starts_with_any(name, {"shutil"}) ||
          starts_with_any(name,
                          {"os.remove", "os.unlink", "os.rmdir", "os.removedirs", "os.rename", "os.renames",
                           "os.replace", "os.chmod", "os.chown", "os.truncate", "os.link", "os.symlink"})) {
        ctx.add("static.file_access", kFatal, line, name, fmt::format("{} changes or removes files", name));
      } else if (starts_with_any(name, {"sys.path", "os.makedirs", "os.mkdir", "os.chdir"})) {
        ctx.add("static.file_access", kWarn, line, name,
                fmt::format("{} changes the file system view", name));
      } else if (call && (name == "open" || name == "io.open" || name == "Path" || name == "pathlib.Path" ||
                          name == "os.open" || name == "os.listdir" || name == "os.scandir" ||
                          name == "os.walk" || name.starts_with("glob."))) {
        std::size_t arg = i + 2;
        while (arg < t.size() && !(t[arg].kind == TokenKind::kString || is_op(t[arg], ")"))) ++arg;
        std::string_view path = arg < t.size() && t[arg].kind == TokenKind::kString
                                    ? split_string_token(t[arg].text).body
                                    : std::string_view{};
        bool outside =
            path.starts_with("/") || path.starts_with("~") || path.find("..") != std::string_view::npos;
        ctx.add("static.file_access", outside ? kFatal : kWarn, line,
                path.empty() ? name : fmt::format("{}({})", name, t[arg].text),
                outside ? "reads or writes a file outside the candidate directory"
                        : "accesses files; a candidate may only read files next to it");
      }
    }
  }
}

void check_env_switch(RuleContext& ctx) {
  static const NameSet kBuildKeys = {"CUDA_HOME",
                                     "CUDA_PATH",
                                     "ROCM_HOME",
                                     "TORCH_CUDA_ARCH_LIST",
                                     "CXX",
                                     "CC",
                                     "MAX_JOBS",
                                     "TORCH_EXTENSIONS_DIR",
                                     "CFLAGS",
                                     "CXXFLAGS",
                                     "LDFLAGS",
                                     "OMP_NUM_THREADS",
                                     "ASCEND_HOME_PATH",
                                     "PATH",
                                     "LD_LIBRARY_PATH"};
  for (const auto& l : ctx.src.lines) {
    const auto& t = l.tokens;
    bool condition =
        is_name(t[0], "if") || is_name(t[0], "elif") || is_name(t[0], "while") || is_name(t[0], "assert");
    for (std::size_t k = 1; k < t.size() && !condition; ++k) condition = is_name(t[k], "if");
    for (const auto& [i, name] : dotted_names(t)) {
      if (!starts_with_any(name, {"os.environ", "os.getenv", "environ", "getenv", "os.putenv"})) continue;
      std::string key;
      std::size_t end = i;
      dotted_name(t, i, &end);
      for (std::size_t k = end; k < t.size() && k < end + 3 && key.empty(); ++k) {
        if (t[k].kind == TokenKind::kString) key = std::string(split_string_token(t[k].text).body);
      }
      bool build_key = kBuildKeys.contains(key);
      bool fatal = condition && !build_key;
      ctx.add("static.env_switch", fatal ? kFatal : kWarn, t[i].line,
              key.empty() ? name : fmt::format("{}[{}]", name, key),
              fatal ? "behaviour switches on an environment variable"
                    : "reads or sets the environment (acceptable only to configure a build)");
    }
  }
}

void check_precision(RuleContext& ctx) {
  if (!ctx.problem_is_float32) return;
  static const NameSet kReduced = {"half",
                                   "float16",
                                   "bfloat16",
                                   "autocast",
                                   "set_float32_matmul_precision",
                                   "allow_tf32",
                                   "allow_bf16_reduced_precision_reduction",
                                   "allow_fp16_reduced_precision_reduction"};
  for (const auto& line : ctx.src.lines) {
    const auto& t = line.tokens;
    // `if x.dtype == torch.float16: raise ...` guards against a dtype; it does not compute in it.
    bool guard = std::ranges::any_of(t, [](const Token& tok) {
      return is_op(tok, "==") || is_op(tok, "!=") || is_name(tok, "is") || is_name(tok, "in");
    });
    if (guard) continue;
    for (std::size_t i = 1; i < t.size(); ++i) {
      if (t[i].kind != TokenKind::kName || !is_op(t[i - 1], ".") || !kReduced.contains(t[i].text)) continue;
      ctx.add("static.precision_downgrade", kFatal, t[i].line, "." + t[i].text,
              fmt::format("computes in reduced precision (.{}) on a float32 problem", t[i].text));
    }
  }
}

}  // namespace kgym::static_check
