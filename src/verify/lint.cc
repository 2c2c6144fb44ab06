#include "verify/lint.h"

#include <nlohmann/json.hpp>

#include "util/fs.h"
#include "util/json_optional.h"
#include "worker/child_process.h"
#include "worker/probe.h"

namespace kgym::verify {

std::expected<LintReport, std::string> lint_problem(const LintRequest& req) {
  std::vector<std::string> argv = {req.python, req.worker_script.string()};
  for (std::string& arg : problem_arguments("lint", req.problem, req.seed, req.threads, req.overrides))
    argv.push_back(std::move(arg));
  argv.insert(argv.end(), {"--atol", std::to_string(req.tolerance.atol), "--rtol",
                           std::to_string(req.tolerance.rtol), "--out", req.out_json.string()});
  std::error_code ec;
  std::filesystem::remove(req.out_json, ec);
  auto run = run_captured(argv, Clock::now() + req.timeout);
  if (!run) return std::unexpected(run.error());
  auto text = util::read_file(req.out_json);
  if (!text) {
    return std::unexpected("the lint worker wrote no result (" + run->exit.describe() + "): " +
                           run->output.substr(run->output.size() > 400 ? run->output.size() - 400 : 0));
  }
  LintReport report;
  try {
    auto doc = nlohmann::json::parse(*text);
    for (const auto& f : doc.value("findings", nlohmann::json::array())) {
      report.findings.push_back({f.value("kind", ""), f.value("evidence", "")});
    }
    report.forward_ms = util::optional_at<double>(doc, "forward_ms");
    report.peak_rss_mb = util::optional_at<double>(doc, "peak_rss_mb");
  } catch (const nlohmann::json::exception& e) {
    return std::unexpected(std::string("malformed lint result: ") + e.what());
  }
  return report;
}

bool is_reference_error(const LintFinding& finding) {
  return finding.kind == "reference_fails" || finding.kind == "not_self_consistent" ||
         finding.kind == "non_finite_output";
}

}  // namespace kgym::verify
