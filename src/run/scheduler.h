#pragma once
// The single-threaded event loop that takes every selected case from
// `pending` to a result: probe the reference, generate a candidate, collect
// it, verify it on a leased device. With `samples: K` each case is generated
// and verified K times independently and reports the best sample with its
// pass@k (run/samples.h). One poll with a deadline supervises all
// children through the ProcessRunner seam; every transition is saved to
// state.json/events.jsonl and every finished case to its result.json before
// the next one is reported.
#include <cstdint>
#include <filesystem>
#include <optional>
#include <vector>

#include "agent/agent.h"
#include "core/case_set.h"
#include "core/config.h"
#include "core/result.h"
#include "run/device_pool.h"
#include "run/printer.h"
#include "run/state_store.h"
#include "util/process_runner.h"
#include "util/sandbox.h"
#include "verify/warm_pool.h"

namespace kgym::run {

struct SchedulerOptions {
  std::filesystem::path run_dir;
  std::vector<std::string> kgym_argv0;  // how to re-run this binary: {"/path/kgym"}
  std::filesystem::path worker_script;  // the Python worker, written for this run
  std::string python;                   // resolved interpreter
  std::uint64_t run_seed = 0;
  std::optional<int> interrupt_fd;  // readable once per user interrupt
  std::chrono::milliseconds kill_grace{3000};
  std::optional<std::string> agent_version;  // `<agent CLI> --version`, recorded per case
  // Unfinished cases start from scratch even when a generated candidate
  // waits for verification (`kgym run --resume --force`).
  bool regenerate = false;
  // OS confinement (util/sandbox.h), resolved once for the run; the agent's
  // and the candidate's hidden directories (dataset, runs, the kgym tree).
  util::SandboxMode sandbox_mode = util::SandboxMode::kNone;
  std::vector<std::filesystem::path> agent_hidden;
  std::vector<std::filesystem::path> candidate_hidden;
  // Warm worker parents per device (verifier.warm_workers); null = every
  // verification starts its workers cold. Not owned.
  verify::WarmPool* warm_pool = nullptr;
};

struct RunOutcome {
  std::vector<CaseResult> results;  // finished cases, in case order (with samples: the case's record)
  std::size_t not_run = 0;          // cases left unfinished by an interrupt
  bool interrupted = false;
};

class Scheduler {
 public:
  Scheduler(const Config& config, SchedulerOptions options, std::vector<Case> cases,
            util::ProcessRunner& runner, const util::Clock& clock, const agent::Agent& agent,
            Printer& printer, StateStore& store);
  ~Scheduler();
  Scheduler(const Scheduler&) = delete;
  Scheduler& operator=(const Scheduler&) = delete;

  RunOutcome run();

 private:
  struct CaseRun;
  struct CaseEntry;
  enum class Child { kNone, kProbe, kAgent, kGate, kVerify };
  enum class Boxed { kAgent, kGate };

  // scheduler_samples.cc: cases and their samples, device leases.
  void add_case(Case c);
  bool sampled() const { return config_.samples > 1; }
  CaseState& row_of(std::size_t i);
  std::string holder_name(std::size_t i) const;
  std::optional<std::size_t> lease_device(std::size_t i);
  void release_device(std::size_t i);
  void sample_finished(std::size_t i, CaseResult result);
  void case_finished(std::size_t c, CaseResult result);
  void finish_resumed_cases();
  void show_live_sample(std::size_t c);

  void start_case(std::size_t i);
  void launch_generation(std::size_t i);
  void launch_agent(std::size_t i, const std::filesystem::path& prompt_file);
  void launch_stage(std::size_t i);
  void check_stage(std::size_t i);
  void advance_checks(std::size_t i);
  void stage_checked(std::size_t i);
  void collect_candidate(std::size_t i);
  void end_generation(std::size_t i);
  agent::AgentTask agent_task(std::size_t i, const std::filesystem::path& prompt_file) const;
  void agent_env(std::size_t i, util::ProcessSpec& spec) const;
  util::ProcessSpec sandboxed(const util::ProcessSpec& spec, const std::filesystem::path& workspace,
                              const std::filesystem::path& case_dir, Boxed who) const;
  void generation_done(std::size_t i, std::optional<util::ProcessExit> exit);
  void launch_verification(std::size_t i, std::size_t device);
  void on_exit(std::size_t i, const util::ProcessExit& exit);
  void on_probe_exit(std::size_t i, const util::ProcessExit& exit);
  void on_verify_exit(std::size_t i, const util::ProcessExit& exit);
  bool launch_child(std::size_t i, Child kind, const util::ProcessSpec& spec, std::chrono::seconds timeout);
  void finish(std::size_t i, CaseResult result);
  void fail(std::size_t i, Verdict verdict, std::string reason);
  void set_phase(std::size_t i, const std::string& phase);
  void schedule();
  void enforce_deadlines();
  void handle_interrupt();
  util::SteadyTime next_deadline() const;

  const Config& config_;
  SchedulerOptions options_;
  util::ProcessRunner& runner_;
  const util::Clock& clock_;
  const agent::Agent& agent_;
  Printer& printer_;
  StateStore& store_;
  DevicePool devices_;
  std::vector<CaseRun> runs_;     // one per sample; runner ids are indices into it
  std::vector<CaseEntry> cases_;  // one per case, in case order
  std::size_t done_ = 0;          // cases with a result
  int interrupts_ = 0;
};

}  // namespace kgym::run
