#pragma once
// What kgym says to Slurm and reads back from it, as pure functions
// (docs/cluster.md): the batch script and sbatch's arguments for one
// submission, the array spec, the parsers of squeue, sacct and `scontrol
// show job` output, and what a task's final state means for its case.
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/config.h"
#include "core/verdict.h"

namespace kgym::run {

// One array task as the scheduler reports it. `task` is -1 for a record of
// still-pending tasks that the scheduler keeps as a range (`pending_range`).
struct SlurmTask {
  std::string array_job;  // the array's job id ("1234")
  int task = -1;          // SLURM_ARRAY_TASK_ID
  std::string state;      // "PENDING", "RUNNING", "CANCELLED", ... (base state, no "by uid")
  std::string node;       // "" when none yet
  std::string reason;     // why it is pending, "" or "None" otherwise
  std::string job_name;
  std::vector<int> pending_range;  // with task == -1: the task ids it stands for
};

// `squeue -h -r -o '%F|%K|%T|%N|%r|%j'`.
std::vector<SlurmTask> parse_squeue(std::string_view text);
// `sacct -n -P -X -o JobID,State,NodeList,JobName`.
std::vector<SlurmTask> parse_sacct(std::string_view text);
// `scontrol -o show job ID`: one line per job record, KEY=VALUE words.
std::vector<SlurmTask> parse_scontrol(std::string_view text);

// MaxArraySize from `scontrol show config` ("MaxArraySize = 1001").
std::optional<int> parse_max_array_size(std::string_view text);

// A state after which the task runs no more (a REQUEUED or PREEMPTED task
// that Slurm requeues comes back as PENDING under the same id).
bool slurm_state_final(std::string_view state);
// The verdict of a case whose task ended in `state` without a result.
Verdict verdict_of_lost_task(std::string_view state);

// "0-3,7%2": the task ids, as ranges, and the array's %N when > 0.
std::string array_spec(std::vector<int> ids, int max_parallel);
// Parses "0-3,7" (and a trailing "%N"); nullopt on anything else.
std::optional<std::vector<int>> parse_task_ids(std::string_view spec);

struct Submission {
  int number = 0;           // 1, 2, ... in the run's slurm dir
  std::string job_name;     // "kgym-<run tag>-<number>": how a resumed coordinator finds its tasks
  std::string script;       // the batch script's path
  std::string log_pattern;  // sbatch --output, with %A and %a
  std::vector<int> ids;     // the array's task ids (indices into the submission's units)
};

// The batch script: the setup lines, then `exec KGYM slurm-task ...`.
std::string batch_script(const SlurmConfig& slurm, const std::vector<std::string>& kgym_argv0,
                         const std::string& run_dir, int submission);
// sbatch's arguments for a submission (without "sbatch"), --parsable first.
std::vector<std::string> sbatch_args(const SlurmConfig& slurm, const Submission& submission);

// The job name prefix of every submission of a run: stable for the run dir,
// short enough for squeue's column.
std::string run_tag(const std::string& run_dir);

}  // namespace kgym::run
