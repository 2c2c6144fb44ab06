#pragma once
// The lifecycle of one sample (one generation of a case and its
// verification) as a state machine. It starts no process and waits on
// nothing: on each event — started, child exited, device granted, a launch
// that failed — it returns the next Step for the event loop (run/scheduler)
// to carry out: run this process with this deadline, lease me a device, or
// I am finished with this result. Lifecycle tests drive it with events
// alone (sample_flow_test.cc).
//
//   pending ─► probing ─► generating ─► checking ─► building ─► waiting_device ─► verifying ─► done
//                 │            ▲   │       │ (workflow gates,  (no device:                            ▲
//                 │            └───┴───────┘  re-prompts)       a build slot)                          │
//                 └──────────── any failure: a CaseResult with its verdict ────────────────────────────┘
//
// resume() is the one place that reads a previous attempt's files and says
// where a sample starts again.
#include <chrono>
#include <cstdint>
#include <expected>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include <nlohmann/json.hpp>

#include "agent/agent.h"
#include "core/case_paths.h"
#include "core/case_set.h"
#include "core/config.h"
#include "core/result.h"
#include "run/gates.h"
#include "util/clock.h"
#include "util/process_runner.h"
#include "util/sandbox.h"
#include "verify/verifier.h"
#include "worker/warm_pool.h"

namespace kgym::run {

enum class Phase { kPending, kProbing, kGenerating, kChecking, kBuilding, kWaitingDevice, kVerifying, kDone };

// As state.json shows it: "pending", "probing", "generating", "checking",
// "building", "waiting_device", "verifying", "done".
std::string_view to_string(Phase phase);

// What every sample of a run shares.
struct FlowOptions {
  std::filesystem::path run_dir;
  std::vector<std::string> kgym_argv0;     // how to re-run this binary: {"/path/kgym"}
  std::filesystem::path worker_script;     // the Python worker, written for this run
  std::string python;                      // resolved interpreter
  std::string torch_version, torch_build;  // its torch, for results no reference worker reported on
  std::uint64_t run_seed = 0;
  std::optional<std::string> agent_version;  // `<agent CLI> --version`, recorded per case
  // Unfinished samples start from scratch even when a generated candidate
  // waits for verification (`kgym run --resume --force`).
  bool regenerate = false;
  // OS confinement (util/sandbox.h), resolved once for the run; the agent's
  // and the candidate's hidden directories (dataset, runs, the kgym tree).
  util::SandboxMode sandbox_mode = util::SandboxMode::kNone;
  std::vector<std::filesystem::path> agent_hidden;
  std::vector<std::filesystem::path> candidate_hidden;
  // Where the build stage keeps the precompiled headers
  // (build.precompiled_header), and their directory for this run's torch
  // and compiler when it was found at the start (empty: each build asks).
  std::filesystem::path pch_root;
  std::optional<std::filesystem::path> pch_dir;
  // Warm worker parents per device (verifier.warm_workers); null = every
  // verification starts its workers cold. Not owned.
  worker::WarmPool* warm_pool = nullptr;
};

// Who a sample is.
struct SampleId {
  Case c;
  int sample = 0;              // from 1 when the case has several samples; 0 when it has one
  std::uint64_t seed = 0;      // of its probe and verification (run/samples.h)
  CasePaths paths;             // the sample's dir (the case's own with one sample)
  std::filesystem::path work;  // the agent's work dir
};

// The cores the loop gave a build (docs/build.md): a CPU core list, "all"
// where builds are not confined.
struct BuildSlot {
  std::string cores = "all";
};

// A device the loop leased to the sample: its index in the run's devices
// (the warm pool's key) and its name.
struct DeviceLease {
  std::size_t index = 0;
  std::string name;
};

// The steps a flow asks of the loop.
struct Launch {
  util::ProcessSpec spec;
  std::chrono::seconds timeout{0};
};
struct NeedBuildSlot {};
struct NeedDevice {};
struct Finished {
  CaseResult result;
};
using Step = std::variant<Launch, NeedBuildSlot, NeedDevice, Finished>;

// Something the loop records for the flow, in order: a phase change, an
// event for events.jsonl, or a warning for the terminal.
struct FlowNote {
  enum class Kind { kPhase, kEvent, kWarning } kind = Kind::kEvent;
  std::string name;  // the event's name, or the warning's text
  nlohmann::json data = nlohmann::json::object();
};

// The result a previous attempt wrote in `paths`: nullopt when there is
// none or it is a lost cluster task's (the case-sample runs again); an
// error naming the file and the fix when it cannot be read, belongs to
// another case or comes from a newer kgym — a resume refuses then, so a
// damaged record is never silently replaced (run/resume_check.h).
std::expected<std::optional<CaseResult>, std::string> read_result(const CasePaths& paths,
                                                                  const std::string& case_id);
// read_result() with an unreadable record taken as none: for a run whose
// records were checked before it started.
std::optional<CaseResult> load_result(const CasePaths& paths, const std::string& case_id);
// Writes `result` as paths.result() (atomically, making its dir).
std::expected<void, std::string> write_result(const CasePaths& paths, const CaseResult& result);
// output.bundles: the case's reproduction bundle (verify/repro_bundle.h) as
// paths.repro_bundle(), when the case reached its verification or its build;
// nothing for a case that ended before (nothing to reproduce).
std::expected<void, std::string> write_bundle(const CasePaths& paths, const CaseResult& result);

class SampleFlow {
 public:
  SampleFlow(SampleId id, const Config& config, const FlowOptions& options, const agent::Agent& agent,
             const util::Clock& clock);

