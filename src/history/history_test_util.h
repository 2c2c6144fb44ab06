#pragma once
// Run directories made up for the history tests: run.json, state.json and
// case result.json files written with the project's own to_json.
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/case_paths.h"
#include "core/result.h"
#include "util/fs.h"

namespace kgym::history::testing {

struct FakeRun {
  std::filesystem::path dir;
  std::string model = "model-a";
  std::string level = "level1";
  double started_at = 1'780'000'000;
  std::string status = "finished";
  nlohmann::json config = {
      {"agent", {{"kind", "command"}, {"model", "model-a"}}}, {"level", "level1"}, {"concurrency", 1}};
  std::optional<std::vector<std::string>> cases;  // run.json's selection; unset: none recorded
};

inline void write_run(const FakeRun& run) {
  nlohmann::json config = run.config;
  config["agent"]["model"] = run.model;
  nlohmann::json record = {{"schema_version", 1},
                           {"run_dir", run.dir.string()},
                           {"started_at", run.started_at},
                           {"config", config},
                           {"torch_version", "2.5.1"},
                           {"torch_build", "cpu"},
                           {"backend", "cpu"},
                           {"mode", "performance"},
                           {"machine", {{"hostname", "box"}, {"cpu_model", "Test CPU"}}}};
  if (run.cases) record["cases"] = *run.cases;
  (void)util::make_dirs(CasePaths::cases_dir(run.dir));
  (void)util::write_file_atomic(RunPaths{run.dir}.run_record(), record.dump(2));
  nlohmann::json state = {{"schema_version", 1}, {"status", run.status}, {"updated_at", run.started_at + 60}};
  (void)util::write_file_atomic(run.dir / "state.json", state.dump(2));
}

// A result of case `id` (e.g. "level1/1_Relu"); speedup interval ±10 %.
inline CaseResult make_case(const std::string& id, Verdict verdict,
                            std::optional<double> speedup = std::nullopt,
                            std::optional<Interval> ci = std::nullopt) {
  CaseResult r;
  r.case_id = id;
  r.verdict = verdict;
  r.backend = "cpu";
  r.mode = "performance";
  if (speedup) {
    Performance p;
    p.reference = {2.0, 20, Interval{1.9, 2.1}};
    p.candidate = {2.0 / *speedup, 20, Interval{1.8 / *speedup, 2.2 / *speedup}};
    p.speedup = {*speedup, ci.value_or(Interval{*speedup * 0.9, *speedup * 1.1})};
    r.performance = p;
  }
  Generation g;
  g.agent = "command";
  g.model = "model-a";
  g.tokens_in = 1000;
  g.tokens_out = 200;
  g.cost = 0.5;
  r.generation = g;
  if (verdict == Verdict::kFailCheat) r.cheat = CheatFinding{"static.torch_op", "static", "model_new.py:3"};
  return r;
}

inline void write_case(const std::filesystem::path& run_dir, const CaseResult& r) {
  CasePaths paths{CasePaths::cases_dir(run_dir) / r.case_id};
  (void)util::make_dirs(paths.dir);
  (void)util::write_file_atomic(paths.result(), to_json(r).dump(2));
}

}  // namespace kgym::history::testing
