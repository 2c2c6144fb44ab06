#include "verify/static_gate.h"

#include <fmt/format.h>

#include "static_check/rules.h"
#include "util/fs.h"

namespace kgym::verify {

StaticGateResult run_static_gate(const std::filesystem::path& candidate, const std::filesystem::path& problem,
                                 const Backend& backend) {
  return run_static_gate(std::vector<std::filesystem::path>{candidate}, problem, backend);
}

namespace {

StaticGateResult check_sources(const std::vector<static_check::SourceFile>& sources,
                               const std::filesystem::path& problem, const Backend& backend) {
  StaticGateResult gate;
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

}  // namespace

StaticGateResult run_static_gate(const std::vector<std::filesystem::path>& files,
                                 const std::filesystem::path& problem, const Backend& backend) {
  if (files.empty()) return {};
  std::vector<static_check::SourceFile> sources;
  for (const auto& file : files) {
    if (!sources.empty() && file.extension() != ".py") continue;
    auto source = util::read_file(file);
    if (!source) {
      if (sources.empty()) return {};
      continue;
    }
    sources.push_back({file.filename().string(), std::move(*source)});
  }
  return check_sources(sources, problem, backend);
}

StaticGateResult run_static_gate_on_source(const std::string& name, std::string source,
                                           const std::filesystem::path& problem, const Backend& backend) {
  return check_sources({{name, std::move(source)}}, problem, backend);
}

}  // namespace kgym::verify
