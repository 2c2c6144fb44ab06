#include "verify/static_gate.h"

#include <fmt/format.h>

#include "static_check/rules.h"
#include "util/fs.h"

namespace kgym::verify {

StaticGateResult run_static_gate(const std::filesystem::path& candidate, const std::filesystem::path& problem,
                                 const Backend& backend) {
  return run_static_gate(std::vector<std::filesystem::path>{candidate}, problem, backend);
}

StaticGateResult run_static_gate(const std::vector<std::filesystem::path>& files,
                                 const std::filesystem::path& problem, const Backend& backend) {
  StaticGateResult gate;
  if (files.empty()) return gate;
  std::vector<static_check::SourceFile> sources;
  for (const auto& file : files) {
    if (!sources.empty() && file.extension() != ".py") continue;
    auto source = util::read_file(file);
    if (!source) {
      if (sources.empty()) return gate;
      continue;
    }
    sources.push_back({file.filename().string(), std::move(*source)});
  }
  static_check::CheckOptions options;
  options.backend = std::string(backend.name);
  options.execution = std::string(backend.execution);
  if (auto problem_source = util::read_file(problem)) {
    options.input_dtypes = options.output_dtypes = static_check::problem_dtypes(*problem_source);
  }
  auto findings = static_check::check_candidate_files(sources, options);
  for (const auto& f : findings) gate.findings.push_back({f.rule, f.severity, f.evidence(), f.message});
  if (const auto* fatal = static_check::first_fatal(findings)) {
    gate.cheat = CheatFinding{fatal->rule, "static", fatal->evidence()};
    std::string where = fatal->line > 0 ? fmt::format("{}:{}", fatal->file, fatal->line) : fatal->file;
    gate.reason = fmt::format("{} — {}: {}", fatal->rule, where, fatal->message);
  }
  return gate;
}

}  // namespace kgym::verify
