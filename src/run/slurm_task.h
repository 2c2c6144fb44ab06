#pragma once
// `kgym slurm-task` (hidden): one array task of a run on a Slurm cluster
// (docs/cluster.md). It reads which case-sample its array index stands for
// from the run's submission file, loads the run's recorded config, takes
// the devices Slurm granted it, and runs that case-sample from generation
// to result with this machine's scheduler, writing into the shared run
// directory. Its own state.json and events.jsonl go to the case-sample's
// task/ dir (the coordinator reads the phase there), and it leaves an exit
// record beside them.
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "core/backend.h"
#include "run/printer.h"

namespace kgym::run {

struct SlurmTaskOptions {
  std::filesystem::path run_dir;
  int submission = 0;
  int index = 0;  // SLURM_ARRAY_TASK_ID
  std::vector<std::string> kgym_argv0;
  std::optional<int> interrupt_fd;
};

// 0 when the case-sample has its result (whatever its verdict); 1 when it
// could not be run; 2 for a request that names no case-sample.
int run_slurm_task(const SlurmTaskOptions& options, Printer& printer);

// The devices a task was granted, as the run's config spells devices: the
// cores it may run on (cpu), the indices its visibility variable leaves it
// (cuda, npu), else the GPUs Slurm names, else `configured`. `env` looks a
// variable up (getenv in kgym; a map in tests).
std::vector<std::string> granted_devices(const Backend& backend, const std::vector<std::string>& configured,
                                         const std::function<std::optional<std::string>(const char*)>& env);

}  // namespace kgym::run
