#pragma once
// The four workers of a verification as one object (internal to verify/):
// the reference, the candidate and their twins (role.h), the cpuset groups
// their cold processes run in, and every request to them. A request's
// outcome is its reply or the Failure it means (worker_failures.h): a worker
// that misses its deadline is killed here, and what happened goes to the
// verification's log through `note`. Verification decides how each worker
// starts (warm or cold, boxed, on which files); this owns them once they
// run, and ends them: the groups are declared before the processes, so a
// group outlives its workers and then kills whatever of theirs is left in it.
#include <algorithm>
#include <array>
#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "util/cgroup.h"
#include "verify/failure.h"
#include "verify/role.h"
#include "verify/worker_failures.h"
#include "worker/protocol.h"
#include "worker/worker_process.h"

namespace kgym::verify::detail {

class WorkerSet {
 public:
  // `deadline`: the verification's; a call is bounded by the earlier of it
  // and `call_timeout` from now. `context` gives what a failure's words
  // depend on at the time it happens (the box, the sizes).
  WorkerSet(worker::Deadline deadline, std::chrono::seconds call_timeout, std::function<void(const std::string&)> note,
            std::function<FailureContext()> context)
      : deadline_(deadline), call_timeout_(call_timeout), note_(std::move(note)), context_(std::move(context)) {}

  std::optional<worker::WorkerProcess>& slot(Role role) { return workers_[index(role)]; }
  const std::optional<worker::WorkerProcess>& slot(Role role) const { return workers_[index(role)]; }
  worker::WorkerProcess& at(Role role) { return *slot(role); }
  bool has(Role role) const { return slot(role).has_value(); }
  bool all() const {
    return std::all_of(workers_.begin(), workers_.end(), [](const auto& w) { return w.has_value(); });
  }
  // Every worker started cold (all(): each runs in its side's group).
  bool none_warm() const {
    return std::none_of(workers_.begin(), workers_.end(), [](const auto& w) { return w && w->warm(); });
  }
  // Their pids (host pids), in role order; all() first.
  std::vector<pid_t> pids() const;
  // Asks each running worker in turn to end within `grace`, else kills it.
  void shutdown(std::chrono::seconds grace);

  // The cpuset groups of cold workers, one per side (verification_lease.cc
  // makes them); an A/A run's candidate workers join the reference's.
  void set_groups(util::CpuCgroup reference, util::CpuCgroup candidate) {
    reference_group_.emplace(std::move(reference));
    candidate_group_.emplace(std::move(candidate));
  }
  const std::optional<util::CpuCgroup>& group(bool candidate_side) const {
    return candidate_side ? candidate_group_ : reference_group_;
  }

  worker::Deadline deadline() const { return deadline_; }
  worker::Deadline call_deadline() const { return std::min(deadline_, worker::Clock::now() + call_timeout_); }

  // Sends `request` to `role` and returns its successful reply, bounded by
  // the call's deadline (else the verification's).
  std::expected<worker::Message, Failure> call(Role role, const worker::Message& request, std::string_view what,
                                               bool bounded_by_call_timeout = true);
  // The next reply of `role`, by `deadline`.
  std::expected<worker::Message, Failure> receive(Role role, std::string_view what, worker::Deadline deadline);
  // A channel error of `role` (from a send or receive the caller made) as
  // the Failure it means; the worker is killed when it timed out.
  // `overall_deadline`: the deadline was the verification's, not a call's.
  Failure channel_failure(Role role, const worker::ChannelError& error, std::string_view what,
                          bool overall_deadline);

 private:
  static std::size_t index(Role role) { return static_cast<std::size_t>(role); }

  worker::Deadline deadline_;
  std::chrono::seconds call_timeout_;
  std::function<void(const std::string&)> note_;
  std::function<FailureContext()> context_;
  // Declared before the workers (see above).
  std::optional<util::CpuCgroup> reference_group_;
  std::optional<util::CpuCgroup> candidate_group_;
  std::array<std::optional<worker::WorkerProcess>, 4> workers_;
};

}  // namespace kgym::verify::detail
