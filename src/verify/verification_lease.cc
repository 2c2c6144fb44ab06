// The CPU lease of a verification (docs/anti-cheat.md "The lease"). On the
// cpu backend a device is a list of cores; every worker, reference and
// candidate, cold or warm, twins included, runs in a cpuset cgroup of
// exactly those cores where this machine allows one (util/cgroup.h): the
// kernel then clamps whatever affinity candidate code asks for. The
// candidate's side has its own cpuacct group, whose counter (or, without
// cgroups, its process trees in /proc) the LeaseWatch reads around every
// timed request.
#include <fmt/format.h>

#include "core/backend.h"
#include "util/cpu_stat.h"
#include "util/proc_tree.h"
#include "verify/verification.h"

namespace kgym::verify::detail {

bool Verification::lease_applies() const { return backend_named(req_.config.backend).devices_are_cores; }

void Verification::ensure_lease_groups() {
  if (lease_groups_tried_ || !lease_applies()) return;
  lease_groups_tried_ = true;
  auto mounts = util::usable_cgroup_mounts();
  if (!mounts) {
    note(fmt::format("lease: no cgroup ({}); the cores are held by affinity, and checked by CPU time, "
                     "affinity and thread counts",
                     mounts.error()));
    return;
  }
  auto reference = util::CpuCgroup::create(*mounts, "verify-reference", req_.device);
  auto candidate = util::CpuCgroup::create(*mounts, "verify-candidate", req_.device);
  if (!reference || !candidate) {
    note(fmt::format("lease: cannot make the cgroups ({}); falling back to affinity and CPU-time checks",
                     !reference ? reference.error() : candidate.error()));
    return;
  }
  note(fmt::format("lease: cold workers run in cpuset cgroups of cores {} ({}, {})", candidate->cores(),
                   reference->cpuset_dir().string(), candidate->cpuset_dir().string()));
  reference_group_.emplace(std::move(*reference));
  candidate_group_.emplace(std::move(*candidate));
}

std::vector<std::string> Verification::entering_lease(Role role, std::vector<std::string> argv) const {
  const auto& group = is_candidate(role) && !req_.candidate_is_reference ? candidate_group_ : reference_group_;
  return group ? group->entering(argv) : argv;
}

std::optional<LeaseWatch> Verification::make_lease_watch() {
  if (!lease_applies() || !candidate_ || !candidate_twin_) return std::nullopt;
  LeaseAllowance allowance{.cores = core_count(req_.device)};
  CpuReader reader;
  std::string source;
  auto usage_reader = [](std::filesystem::path file) -> CpuReader {
    return [file]() -> std::optional<double> {
      auto ns = util::read_cgroup_usage_ns(file);
      return ns ? std::optional<double>(static_cast<double>(*ns)) : std::nullopt;
    };
  };
  if (candidate_->warm() && req_.warm && !req_.warm->candidate_cpu_usage.empty()) {
    reader = usage_reader(req_.warm->candidate_cpu_usage);
    source = "the warm candidate zygote's cpuacct cgroup";
  } else if (candidate_->warm() && req_.warm && req_.warm->candidate_zygote_pid > 0) {
    std::vector<pid_t> roots{static_cast<pid_t>(req_.warm->candidate_zygote_pid)};
    reader = [roots] { return std::optional<double>(util::tree_cpu_ns(roots)); };
    allowance.resolution_ns = 1e9 / util::cpu_ticks_per_second();
    source = "the candidate zygote's process tree in /proc";
  } else if (!candidate_->warm() && candidate_group_) {
    reader = usage_reader(candidate_group_->usage_file());
    source = "the candidate's cpuacct cgroup";
  } else if (!candidate_->warm() && !candidate_twin_->warm()) {
    std::vector<pid_t> roots{candidate_->pid(), candidate_twin_->pid()};
    reader = [roots] { return std::optional<double>(util::tree_cpu_ns(roots)); };
    allowance.resolution_ns = 1e9 / util::cpu_ticks_per_second();
    source = "the candidate workers' process trees in /proc";
  } else {
    note("lease: the candidate's CPU time cannot be read here; not checked");
    return std::nullopt;
  }
  note(fmt::format("lease: {} core(s); the candidate's CPU time from {}", allowance.cores, source));
  return LeaseWatch(allowance, std::move(reader));
}

}  // namespace kgym::verify::detail