  // From the files of a previous attempt (result.json, generation.json and
  // the candidate; with `regenerate` the latter two are removed first).
  // Called once, before start().
  void resume(bool regenerate);

  // The loop starts the sample; `device` is leased already when the agent
  // needs one (agent.needs_device) and is kept through verification.
  Step start(std::optional<DeviceLease> device);
  // The child of the last Launch ended; `timed_out`: the loop stopped it at
  // its deadline.
  Step child_exited(const util::ProcessExit& exit, bool timed_out);
  // The last Launch could not start.
  Step launch_failed(const std::string& why);
  // The build slot asked for with NeedBuildSlot; the loop frees it when
  // the build's child ends.
  Step build_slot_granted(BuildSlot slot);
  // The device asked for with NeedDevice.
  Step device_granted(DeviceLease device);

  Phase phase() const { return phase_; }
  const SampleId& id() const { return id_; }
  const std::optional<CaseResult>& result() const { return result_; }
  const std::optional<DeviceLease>& device() const { return device_; }
  // Workflow progress as the case row shows it.
  const std::string& stage() const { return stage_name_; }
  int attempt() const { return attempt_; }
  const std::vector<std::string>& failed_gates() const { return failed_gates_; }

  // The notes made since the last call, in order.
  std::vector<FlowNote> take_notes() { return std::exchange(notes_, {}); }

 private:
  enum class Child { kNone, kProbe, kAgent, kGate, kBuild, kVerify };

  // sample_flow.cc: the lifecycle.
  Step launch_probe();
  Step probe_ended(const util::ProcessExit& exit, bool timed_out);
  Step launch_generation();
  Step agent_ended(const util::ProcessExit& exit, bool timed_out);
  Step agent_done();
  Step collect_candidate();
  Step wait_for_build();
  Step launch_build(const BuildSlot& slot);
  Step build_ended(const util::ProcessExit& exit, bool timed_out);
  Step wait_for_device();
  verify::VerifyRequest verify_request(const std::filesystem::path& scratch) const;
  Step launch_verification();
  Step verify_ended(const util::ProcessExit& exit, bool timed_out);
  Step fail(Verdict verdict, std::string reason);
  Step finish(CaseResult result);
  // Refinement rounds (agent.feedback; sample_flow_rounds.cc).
  bool another_round(const CaseResult& result) const;
  Step next_round(const CaseResult& result);
  Step launch_feedback_round();
  void end_rounds(CaseResult& result) const;
  std::expected<void, std::string> write_rounds() const;
  void read_rounds();
  std::uint64_t verify_seed() const;
  std::expected<void, std::string> write_self_check() const;
  std::expected<std::filesystem::path, std::string> write_prompt(const std::string& name,
                                                                 const std::string& text) const;
  Step launch(Child kind, util::ProcessSpec spec, std::chrono::seconds timeout);
  void set_phase(Phase phase);
  void event(std::string name, nlohmann::json data = nlohmann::json::object());

  // sample_flow_agent.cc: the agent, its box and the workflow stages.
  agent::AgentTask agent_task(const std::filesystem::path& prompt_file) const;
  Step launch_agent(const std::filesystem::path& prompt_file);
  void agent_env(util::ProcessSpec& spec) const;
  enum class Boxed { kAgent, kGate };
  std::expected<util::ProcessSpec, std::string> sandboxed(const util::ProcessSpec& spec, Boxed who) const;
  Step launch_stage();
  Step check_stage();
  Step advance_checks();
  Step stage_checked();
  void end_generation();
  void scan_transcripts();

  SampleId id_;
  const Config& config_;
  const FlowOptions& options_;
  const agent::Agent& agent_;
  const util::Clock& clock_;

  Phase phase_ = Phase::kPending;
  Child child_ = Child::kNone;
  std::optional<DeviceLease> device_;
  std::string launched_;             // argv[0] of the last Launch, for the error when it cannot start
  std::filesystem::path candidate_;  // once collected
  // What problem.size: auto chose when the probe ran (or, on resume, what
  // the probe recorded): the verification runs at these sizes.
  std::optional<ProblemSizes> sizes_;
  Generation generation_;
  std::optional<double> generate_s_;
  std::optional<double> compile_s_;  // the build stage's
  util::SteadyTime started_{};
  util::SteadyTime generation_started_{};
  std::size_t workflow_stage_ = 0;  // workflow: the stage being run
  int attempt_ = 0;                 // and its attempt, from 1
  std::string stage_name_;
  std::vector<std::string> failed_gates_;
  std::optional<StageChecks> checks_;  // of the attempt just run, while its gates are checked
  std::optional<CaseResult> result_;
  std::vector<FlowNote> notes_;
  // agent.feedback: the round being run (from 1), the rounds finished, the
  // feedback the current round was given, and what the finished rounds'
  // agents reported, summed.
  int round_ = 1;
  std::vector<RoundRecord> rounds_;
  std::string feedback_;
  util::SteadyTime round_started_{};
  std::uintmax_t agent_log_from_ = 0;  // where this round's agent output starts in agent.log
  struct Spent {
    std::optional<std::int64_t> tokens_in, tokens_out, tool_calls;
    std::optional<double> cost;
    double generate_s = 0;
    std::optional<std::string> prompt_sha256;  // of round 1's first prompt
  } spent_;
};

}  // namespace kgym::run
