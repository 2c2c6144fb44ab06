// `kgym lint`: probes each selected problem with its reference alone and
// reports what makes it exploitable or unusable (verify/lint.h), one line
// per finding with evidence, plus its time and memory at the configured
// sizes. Exit 0 when no problem has a finding, 1 when some has, 2 on bad
// usage.
#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "app/command.h"
#include "core/backend.h"
#include "core/case_set.h"
#include "core/config.h"
#include "monitor/status_line.h"
#include "util/json_text.h"
#include "util/temp_dir.h"
#include "verify/lint.h"
#include "worker/probe.h"
#include "worker/python_env.h"

namespace kgym::app {
namespace {

struct LintOptions {
  std::string config_file;
  std::vector<std::string> sets;
  std::vector<std::string> overrides;
  std::string bench_dir;
  std::string level = "level1";
  std::string selector;
  std::string size;       // --size: problem.size
  std::string precision;  // --precision: problem.precision
  std::string python;     // --python: verifier.python
  unsigned long long seed = 0;
  bool json = false;  // --json: one object at the end instead of the lines
};

int usage_error(const std::string& message) {
  fmt::print(stderr, "kgym lint: {}\n", message);
  return kExitUsage;
}

int run_lint(const LintOptions& options, bool from_flags) {
  ConfigSource source;
  if (!options.config_file.empty()) source.file = options.config_file;
  source.sets = options.sets;
  if (!options.size.empty()) source.sets.push_back("problem.size=" + options.size);
  if (!options.precision.empty()) source.sets.push_back("problem.precision=" + options.precision);
  if (!options.python.empty()) source.sets.push_back("verifier.python=" + options.python);
  source.overrides = options.overrides;
  auto config = load_config(source);
  if (!config) return usage_error(config.error().message);
  std::filesystem::path bench_dir = from_flags ? std::filesystem::path(options.bench_dir) : config->bench_dir;
  std::string level = from_flags ? options.level : config->level;
  std::string selector = options.selector.empty() && !from_flags ? config->cases : options.selector;
  auto cases = select_cases(bench_dir, level, selector);
  if (!cases) return usage_error(cases.error().message);
  auto python = worker::resolve_python(config->verifier.python);
  if (!python) return usage_error(python.error());
  util::TempDir scratch("kgym-lint");
  if (scratch.path().empty()) return usage_error("cannot create a temporary directory");
  auto worker = scratch.path() / "kgym_worker.py";
  if (auto written = worker::write_worker_script(worker); !written) return usage_error(written.error());

  Tolerance tolerance = tolerance_for(config->verifier.tolerances, "float32", backend_of(config->verifier));
  int with_findings = 0;
  nlohmann::json problems = nlohmann::json::array();
  // The lines go to stdout, or to stderr (as progress) under --json.
  std::FILE* lines = options.json ? stderr : stdout;
  // On a terminal, which problem is being linted while its worker runs.
  std::optional<monitor::StatusLine> status;
  status.emplace(stderr, "kgym lint");
  auto print = [&](const std::string& text) { status->above([&] { fmt::print(lines, "{}", text); }); };
  std::size_t index = 0;
  for (const Case& c : *cases) {
    status->set(fmt::format("{} ({} of {})", c.id(), ++index, cases->size()));
    verify::LintRequest req{.python = python->python,
                            .problem = c.file,
                            .worker_script = worker,
                            .out_json = scratch.path() / "lint.json",
                            .overrides = config->overrides,
                            .tolerance = tolerance,
                            .seed = options.seed,
                            .threads = config->verifier.threads > 0 ? config->verifier.threads : 1,
                            .address_space_mb = config->sandbox.address_space_mb,
                            .precision = config->precision};
    if (sizes_automatically(config->size, backend_of(config->verifier))) req.size = config->size;
    auto report = verify::lint_problem(req);
    if (!report) {
      ++with_findings;
      print(fmt::format("{}: lint_failed — {}\n", c.id(), report.error()));
      problems.push_back({{"case", c.id()}, {"file", c.file.string()}, {"lint_failed", report.error()}});
      continue;
    }
    nlohmann::json findings = nlohmann::json::array();
    std::size_t counted = 0, notes = 0;
    for (const auto& f : report->findings) {
      print(fmt::format("{}: {}{} — {}\n", c.id(), f.note ? "note: " : "", f.kind, f.evidence));
      findings.push_back({{"kind", f.kind}, {"evidence", f.evidence}, {"note", f.note}});
      (f.note ? notes : counted) += 1;
    }
    problems.push_back({{"case", c.id()},
                        {"file", c.file.string()},
                        {"findings", std::move(findings)},
                        {"forward_ms", report->forward_ms ? nlohmann::json(*report->forward_ms) : nlohmann::json()},
                        {"peak_rss_mb", report->peak_rss_mb ? nlohmann::json(*report->peak_rss_mb) : nlohmann::json()}});
    if (counted > 0) ++with_findings;
    std::string cost;
    if (report->forward_ms && report->peak_rss_mb) {
      // The lint's own forward is its first call, cold; the sizing's (below)
      // the best of three warm ones on one core.
      cost = fmt::format(" (first forward {:.2f} ms cold, {} thread{}; peak memory {:.0f} MB)",
                         *report->forward_ms, req.threads, req.threads == 1 ? "" : "s", *report->peak_rss_mb);
    }
    if (report->sizes && (!report->sizes->sizes.empty() || !report->sizes->fits))
      cost += "; " + describe_sizes(*report->sizes);
    std::string verdict = counted == 0 ? "ok" : fmt::format("{} finding(s)", counted);
    if (notes > 0) verdict += fmt::format(", {} note(s)", notes);
    print(fmt::format("{}: {}{}\n", c.id(), verdict, cost));
  }
  print(fmt::format("{} of {} problems have findings\n", with_findings, cases->size()));
  status.reset();  // erased before the JSON
  if (options.json) {
    fmt::print("{}\n", util::json_text({{"kgym_json", 1},
                                         {"command", "lint"},
                                         {"with_findings", with_findings},
                                         {"problems", std::move(problems)}},
                                        2));
  }
  return with_findings == 0 ? kExitOk : kExitNotAllPassed;
}

}  // namespace

Command add_lint_command(CLI::App& root) {
  auto options = std::make_shared<LintOptions>();
  CLI::App* app = root.add_subcommand(
      "lint",
      "Probe problems with the reference alone and report constant or input-independent outputs,\n"
      "references that are the identity on their inputs, that do not match themselves or that fail,\n"
      "with forward time and memory. Exit 1 when some problem has a finding (notes, which verification\n"
      "already catches, do not count).");
  app->add_option("SELECTOR", options->selector,
                  "cases to lint (docs/cases.md); default: the config's cases");
  CLI::Option* config =
      app->add_option("--config", options->config_file,
                      "YAML config: bench_dir, level, cases, problem.overrides, verifier.*");
  CLI::Option* set = app->add_option("--set", options->sets, "override a config key, KEY=VALUE (repeatable)")
                         ->expected(1)
                         ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  app->add_option(
      "--size", options->size,
      "problem sizes: auto (the cpu default), as_written, or a budget '{max_bytes: N, max_forward_ms: MS}'");
  app->add_option("--precision", options->precision,
                  "cast the floating inputs and parameters: as_written, float32, float16 or bfloat16");
  app->add_option("--override", options->overrides, "set a problem constant, NAME=INTEGER (repeatable)")
      ->expected(1)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  CLI::Option* bench_dir = app->add_option("--bench-dir", options->bench_dir,
                                           "dataset directory (holds level1/, ...) instead of the config's");
  app->add_option("--level", options->level, "default level for bare ids")
      ->capture_default_str()
      ->needs(bench_dir);
  app->add_option("--seed", options->seed, "seed of the probe inputs")->capture_default_str();
  app->add_flag("--json", options->json,
                "at the end print one JSON object (each problem's findings, time and memory); the lines go to "
                "stderr");
  app->add_option("--python", options->python,
                  "interpreter that imports torch (default: the config's, else auto-detect)");
  bench_dir->excludes(config)->excludes(set);
  return Command{app, [options, bench_dir] { return run_lint(*options, bench_dir->count() > 0); }};
}

}  // namespace kgym::app
