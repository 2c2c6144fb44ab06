// `kgym compare RUN_A RUN_B [--md FILE] [--all] [--fail-on regression]`: per-case verdict and
// speedup changes between two runs and the change of the aggregates, read
// from the runs' result.json files.
#include <unistd.h>

#include <memory>
#include <optional>
#include <system_error>

#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "app/command.h"
#include "core/case_paths.h"
#include "monitor/terminal.h"
#include "report/compare.h"
#include "report/load_results.h"
#include "report/run_info.h"
#include "util/fs.h"
#include "util/json_text.h"

namespace kgym::app {
namespace {

struct CompareArgs {
  std::string run_a, run_b;
  std::string markdown_file;
  bool all_cases = false;
  std::string fail_on;  // "regression": exit 1 when a case broke or got slower
  bool json = false;
  int round = 0;  // --round R: each case as it stood after refinement round R; 0: as it ended
};

struct LoadedRun {
  report::Summary summary;
  std::set<std::string> precisions;  // problem.precision of its results
  std::set<std::string> torches;     // "VERSION (BUILD)" of its results that record one
  nlohmann::json machine;            // run.json's machine (null when unrecorded)
};

// The summary of one run, or nullopt after telling the user why not.
std::optional<LoadedRun> load_run(const std::string& dir, int round) {
  std::error_code ec;
  if (!std::filesystem::is_directory(CasePaths::cases_dir(dir), ec)) {
    fmt::print(stderr,
               "kgym compare: {} is not a kgym run directory: it has no cases/ directory.\n"
               "Pass two directories `kgym run` printed at start (OUTPUT_ROOT/<run name>).\n",
               dir);
    return std::nullopt;
  }
  report::LoadedResults loaded = report::load_results(dir);
  report::RecoveredRunInfo recovered = report::recover_run_info(dir, loaded);
  // A damaged result would show its case as "not run", a regression that
  // is not one: the comparison is refused instead.
  if (!recovered.errors.empty()) {
    for (const std::string& error : recovered.errors) fmt::print(stderr, "kgym compare: {}\n", error);
    return std::nullopt;
  }
  for (const std::string& note : recovered.notes) fmt::print(stderr, "kgym compare: {}\n", note);
  if (round > 0) {
    for (CaseResult& r : loaded.results) r = report::at_round(r, round);
  }
  LoadedRun run{report::summarize(loaded.results, recovered.info.selected_case_ids), {}, {},
                recovered.info.machine};
  for (const CaseResult& r : loaded.results) {
    run.precisions.insert(r.precision);
    if (r.environment && !r.environment->torch_version.empty())
      run.torches.insert(
          fmt::format("torch {} ({})", r.environment->torch_version, r.environment->torch_build));
  }
  return run;
}

// "" when both runs ran at one precision; else the sentence that says the
// speedups compare different workloads.
std::string precision_warning(const LoadedRun& a, const LoadedRun& b) {
  if (a.precisions == b.precisions && a.precisions.size() <= 1) return "";
  return fmt::format(
      "warning: the runs ran at different precisions ({}: {}; {}: {}): their speedups time different "
      "workloads and are not comparable; compare runs of one problem.precision",
      "A", fmt::join(a.precisions, ", "), "B", fmt::join(b.precisions, ", "));
}

// "" unless the runs' results name different torches.
std::string torch_warning(const LoadedRun& a, const LoadedRun& b) {
  if (a.torches.empty() || b.torches.empty() || a.torches == b.torches) return "";
  return fmt::format(
      "warning: the runs used different torch builds ({}: {}; {}: {}): the reference each kernel is timed "
      "against differs, so speedups may move with torch, not with the kernels",
      "A", fmt::join(a.torches, ", "), "B", fmt::join(b.torches, ", "));
}

// "" unless run.json says the runs ran on different machines: their
// speedups then time different hardware.
std::string machine_warning(const LoadedRun& a, const LoadedRun& b) {
  if (!a.machine.is_object() || !b.machine.is_object()) return "";
  std::vector<std::string> differences;
  for (const char* key : {"cpu_model", "online_cpus", "hostname", "devices"}) {
    nlohmann::json in_a = a.machine.value(key, nlohmann::json()), in_b = b.machine.value(key, nlohmann::json());
    if (in_a.is_null() || in_b.is_null() || in_a == in_b) continue;
    auto text = [](const nlohmann::json& v) { return v.is_string() ? v.get<std::string>() : v.dump(); };
    differences.push_back(fmt::format("{} {} / {}", key, text(in_a), text(in_b)));
  }
  if (differences.empty()) return "";
  return fmt::format(
      "warning: the runs ran on different machines (A / B: {}): a speedup is a ratio on one machine, so the "
      "changes may be the hardware's, not the kernels'",
      fmt::join(differences, "; "));
}

// "" unless the runs selected different cases: their totals then compare
// different things.
std::string case_set_warning(const report::Comparison& c) {
  int only_a = 0, only_b = 0;
  for (const auto& change : c.cases) {
    only_a += change.change == report::Change::kOnlyInA;
    only_b += change.change == report::Change::kOnlyInB;
  }
  if (only_a == 0 && only_b == 0) return "";
  return fmt::format(
      "warning: the runs attempted different cases ({} only in A, {} only in B): their totals compare "
      "different sets; the per-case rows and the speedup ratio over common cases compare like with like",
      only_a, only_b);
}

nlohmann::json optional_number(const std::optional<double>& v) { return v ? nlohmann::json(*v) : nlohmann::json(); }

// The comparison as one object (docs/results.md "Machine-readable output").
nlohmann::json comparison_json(const report::Comparison& c, const CompareArgs& args,
                               const std::vector<std::string>& warnings,
                               const std::vector<std::string>& regressions) {
  auto side = [](const report::CaseRow* row) -> nlohmann::json {
    if (row == nullptr) return nullptr;
    nlohmann::json out = {{"verdict", row->verdict ? nlohmann::json(to_string(*row->verdict)) : nlohmann::json()},
                          {"speedup", optional_number(row->speedup)}};
    if (row->speedup_ci95) out["speedup_ci95"] = {row->speedup_ci95->lo, row->speedup_ci95->hi};
    out["uncertain"] = report::is_uncertain(*row);
    out["noise_factor"] = optional_number(row->noise_factor);
    return out;
  };
  nlohmann::json cases = nlohmann::json::array();
  for (const auto& change : c.cases) {
    cases.push_back({{"case", change.case_id},
                     {"change", report::to_string(change.change)},
                     {"a", side(change.a)},
                     {"b", side(change.b)},
                     {"speedup_ratio", optional_number(change.speedup_ratio)}});
  }
  nlohmann::json aggregates = nlohmann::json::array();
  for (const auto& delta : c.aggregates) {
    std::string_view unit = delta.unit == report::AggregateDelta::Unit::kCount  ? "count"
                            : delta.unit == report::AggregateDelta::Unit::kRate ? "rate"
                                                                                : "speedup";
    aggregates.push_back(
        {{"name", delta.name}, {"a", optional_number(delta.a)}, {"b", optional_number(delta.b)}, {"unit", unit}});
  }
  return {{"kgym_json", 1},
          {"command", "compare"},
          {"run_a", args.run_a},
          {"run_b", args.run_b},
          {"round", args.round > 0 ? nlohmann::json(args.round) : nlohmann::json(nullptr)},
          {"warnings", warnings},
          {"aggregates", std::move(aggregates)},
          {"common_cases", c.common_cases},
          {"common_speedup_ratio", optional_number(c.common_speedup_ratio)},
          {"changed", c.changed},
          {"cases", std::move(cases)},
          {"regressions", regressions}};
}

int run_compare_command(const CompareArgs& args) {
  auto a = load_run(args.run_a, args.round);
  auto b = load_run(args.run_b, args.round);
  if (!a || !b) return kExitUsage;
  report::Comparison comparison = report::compare_runs(a->summary, b->summary);
  std::vector<std::string> warnings;
  for (const std::string& w : {precision_warning(*a, *b), torch_warning(*a, *b), machine_warning(*a, *b),
                              case_set_warning(comparison)})
    if (!w.empty()) warnings.push_back(w);
  std::vector<std::string> regressed;
  for (const auto& change : comparison.cases) {
    if (change.change == report::Change::kBroken || change.change == report::Change::kSlower)
      regressed.push_back(fmt::format("{} ({})", change.case_id, report::to_string(change.change)));
  }
  if (args.json) {
    fmt::print("{}\n", util::json_text(comparison_json(comparison, args, warnings, regressed), 2));
  } else {
    for (const std::string& w : warnings) fmt::print("{}\n", w);
    if (!warnings.empty()) fmt::print("\n");
    int width = monitor::terminal_size(STDOUT_FILENO, {160, 40}).columns;
    fmt::print("{}", report::comparison_table(comparison, args.run_a, args.run_b, width, args.all_cases));
  }
  if (!args.markdown_file.empty()) {
    std::string md = report::comparison_markdown(comparison, args.run_a, args.run_b, args.all_cases);
    for (auto w = warnings.rbegin(); w != warnings.rend(); ++w) md = fmt::format("> **{}**\n\n", *w) + md;
    if (auto ok = util::write_file_atomic(args.markdown_file, md); !ok) {
      fmt::print(stderr, "kgym compare: --md {}: {}\n", args.markdown_file, ok.error());
      return kExitUsage;
    }
    if (!args.json) fmt::print("wrote {}\n", args.markdown_file);
  }
  if (args.fail_on == "regression" && !regressed.empty()) {
    fmt::print(stderr, "kgym compare: --fail-on regression: {} case(s) broke or got slower: {}\n",
               regressed.size(), fmt::join(regressed, ", "));
    return kExitNotAllPassed;
  }
  return kExitOk;
}

}  // namespace

Command add_compare_command(CLI::App& root) {
  auto args = std::make_shared<CompareArgs>();
  CLI::App* app = root.add_subcommand(
      "compare", "Compare two runs: per-case verdict and speedup changes, and the aggregate deltas");
  app->add_option("RUN_A", args->run_a, "The baseline run directory")->required();
  app->add_option("RUN_B", args->run_b, "The run compared with it")->required();
  app->add_option("--md", args->markdown_file, "Also write the comparison as Markdown to this file");
  app->add_flag("--all", args->all_cases, "List every case, not only the changed ones");
  app->add_option("--fail-on", args->fail_on,
                  "regression: exit 1 when a case that passed in RUN_A does not in RUN_B, or got slower beyond "
                  "both runs' intervals and noise floors (a gate for CI)")
      ->check(CLI::IsMember({"regression"}));
  app->add_flag("--json", args->json, "print the comparison as one JSON object instead of the table");
  app->add_option("--round", args->round,
                  "compare each case as it stood after this refinement round (agent.feedback; a case that "
                  "ended earlier at its last round)")
      ->check(CLI::Range(1, 20));
  return {app, [args] { return run_compare_command(*args); }};
}

}  // namespace kgym::app
