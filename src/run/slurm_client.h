#pragma once
// The seam between kgym and a Slurm cluster: sbatch, squeue, sacct,
// scontrol and scancel as calls. `command_slurm_client()` runs the real
// commands (found on PATH, SLURM_CONF as the environment has it); tests of
// the coordinator use a fake.
#include <expected>
#include <memory>
#include <string>
#include <vector>

#include "run/slurm_jobs.h"

namespace kgym::run {

class SlurmClient {
 public:
  virtual ~SlurmClient() = default;
  // `sbatch ARGS`: the job id it printed.
  virtual std::expected<std::string, std::string> submit(const std::vector<std::string>& args) = 0;
  // The tasks still in the queue of the jobs named `names` (one line per task).
  virtual std::expected<std::vector<SlurmTask>, std::string> queue(const std::vector<std::string>& names) = 0;
  // The accounting records of `jobs`; an error where accounting is off.
  virtual std::expected<std::vector<SlurmTask>, std::string> accounting(
      const std::vector<std::string>& jobs) = 0;
  // What the controller still remembers of `job` (MinJobAge after its end).
  virtual std::expected<std::vector<SlurmTask>, std::string> show(const std::string& job) = 0;
  virtual std::expected<void, std::string> cancel(const std::vector<std::string>& jobs) = 0;
  // The cluster's MaxArraySize (`scontrol show config`): task ids are below it.
  virtual std::expected<int, std::string> max_array_size() = 0;
};

std::unique_ptr<SlurmClient> command_slurm_client();

}  // namespace kgym::run
