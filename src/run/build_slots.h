#pragma once
// Where the build stage runs (docs/build.md): each build on one core of the
// cores builds may use, never on a core a verification holds. On a machine
// where every core is a device the two take turns per core: a device is
// leased only when no build runs on its cores, and a build starts only on
// a core of no leased device. Pure bookkeeping; the loop (run/scheduler)
// asks and tells.
#include <cstddef>
#include <optional>
#include <set>
#include <vector>

namespace kgym::run {

class BuildSlots {
 public:
  // `cores`: those builds may use; `jobs`: builds at once (0 = one per
  // core); `device_cores`: per device, the cores it holds (empty for a
  // device that is not a set of cores: a GPU's verification holds none).
  BuildSlots(std::set<int> cores, int jobs, std::vector<std::set<int>> device_cores);

  // A core for one more build, on no device in `blocked` (leased, or kept
  // free for a verification that waits); nullopt when none may start now.
  std::optional<int> acquire(const std::vector<bool>& blocked);
  void release(int core);
  // Whether no build runs on the device's cores.
  bool device_clear(std::size_t device) const;
  int running() const { return running_; }
  // The build cores when no device holds any of them (agents and probes
  // run there too); empty where builds share cores with devices.
  std::set<int> host_cores() const;
  int jobs() const { return jobs_; }
  const std::set<int>& cores() const { return cores_; }

 private:
  std::set<int> cores_;
  int jobs_ = 1;
  int per_core_ = 1;
  std::vector<std::set<int>> device_cores_;
  std::vector<int> builds_on_;  // per core number
  int running_ = 0;
};

// The cores builds may use: `configured` (build.cores) when set; else the
// cores no device holds, when there are any; else every core.
std::set<int> build_cores(const std::optional<std::set<int>>& configured, const std::set<int>& all,
                          const std::vector<std::set<int>>& device_cores);

}  // namespace kgym::run
