#pragma once
// The per-case result record: what result.json and `kgym verify --json` hold
// (schema in DESIGN.md "Outputs"). Plain data; absent measurements are
// std::nullopt and serialize as JSON null, never 0.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/verdict.h"

namespace kgym {

inline constexpr int kResultSchemaVersion = 1;

struct CheatFinding {
  std::string rule;      // stable rule id, e.g. "static.no_model_new"
  std::string layer;     // "static" | "runtime"
  std::string evidence;  // file:line and token, op name, ...
};

struct Correctness {
  int trials = 0;  // trials compared (all shapes)
  int trials_passed = 0;
  std::vector<std::string> shapes;  // input shapes, one string per shape set
  std::optional<double> max_abs_err;
  std::optional<double> max_rel_err;
  std::optional<int> failed_output;  // index into the flattened outputs
  std::optional<int> failed_trial;
  std::vector<std::uint64_t> seeds;  // per-trial input seeds, recorded after the verdict
};

struct Interval {
  double lo = 0;
  double hi = 0;
};

struct TimingSide {
  double median_ms = 0;
  int samples = 0;
  std::optional<Interval> ci95_ms;
};

struct SpeedupEstimate {
  double median = 0;
  std::optional<Interval> ci95;
};

struct Performance {
  TimingSide reference;
  TimingSide candidate;
  SpeedupEstimate speedup;  // reference / candidate
  std::optional<SpeedupEstimate> noise_floor;
  std::string stop_reason;
  std::vector<std::string> flags;
};

// How the agent step ended; distinct from the verdict.
enum class GenerationOutcome { kOk, kNonZeroExit, kTimeout, kMissingArtifact, kLaunchFailed };
std::string_view to_string(GenerationOutcome o);

struct Generation {
  std::string outcome = "ok";  // to_string(GenerationOutcome)
  std::optional<int> exit_code;
  std::optional<double> duration_s;
  std::string agent;  // agent kind or profile name
  std::optional<std::string> model;
  std::optional<std::int64_t> tokens_in;
  std::optional<std::int64_t> tokens_out;
  std::optional<double> cost;
};

struct Timings {
  std::optional<double> generate_s;
  std::optional<double> compile_s;
  std::optional<double> verify_s;
  std::optional<double> total_s;
};

struct CaseResult {
  int schema_version = kResultSchemaVersion;
  std::string case_id;  // "<level>/<N>_<Name>"
  Verdict verdict = Verdict::kHarnessError;
  std::string reason;  // one line a human understands
  std::optional<CheatFinding> cheat;
  Correctness correctness;
  std::optional<Performance> performance;
  std::optional<Generation> generation;
  Timings timings;
  std::string backend;
  std::string mode;  // "correctness" | "performance"
};

nlohmann::json to_json(const CaseResult& r);
// Parses a result written by to_json; throws nlohmann::json::exception on a
// malformed document (callers report it with the file name).
CaseResult result_from_json(const nlohmann::json& j);

}  // namespace kgym
