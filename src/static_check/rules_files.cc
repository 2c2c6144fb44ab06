// A candidate of several files: the bridge file that defines ModelNew and
// the sibling modules it imports (a work repository's op dir). Every rule
// runs on every file; only the ModelNew rules are the candidate's alone.
#include <algorithm>
#include <filesystem>

#include "static_check/rule_context.h"
#include "static_check/rules.h"

namespace kgym::static_check {
namespace {

// Does an import line of `src` name the module `module` (`import m`,
// `from m import f`, `from .m import f`, `from . import m`)?
bool imports_module(const PythonSource& src, std::string_view module) {
  for (const auto& l : src.lines) {
    const auto& t = l.tokens;
    if (t.empty() || !(is_name(t[0], "import") || is_name(t[0], "from"))) continue;
    if (std::ranges::any_of(t, [&](const Token& token) { return is_name(token, module); })) return true;
  }
  return false;
}

// The finding static.no_kernel gives when ModelNew has no kernel at all (as
// opposed to a forward that calls a library op, whose token is that call).
bool is_missing_kernel(const Finding& f) { return f.rule == "static.no_kernel" && f.token == "ModelNew"; }

}  // namespace

std::vector<Finding> check_candidate_files(const std::vector<SourceFile>& files,
                                           const CheckOptions& options) {
  if (files.empty()) return {};
  std::vector<Finding> findings = check_source(files[0].source, files[0].name, options, true);
  PythonSource candidate = parse_python(files[0].source);
  bool kernel_in_sibling = false;
  for (std::size_t i = 1; i < files.size(); ++i) {
    std::vector<Finding> more = check_source(files[i].source, files[i].name, options, false);
    findings.insert(findings.end(), more.begin(), more.end());
    PythonSource sibling = parse_python(files[i].source);
    std::string module = std::filesystem::path(files[i].name).stem().string();
    if (imports_module(candidate, module) &&
        defines_kernel(sibling, find_extension_builds(sibling), backend_named(options.backend, options.execution))) {
      kernel_in_sibling = true;
    }
  }
  if (kernel_in_sibling) std::erase_if(findings, is_missing_kernel);
  auto file_index = [&files](const Finding& f) {
    auto it = std::ranges::find_if(files, [&f](const SourceFile& s) { return s.name == f.file; });
    return it - files.begin();
  };
  std::ranges::stable_sort(findings, [&](const Finding& a, const Finding& b) {
    if (a.fatal() != b.fatal()) return a.fatal();
    if (file_index(a) != file_index(b)) return file_index(a) < file_index(b);
    return a.line < b.line;
  });
  return findings;
}

}  // namespace kgym::static_check
