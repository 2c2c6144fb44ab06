#pragma once
// The single-threaded event loop that takes every selected case from
// `pending` to a result. Each sample's lifecycle is a SampleFlow
// (run/sample_flow.h); the loop only carries out what the flows ask: it
// starts their children through the ProcessRunner seam and supervises them
// all with one poll and a deadline each, leases devices, bounds concurrency,
// handles interrupts, and keeps state.json/events.jsonl and the terminal up
// to date. With `samples: K` each case is generated and verified K times
// independently and reports the best sample with its pass@k
// (run/samples.h). Every transition is saved and every finished case's
// result.json is written before the next one is reported.
#include <cstdint>
#include <filesystem>
#include <optional>
#include <set>
#include <vector>

#include "agent/agent.h"
#include "core/case_paths.h"
#include "core/case_set.h"
#include "core/config.h"
#include "core/result.h"
#include "run/build_slots.h"
#include "run/case_book.h"
#include "run/device_pool.h"
#include "run/printer.h"
#include "run/sample_flow.h"
#include "run/state_store.h"
#include "util/process_runner.h"

namespace kgym::run {

struct SchedulerOptions : FlowOptions {
  std::optional<int> interrupt_fd;  // readable once per user interrupt
  std::chrono::milliseconds kill_grace{3000};
  // A Slurm task (run/slurm_task.h) runs one sample of a case run with
  // samples > 1: only that one; the case's own result is the coordinator's.
  std::optional<int> only_sample;
};

struct RunOutcome {
  std::vector<CaseResult> results;  // finished cases, in case order (with samples: the case's record)
  std::size_t not_run = 0;          // cases left unfinished by an interrupt or a write failure
  bool interrupted = false;
  // A result.json that could not be written (disk full, file size limit):
  // the loop stopped as on an interrupt, and that case counts as not run.
  std::optional<std::string> write_failure;
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
  // A sample as the loop sees it: its flow and what the loop holds for it.
  struct Sample {
    SampleFlow flow;
    std::size_t case_index = 0;  // into book_ and the state's case rows
    bool started = false;        // start() was called
    bool running = false;        // a child of its flow is live
    bool waiting_device = false;
    bool waiting_build = false;
    std::optional<int> build_core;             // held while its build runs
    std::optional<util::SteadyTime> deadline;  // of the running child
    bool deadline_hit = false;
    std::optional<std::size_t> device;  // leased for verification, or from before generation
    bool done() const { return flow.phase() == Phase::kDone; }
    bool active() const { return started && !done(); }
  };
  // A case: its samples (indices into samples_) and, once every one has
  // ended, its own result.

  // scheduler_samples.cc: cases and their samples, device leases.
  void add_case(Case c);
  bool sampled() const { return config_.samples > 1; }
  CaseState& row_of(std::size_t i);
  std::string holder_name(std::size_t i) const;
  std::optional<std::size_t> lease_device(std::size_t i);
  void release_device(std::size_t i);
  void sample_finished(std::size_t i, CaseResult result);
  void show_live_sample(std::size_t c);

  // scheduler.cc: the loop.
  void start(std::size_t i);
  void apply(std::size_t i, Step step);
  void record_notes(std::size_t i);
  void set_phase(std::size_t i, const std::string& phase);
  void finish(std::size_t i, CaseResult result);
  void grant_device(std::size_t i);
  void grant_build(std::size_t i);
  void release_build(std::size_t i);
  void on_exit(std::size_t i, const util::ProcessExit& exit);
  void schedule();
  void enforce_deadlines();
  void handle_interrupt();
  void write_failed(const std::string& error);
  void stop(std::string_view why);
  util::SteadyTime next_deadline() const;

  const Config& config_;
  SchedulerOptions options_;
  util::ProcessRunner& runner_;
  const util::Clock& clock_;
  const agent::Agent& agent_;
  Printer& printer_;
  StateStore& store_;
  DevicePool devices_;
  BuildSlots builds_;
  std::string host_cpus_;         // where agents and probes run ("" = anywhere)
  std::vector<Sample> samples_;   // runner ids are indices into it
  CaseBook book_;                 // the cases, their samples' results, what their ends write
  std::vector<std::vector<std::size_t>> case_samples_;  // per case, its samples' indices into samples_
  std::set<std::size_t> live_;    // samples started and not done (at most `concurrency`)
  std::size_t next_start_ = 0;    // the samples before it are started or done
  int interrupts_ = 0;            // user interrupts, or 1 once a write failure stopped the run
  std::optional<std::string> write_failure_;
};

}  // namespace kgym::run
