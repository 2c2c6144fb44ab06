#include "verify/lint.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "util/fs.h"
#include "util/json_optional.h"
#include "util/sandbox.h"
#include "worker/child_process.h"
#include "worker/probe.h"

namespace kgym::verify {

std::expected<LintReport, std::string> lint_problem(const LintRequest& req) {
  std::vector<std::string> argv = {req.python, req.worker_script.string()};
  for (std::string& arg : worker::problem_arguments("lint", req.problem, req.seed, req.threads, req.overrides))
    argv.push_back(std::move(arg));
  argv.insert(argv.end(), {"--atol", std::to_string(req.tolerance.atol), "--rtol",
                           std::to_string(req.tolerance.rtol), "--out", req.out_json.string()});
  if (req.size) {
    argv.insert(argv.end(), {"--size-max-bytes", std::to_string(req.size->max_bytes), "--size-max-forward-ms",
                             fmt::format("{}", req.size->max_forward_ms)});
  }
  if (req.precision != "as_written") argv.insert(argv.end(), {"--precision", req.precision});
  // The sandbox's address-space limit: a problem too large for it fails
  // with an allocation error the worker reports, not the OOM killer's SIGKILL.
  if (req.address_space_mb > 0) {
    util::SandboxPolicy limited;
    limited.limits.address_space_bytes = static_cast<std::uint64_t>(req.address_space_mb) << 20;
    argv = util::sandboxed_argv(limited, argv);
  }
  std::error_code ec;
  std::filesystem::remove(req.out_json, ec);
  auto run = worker::run_captured(argv, worker::Clock::now() + req.timeout);
  if (!run) return std::unexpected(run.error());
  auto text = util::read_file(req.out_json);
  if (!text) {
    if (worker::died_of_memory(run->exit, run->output))
      return std::unexpected(worker::memory_reason("the lint worker", run->exit, req.address_space_mb));
    // torch 2's CUDA builds map about 3 GB just to import: under a smaller
    // address-space limit the import itself fails, with no word of memory.
    if (req.address_space_mb > 0 && run->output.find("import torch") != std::string::npos &&
        run->output.find("Traceback") != std::string::npos && run->output.find("/torch/") != std::string::npos)
      return std::unexpected(fmt::format(
          "the lint worker failed while importing torch, under an address space limited to {} MB "
          "(sandbox.limits.address_space_mb); a CUDA build of torch 2 maps about 3 GB to import: raise the limit",
          req.address_space_mb));
    std::string tail = run->output.substr(run->output.size() > 400 ? run->output.size() - 400 : 0);
    return std::unexpected("the lint worker wrote no result (" + run->exit.describe() + ")" +
                           (tail.empty() ? std::string(", and printed nothing") : ": " + tail));
  }
  LintReport report;
  try {
    auto doc = nlohmann::json::parse(*text);
    for (const auto& f : doc.value("findings", nlohmann::json::array())) {
      report.findings.push_back({f.value("kind", ""), f.value("evidence", ""), f.value("note", false)});
    }
    report.forward_ms = util::optional_at<double>(doc, "forward_ms");
    report.peak_rss_mb = util::optional_at<double>(doc, "peak_rss_mb");
    if (auto sizes = doc.find("sizes"); sizes != doc.end() && sizes->is_object())
      report.sizes = problem_sizes_from_json(*sizes);
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
