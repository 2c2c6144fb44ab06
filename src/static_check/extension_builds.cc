// Finds the C++/CUDA a candidate compiles: load_inline (and cpp_extension.load)
// calls, and the string literals their cpp_sources / cuda_sources name,
// directly or through module-level names (`_SRC = r"""..."""`, `[_A, _B]`,
// `_A + _B`).
#include <set>

#include "static_check/rule_context.h"

namespace kgym::static_check {
namespace {

void collect_strings(const PythonSource& src, const std::vector<Token>& tokens, std::size_t begin,
                     std::size_t end, int budget, std::set<std::string>& seen,
                     std::vector<ExtensionBuild::Source>& out) {
  for (std::size_t i = begin; i < end && i < tokens.size(); ++i) {
    const Token& t = tokens[i];
    if (t.kind == TokenKind::kString && !t.from_fstring) {
      StringParts parts = split_string_token(t.text);
      out.push_back({t.line, scan_cpp(parts.body)});
    } else if (t.kind == TokenKind::kName && budget > 0 && !seen.contains(t.text) &&
               (i == begin || !is_op(tokens[i - 1], "."))) {
      auto it = src.assignments.find(t.text);
      if (it == src.assignments.end()) continue;
      seen.insert(t.text);
      for (std::size_t line_index : it->second) {
        const auto& rhs = src.lines[line_index].tokens;
        collect_strings(src, rhs, 2, rhs.size(), budget - 1, seen, out);
      }
    }
  }
}

// `def build(): ... return load_inline(...)` → "build".
std::string enclosing_function(const PythonSource& src, std::size_t line_index) {
  int depth = src.lines[line_index].depth;
  for (std::size_t i = line_index; i-- > 0;) {
    if (src.lines[i].depth >= depth) continue;
    const auto& t = src.lines[i].tokens;
    if (t.size() >= 2 && is_name(t[0], "def")) return t[1].text;
    depth = src.lines[i].depth;
  }
  return "";
}

}  // namespace

std::vector<ExtensionBuild> find_extension_builds(const PythonSource& src) {
  std::vector<ExtensionBuild> builds;
  for (std::size_t li = 0; li < src.lines.size(); ++li) {
    const auto& t = src.lines[li].tokens;
    for (std::size_t i = 0; i + 1 < t.size(); ++i) {
      // Renamed imports count too: `load_inline as li`, `cpp_extension as ce`.
      std::string called = t[i].kind == TokenKind::kName && (i == 0 || !is_op(t[i - 1], "."))
                               ? resolve_import(src, t[i].text)
                               : "";
      bool inline_call = is_name(t[i], "load_inline") || called.ends_with("cpp_extension.load_inline");
      bool file_call = (is_name(t[i], "load") && i >= 2 && is_op(t[i - 1], ".") &&
                        resolve_import(src, t[i - 2].text).ends_with("cpp_extension")) ||
                       called.ends_with("cpp_extension.load");
      if (!(inline_call || file_call) || !is_op(t[i + 1], "(")) continue;
      ExtensionBuild b;
      b.line_index = li;
      // `x = load_inline(...)` or `self.x = load_inline(...)`: the last name before '='.
      for (std::size_t k = 0; k < i; ++k) {
        if (is_op(t[k], "=") && k > 0 && t[k - 1].kind == TokenKind::kName) b.bound_to = t[k - 1].text;
      }
      if (b.bound_to.empty() && is_name(t[0], "return")) {
        std::string fn = enclosing_function(src, li);
        // `_ext = build()`: the name bound to the builder's result.
        for (const auto& line : src.lines) {
          const auto& u = line.tokens;
          for (std::size_t k = 2; !fn.empty() && k + 1 < u.size(); ++k) {
            if (is_name(u[k], fn) && is_op(u[k + 1], "(") && is_op(u[k - 1], "=")) b.bound_to = u[k - 2].text;
          }
        }
      }
      for (std::string_view kw : {"cpp_sources", "cuda_sources"}) {
        std::size_t end = 0;
        if (auto arg = keyword_argument(t, i + 1, kw, &end)) {
          std::set<std::string> seen;
          collect_strings(src, t, *arg, end, 4, seen, b.sources);
        }
      }
      if (inline_call && b.sources.empty()) {
        // Positional: load_inline(name, cpp_sources, cuda_sources, ...).
        std::size_t close = closing_bracket(t, i + 1);
        std::set<std::string> seen;
        collect_strings(src, t, i + 2, close, 4, seen, b.sources);
      }
      b.file_sources = file_call;
      builds.push_back(std::move(b));
    }
  }
  return builds;
}

}  // namespace kgym::static_check
