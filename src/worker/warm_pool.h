#pragma once
// The warm worker parents of one `kgym run` (ARCHITECTURE.md "Process
// model of kgym run": Python workers are started once and forked per
// verification). One pair
// per device, started lazily on the device's first verification: a trusted
// zygote for reference workers, and a candidate zygote started inside the
// candidate sandbox (worker/candidate_sandbox.h) so every candidate it forks
// inherits the box. A zygote found dead is started again. Everything lives
// under a private temporary directory removed with the pool; the zygotes
// die with the pool (and with this process, even by kill -9).
#include <cstddef>
#include <expected>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/config.h"
#include "util/cgroup.h"
#include "util/sandbox.h"
#include "util/temp_dir.h"
#include "worker/zygote.h"

namespace kgym::worker {

// warm_workers "on", or "auto" on the cpu backend (the CUDA and NPU
// runtimes cannot be used in a forked child).
bool warm_workers_enabled(const VerifierConfig& config);

struct WarmPoolOptions {
  std::string python;
  std::string backend;
  SandboxConfig sandbox;
  util::SandboxMode sandbox_mode = util::SandboxMode::kNone;
  std::vector<std::filesystem::path> hidden;  // hidden from the candidate zygote
  std::filesystem::path log_dir;              // zygote logs (zygote-<device>-<role>.log)
  // Each device's cores ("0", "0-3"), by device index: on the cpu backend
  // the zygotes of a device run in cpuset cgroups of its cores
  // (util/cgroup.h), so every worker they fork inherits the lease.
  std::vector<std::string> devices;
};

class WarmPool {
 public:
  // Writes the worker script into the pool's directory; fails when that
  // directory cannot be made.
  static std::expected<std::unique_ptr<WarmPool>, std::string> create(WarmPoolOptions options);

  // The zygotes of `device` (an index into the run's devices), started or
  // restarted as needed. An error means this case verifies cold.
  std::expected<WarmEndpoints, std::string> endpoints(std::size_t device);
  // Only the reference zygote of `device` (started or restarted as needed),
  // for one-shot reference work such as the probe (run_forked).
  std::expected<std::filesystem::path, std::string> reference_socket(std::size_t device);

 private:
  struct Device {
    // Before the zygotes: a group outlives the zygote it holds.
    std::optional<util::CpuCgroup> reference_group;
    std::optional<util::CpuCgroup> candidate_group;
    std::optional<Zygote> reference;
    std::optional<Zygote> candidate;
    std::filesystem::path scratch_inside;
    std::string candidate_box;
  };
  explicit WarmPool(WarmPoolOptions options) : options_(std::move(options)), root_("kgym-warm") {}
  std::expected<void, std::string> ensure(std::size_t device, bool candidate,
                                          std::vector<std::string>& notes);
  // The argv that starts a zygote of `device` inside its lease's group
  // (made on first use); `argv` unchanged where no cgroup can be had.
  std::vector<std::string> entering_lease(std::size_t device, bool candidate, std::vector<std::string> argv,
                                          std::vector<std::string>& notes);

  WarmPoolOptions options_;
  util::TempDir root_;
  std::map<std::size_t, Device> devices_;
};

}  // namespace kgym::worker
