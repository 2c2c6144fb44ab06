#pragma once
// The per-case result record: what result.json and `kgym verify --json` hold
// (schema in docs/results.md). Plain data; absent measurements are
// std::nullopt and serialize as JSON null, never 0.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/roofline.h"
#include "core/verdict.h"

namespace kgym {

inline constexpr int kResultSchemaVersion = 1;

struct CheatFinding {
  std::string rule;      // stable rule id, e.g. "static.no_model_new"
  std::string layer;     // "static" | "runtime"
  std::string evidence;  // file:line and token, op name, ...
};

// One finding of the static checks (docs/anti-cheat.md); fatal ones also
// decide `cheat`, warnings are only recorded.
struct StaticFinding {
  std::string rule;      // e.g. "static.env_switch"
  std::string severity;  // "fatal" | "warn"
  std::string evidence;  // "model_new.py:14: os.environ.get"
  std::string message;   // one line a human understands
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
  // Per-trial input distribution, parallel to seeds: "given" (get_inputs())
  // or "normal" (floating inputs redrawn as signed standard normal values).
  std::vector<std::string> distributions;
  // Trials not compared because the reference output was not finite on
  // them, one line each ("trial 4 (normal): reference output 0 has NaN").
  std::vector<std::string> skipped;
  // "zero" or "constant" when the reference output on the given inputs is
  // (nearly) that; such a case is checked with a relative error bound too.
  std::optional<std::string> degenerate;
  // What was compared, at the default shape: the inputs' dtypes as the
  // reference and the candidate received them ("float32", "int64"; "-" for
  // a non-tensor) and, per output, its dtype, shape and the tolerance it
  // was held to (after the problem.precision cast and the RMS scaling).
  struct Compared {
    std::string dtype;
    std::vector<std::int64_t> shape;
    double atol = 0;
    double rtol = 0;
  };
  std::vector<std::string> input_dtypes;
  std::vector<Compared> outputs;
};

// What the runtime layer saw of the candidate (docs/anti-cheat.md).
struct RuntimeTrace {
  bool available = false;                   // false: this torch cannot trace ops
  std::map<std::string, std::int64_t> ops;  // dispatcher op ("aten.relu") -> calls, all traced forwards
  std::vector<std::string> checks;          // runtime checks that ran, e.g. "input_mutation"
  // Where both sides' CPU time went during the timing, sampled from outside
  // their processes (docs/results.md "runtime.cpu_profile"); null when it
  // was not sampled, with the reason in `cpu_profile_missing`.
  nlohmann::json cpu_profile;
  std::string cpu_profile_missing;
};

struct Interval {
  double lo = 0;
  double hi = 0;
};

struct TimingSide {
  double median_ms = 0;
  int samples = 0;
  std::optional<Interval> ci95_ms;  // bootstrap interval of the median
  std::optional<double> mad_ms;     // median absolute deviation
  // Samples outside Tukey's fences [q1 - 1.5 IQR, q3 + 1.5 IQR]: kept in
  // every statistic (the median is robust to them), counted as a warning.
  std::optional<int> outliers;
};

struct SpeedupEstimate {
  double median = 0;
  std::optional<Interval> ci95;
};

// The candidate timed against another form of the reference than the one
// written (verifier.baselines), by the same method: twins, rounds, paired
// intervals widened by the noise floors.
struct BaselineSpeedup {
  std::string name;                        // "compile": the reference through torch.compile
  std::optional<SpeedupEstimate> speedup;  // baseline / candidate; nullopt when unavailable
  std::optional<TimingSide> reference;     // the baseline's own times
  std::optional<SpeedupEstimate> noise_floor;
  std::optional<double> compile_s;  // making the baseline (compiling, first calls): not timed
  std::optional<double> measure_s;
  std::vector<std::string> flags;
  std::string unavailable;  // why it was not timed ("" when it was)
};

// The timed calls' input sets: each drawn from the problem's get_inputs()
// under a seed of its own, the seeds following from one drawn from the
// operating system's cryptographic source for this verification.
struct TimedInputs {
  std::string seed;  // decimal; seeds the first set's seed (verify/timing_session.h)
  int sets = 0;      // sets drawn, for every call of either side
  double megabytes = 0;
  double make_s = 0;  // the reference worker drawing them, on the parent's clock
};

struct Performance {
  TimingSide reference;
  TimingSide candidate;
  // Reference / candidate, each side timed by two workers (its own and a
  // twin) in the same rounds; the interval is widened by both noise floors
  // (verify/stats.h).
  SpeedupEstimate speedup;
  // The same ratio and its interval over the rounds alone, before the
  // widening: where `speedup`'s width comes from the rounds and where from
  // the process term the noise floors estimate. nullopt in older records.
  std::optional<SpeedupEstimate> paired_speedup;
  // Reference against itself (A/A): the reference worker against its twin.
  std::optional<SpeedupEstimate> noise_floor;
  // The candidate against itself the same way: its worker against its twin.
  std::optional<SpeedupEstimate> candidate_noise_floor;
  std::string stop_reason;                     // target_rse | budget | max_repetitions
  std::vector<std::string> flags;              // within_noise, outer_clock_mismatch, ...
  std::optional<double> memory_bandwidth_gbs;  // copy bandwidth measured by the reference worker
  std::optional<double> measure_s;             // wall time of the whole timing phase
  // Share (0..1) of the leased cores' time that processes other than this
  // verification used while the timed rounds ran; nullopt where unreadable.
  std::optional<double> foreign_cpu_share;
  // Per round, in time order: {reference, candidate, reference twin,
  // candidate twin} batch medians in ms, what the speedup and the noise
  // floors come from.
  std::vector<std::vector<double>> rounds_ms;
  std::optional<TimedInputs> inputs;
  // Whose clock the figures are: "parent" (the parent's around each batch,
  // less the harness the reference spent) or "worker_bounded" (the
  // workers' over all their calls, bounded by the parent's); "" in records
  // older than the distinction.
  std::string clock;
  // The other baselines asked for, in the order asked.
  std::vector<BaselineSpeedup> speedup_vs;
  // The problem's work and both sides against the machine's roofs
  // (core/roofline.h, docs/roofline.md); nullopt where it was not counted.
  std::optional<Roofline> roofline;
  const BaselineSpeedup* against(std::string_view baseline) const;
};

// How the agent step ended; distinct from the verdict.
enum class GenerationOutcome { kOk, kNonZeroExit, kTimeout, kMissingArtifact, kLaunchFailed, kGateFailed };
std::string_view to_string(GenerationOutcome o);

// One harness check of a workflow stage and what it found.
struct GateResult {
  std::string gate;  // "headings PLAN.md"
  bool ok = false;
  std::string detail;  // why it failed ("missing heading '## Steps'"), "" when ok
};

struct StageAttempt {
  int attempt = 1;
  std::string outcome = "ok";  // to_string(GenerationOutcome) of the agent run
  std::vector<GateResult> gates;
  bool passed() const;  // the agent run was ok and every gate passed
};

struct StageRecord {
  std::string name;
  std::vector<StageAttempt> attempts;
  bool passed = false;
};

// A transcript rule that fired on something the agent did
// (docs/anti-cheat.md "Transcripts").
struct TranscriptFlag {
  std::string rule;      // "transcript.reference_lookup"
  std::string evidence;  // "shell: find / -name 1_ReLU.py"
  std::string file;      // the transcript, relative to the case dir
  int line = 0;          // 1-based line of that file (a part's position in an export)
};

struct Generation {
  std::string outcome = "ok";  // to_string(GenerationOutcome)
  std::optional<int> exit_code;
  std::optional<double> duration_s;
  std::string agent;  // agent kind or profile name
  std::optional<std::string> model;
  std::optional<std::int64_t> tokens_in;
  std::optional<std::int64_t> tokens_out;
  std::optional<double> cost;  // as the CLI reports it (USD)
  std::optional<std::int64_t> tool_calls;
  std::optional<std::string> agent_version;  // `<binary> --version`, first line
  std::optional<std::string> prompt_sha256;  // of the (first) prompt the agent was given
  std::optional<std::string> transcript;     // relative to the case dir, e.g. "session/transcript.jsonl"
  std::vector<StageRecord> stages;           // workflow stages; empty without a workflow
  std::vector<TranscriptFlag> transcript_flags;
};

// Seconds. The verification phases (worker_start_s .. timing_s) do not add
// up to verify_s: the reference loads while the candidate compiles, and the
// static gate, the build of ModelNew and the shutdown are not listed.
struct Timings {
  std::optional<double> generate_s;
  std::optional<double> worker_start_s;  // until both workers said hello (spawned or forked)
  std::optional<double> load_s;          // the reference's model build (its load request)
  std::optional<double> compile_s;       // the candidate's import (compiling its kernels)
  std::optional<double> trials_s;        // correctness trials, extra shapes included
  std::optional<double> timing_s;        // timing batches (performance mode)
  std::optional<double> verify_s;
  std::optional<double> total_s;
};

// One generation of a case run with `samples` > 1 (docs/results.md "Samples").
struct SampleOutcome {
  int sample = 1;  // from 1
  Verdict verdict = Verdict::kHarnessError;
  std::optional<double> speedup;  // median, when the sample was timed
  std::string reason;
};

// One refinement round of a sample (agent.feedback, docs/agents.md
// "Refinement rounds"): its candidate's verdict and what the agent spent on
// it. The sample's result is its last round's.
struct RoundRecord {
  int round = 1;  // from 1
  Verdict verdict = Verdict::kHarnessError;
  std::optional<double> speedup;  // median, when the round's candidate was timed
  std::optional<Interval> speedup_ci95;
  std::string reason;
  std::optional<std::int64_t> tokens;  // in + out, this round's agent run alone
  std::optional<double> cost;          // this round's alone
  std::optional<double> wall_s;        // the round: agent, build and verification
};
nlohmann::json rounds_json(const std::vector<RoundRecord>& rounds);
std::vector<RoundRecord> rounds_from_json(const nlohmann::json& j);  // throws nlohmann::json::exception

// What a case's samples add up to; its result's other fields are those of
// sample `chosen`.
struct SamplesSummary {
  int n = 0;                           // samples run
  int passed = 0;                      // samples whose verdict is pass
  int chosen = 1;                      // the sample whose result the case reports
  std::map<int, double> pass_at_k;     // k -> unbiased pass@k (core/pass_at_k.h), k = 1..n
  std::optional<double> best_speedup;  // highest median speedup among passing samples
  // What the agents reported, summed over every sample (the case's
  // `generation` is the chosen sample's alone); nullopt when none reported it.
  std::optional<std::int64_t> tokens_in;
  std::optional<std::int64_t> tokens_out;
  std::optional<std::int64_t> tool_calls;
  std::optional<double> cost;
  std::vector<SampleOutcome> per_sample;
};

// The sizes a problem ran at (docs/config.md "Problem sizes"): the size
// constants `problem.size: auto` changed (`sizes`), their values as
// written (`original`), the common factor and whether the budget was met;
// the user's `problem.overrides` beside them.
struct ProblemSizes {
  std::string policy = "as_written";       // "as_written" | "auto"
  std::map<std::string, long long> sizes;  // chosen by auto: NAME -> value
  std::map<std::string, long long> original;
  std::map<std::string, long long> overrides;  // problem.overrides, which win
  double factor = 1;
  bool fits = true;                         // false: even the smallest sizes that ran exceed the budget
  std::optional<unsigned long long> bytes;  // inputs + outputs + parameters at these sizes
  std::optional<double> forward_ms;         // one reference forward on one core
};
nlohmann::json to_json(const ProblemSizes& s);
// "sizes batch_size=64 (as written 4096), dim=6144 (393216): factor 1/64, 1.6 MB, forward 0.8 ms";
// "sizes as written" when auto changed nothing.
std::string describe_sizes(const ProblemSizes& s);
ProblemSizes problem_sizes_from_json(const nlohmann::json& j);  // throws nlohmann::json::exception

// The interpreter that ran the verification and its torch, as the
// reference worker reported them (`environment` in result.json).
struct TorchEnvironment {
  std::string python;         // the interpreter's path as kgym ran it
  std::string torch_version;  // torch.__version__
  std::string torch_build;    // "cpu", "cuda 13.2", "rocm 6.2", "npu"
};

// A case-sample whose cluster task ended without writing its result
// (docs/cluster.md): the verdict is the executor's, and a resumed run runs
// the case-sample again.
struct LostTask {
  std::string executor = "slurm";
  std::string job;     // "1234_5": the array job and task
  std::string state;   // the scheduler's final state, e.g. "CANCELLED"
  std::string source;  // where the state came from: "sacct", "scontrol", "exit record", "none"
  std::string node;
  std::string log;  // the task's log file
};

// A performance model's estimate of the candidate's time, where no device
// measured it (verifier.execution host_interpreter with PyPTO): never a
// speedup, never counted with measured ones (`performance.simulated`).
struct SimulatedTime {
  double value = 0;
  std::string unit;    // "us", "cycles": as the model reports it
  std::string source;  // "pypto cost model (output/merged_swimlane.json)"
};

struct CaseResult {
  int schema_version = kResultSchemaVersion;
  std::string case_id;  // "<level>/<N>_<Name>"
  Verdict verdict = Verdict::kHarnessError;
  std::string reason;  // one line a human understands
  std::optional<CheatFinding> cheat;
  std::vector<StaticFinding> static_findings;  // every finding, warnings included
  Correctness correctness;
  std::optional<RuntimeTrace> runtime;  // null when no candidate forward ran
  std::optional<Performance> performance;
  std::optional<Generation> generation;
  Timings timings;
  std::string backend;
  // "device" | "host_interpreter": on the backend's device, or its kernel
  // language's interpreter on the host (docs/backends.md).
  std::string execution = "device";
  std::optional<SimulatedTime> simulated;  // performance.simulated
  std::string mode;                        // "correctness" | "performance"
  std::optional<ProblemSizes> problem;     // `problem.sizes` in the JSON
  // The candidate was the problem's own Model (agent.kind: reference, an
  // A/A run): the instrument's calibration, never a solve.
  bool baseline = false;
  std::string precision = "as_written";  // problem.precision
  std::optional<TorchEnvironment> environment;
  // Only for a case run with samples > 1; absent from the JSON otherwise.
  std::optional<SamplesSummary> samples;
  // Every refinement round of the sample, the last one's result being this
  // one; empty (absent from the JSON) without agent.feedback.
  std::vector<RoundRecord> rounds;
  std::optional<LostTask> lost_task;  // absent from the JSON unless set
};

nlohmann::json to_json(const CaseResult& r);
// The `generation` object of a result (also generation.json, with its
// generate_s); generation_from_json throws nlohmann::json::exception on a
// malformed one.
nlohmann::json to_json(const Generation& g);
Generation generation_from_json(const nlohmann::json& j);
nlohmann::json samples_json(const SamplesSummary& s);
SamplesSummary samples_from_json(const nlohmann::json& j);  // throws nlohmann::json::exception
nlohmann::json stages_json(const std::vector<StageRecord>& stages);
std::vector<StageRecord> stages_from_json(const nlohmann::json& j);
// Parses a result written by to_json; throws nlohmann::json::exception on a
// malformed document (callers report it with the file name).
CaseResult result_from_json(const nlohmann::json& j);

}  // namespace kgym
