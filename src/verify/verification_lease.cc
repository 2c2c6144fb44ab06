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

bool Verification::lease_applies() const { return backend_of(req_.config).devices_are_cores; }

void Verification::ensure_lease_groups() {
  if (lease_groups_tried_ || !lease_applies()) return;
  lease_groups_tried_ = true;
  auto mounts = util::usable_cgroup_mounts();
  if (!mounts) {
    note(
        fmt::format("lease: no cgroup ({}); the cores are held by affinity, and checked by CPU time, "
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
  workers_.set_groups(std::move(*reference), std::move(*candidate));
}

// An A/A run's candidate is the reference: its cold workers join the
// reference's group.
const std::optional<util::CpuCgroup>& Verification::lease_group(bool candidate) const {
  return workers_.group(candidate && !req_.candidate_is_reference);
}

std::vector<std::string> Verification::entering_lease(Role role, std::vector<std::string> argv) const {
  const auto& group = lease_group(is_candidate(role));
  return group ? group->entering(argv) : argv;
}

namespace {

CpuReader usage_reader(std::filesystem::path file) {
  return [file]() -> std::optional<double> {
    auto ns = util::read_cgroup_usage_ns(file);
    return ns ? std::optional<double>(static_cast<double>(*ns)) : std::nullopt;
  };
}

SideReader tree_reader(std::vector<pid_t> roots, std::string source) {
  return {[roots] { return std::optional<double>(util::tree_cpu_ns(roots)); }, std::move(source), true};
}

}  // namespace

// Each side's CPU time is read the same way where it can be: its warm
// zygote's cpuacct group or process tree, its cold workers' group or
// process trees.
std::optional<SideReader> Verification::side_reader(bool candidate) const {
  const auto& first = workers_.slot(candidate ? Role::kCandidate : Role::kReference);
  const auto& twin = workers_.slot(candidate ? Role::kCandidateTwin : Role::kTwin);
  const auto& group = lease_group(candidate);
  const char* side = candidate ? "candidate" : "reference";
  if (!first || !twin) return std::nullopt;
  if (first->warm() && req_.warm) {
    const auto& usage = candidate ? req_.warm->candidate_cpu_usage : req_.warm->reference_cpu_usage;
    int zygote = candidate ? req_.warm->candidate_zygote_pid : req_.warm->reference_zygote_pid;
    if (!usage.empty())
      return SideReader{usage_reader(usage), fmt::format("the warm {} zygote's cpuacct cgroup", side)};
    if (zygote > 0)
      return tree_reader({static_cast<pid_t>(zygote)},
                         fmt::format("the {} zygote's process tree in /proc", side));
    return std::nullopt;
  }
  if (first->warm() || twin->warm()) return std::nullopt;
  if (group)
    return SideReader{usage_reader(group->usage_file()), fmt::format("the {}'s cpuacct cgroup", side)};
  return tree_reader({first->pid(), twin->pid()},
                     fmt::format("the {} workers' process trees in /proc", side));
}

// An A/A run's cold candidate workers are in the reference's group
// (lease_group): where the reference's are too, that one group holds all
// four. In an A/A run, a side with one worker forked warm and the other
// spawned cold (no group holds both) is read from the four workers' process
// trees in /proc. Not for a candidate: a process it detaches from its tree
// would read as another's load, and that share widens the clock check.
std::optional<SideReader> Verification::sides_cpu_reader() const {
  if (!lease_applies() || !workers_.all()) return std::nullopt;
  auto candidate = side_reader(true);
  auto reference = side_reader(false);
  bool one_group = req_.candidate_is_reference && workers_.group(false) && workers_.none_warm();
  if (one_group && reference) return reference;
  if (candidate && reference) {
    return SideReader{[candidate = std::move(candidate->read),
                       reference = std::move(reference->read)]() -> std::optional<double> {
                        auto c = candidate();
                        auto r = reference();
                        if (!c || !r) return std::nullopt;
                        return *c + *r;
                      },
                      fmt::format("{} and {}", reference->source, candidate->source),
                      candidate->ticks || reference->ticks};
  }
  if (!req_.candidate_is_reference) return std::nullopt;
  return tree_reader(workers_.pids(), "the four workers' process trees in /proc");
}

std::optional<LeaseWatch> Verification::make_lease_watch() {
  if (!lease_applies() || !workers_.has(Role::kCandidate) || !workers_.has(Role::kCandidateTwin)) return std::nullopt;
  if (req_.candidate_is_reference) {
    note("lease: the candidate is the reference (an A/A run); not watched");
    return std::nullopt;
  }
  auto candidate = side_reader(true);
  if (!candidate) {
    note("lease: the candidate's CPU time cannot be read here; not checked");
    return std::nullopt;
  }
  auto reference = side_reader(false);
  LeaseAllowance allowance{.cores = core_count(req_.device)};
  if (candidate->ticks || (reference && reference->ticks))
    allowance.resolution_ns = 1e9 / util::cpu_ticks_per_second();
  note(fmt::format("lease: {} core(s); the candidate's CPU time from {}, the reference's {}", allowance.cores,
                   candidate->source,
                   reference ? "from " + reference->source
                             : std::string("not read (work between calls is judged by wall time)")));
  return LeaseWatch(allowance, std::move(candidate->read),
                    reference ? std::move(reference->read) : CpuReader{});
}

}  // namespace kgym::verify::detail
