#pragma once
// executor.kind: slurm (docs/cluster.md). The coordinator, on the login
// node, submits every unfinished case-sample as one task of a Slurm job
// array, then polls the queue and keeps state.json and events.jsonl
// current until every task has ended. Each task runs `kgym slurm-task` on
// its node (run/slurm_task.h), which does the whole case-sample there and
// writes its result.json into the shared run directory; the coordinator
// only reads it. A task that ends without a result gets the verdict of its
// final state (sacct, else `scontrol show job`, else the task's exit
// record), marked as lost so that --resume runs it again.
//
// Submissions are files (RUN_DIR/slurm/submission-N.json: the job name and
// the case-sample of each array index) written before sbatch runs, so a
// coordinator killed at any point is resumed without submitting a task
// twice: it adopts every task of the run's job names still in the queue.
#include <chrono>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "core/case_paths.h"
#include "core/case_set.h"
#include "core/config.h"
#include "run/case_book.h"
#include "run/printer.h"
#include "run/scheduler.h"
#include "run/slurm_client.h"
#include "run/state_store.h"
#include "util/clock.h"

namespace kgym::run {

struct CoordinatorOptions {
  std::filesystem::path run_dir;
  std::vector<std::string> kgym_argv0;  // how a node runs this binary
  std::optional<int> interrupt_fd;      // readable once per user interrupt
  // Polls a task must be missing from the queue, with no result, before it
  // is judged lost (a result on a shared filesystem may show up late).
  int polls_before_lost = 2;
};

class SlurmCoordinator {
 public:
  // Slurm's default MaxArraySize (task ids 0..1000), when the cluster does
  // not say.
  static constexpr std::size_t kDefaultMaxArraySize = 1001;

  SlurmCoordinator(const Config& config, CoordinatorOptions options, std::vector<Case> cases,
                   SlurmClient& client, Printer& printer, StateStore& store);
  RunOutcome run();

 private:
  // One case-sample: one array task.
  struct Unit {
    std::size_t case_index = 0;
    int sample = 0;  // 0: the case itself (samples: 1); else 1..K
    CasePaths paths;
    std::optional<CaseResult> result;
    int submission = 0;  // 0: not in the queue
    int task = -1;
    std::string array_job;
    std::string state;
    std::string node;
    int missing = 0;  // consecutive polls it was not in the queue
    bool live() const { return !result && submission > 0; }
  };
  struct SubmissionRecord {
    int number = 0;
    std::string job_name;
    std::string array_job;           // "" until sbatch answered
    std::vector<std::size_t> units;  // array index -> unit
  };

  void add_case(const Case& c);
  void adopt();
  void submit_unfinished();
  void submit(std::vector<std::size_t> units);
  std::optional<std::string> write_submission(const SubmissionRecord& record) const;
  void poll();
  void judge_lost(std::size_t u);
  // `written`: the task wrote the result.json itself, on its node.
  void unit_finished(std::size_t u, CaseResult result, bool written);
  void write_failed(const std::string& error);
  void show_unit(std::size_t u, const std::string& phase);
  bool wait_or_interrupt(std::chrono::milliseconds timeout);
  void cancel_all();
  std::string task_id(const Unit& unit) const;
  std::filesystem::path task_log(const Unit& unit) const;
  std::size_t live_count() const;

  const Config& config_;
  CoordinatorOptions options_;
  SlurmClient& client_;
  Printer& printer_;
  StateStore& store_;
  util::SteadyClock clock_;
  CaseBook book_;  // the cases, their samples' results, what their ends write (run/case_book.h)
  std::vector<std::vector<std::size_t>> case_units_;  // per case, its units' indices into units_
  std::vector<Unit> units_;
  std::vector<SubmissionRecord> submissions_;  // index = number - 1
  std::string tag_;
  std::optional<std::string> write_failure_;  // a result.json that could not be written stops the run
  bool accounting_off_ = false;  // sacct failed once: not asked again
  bool queue_warned_ = false;
  bool interrupted_ = false;
};

}  // namespace kgym::run
