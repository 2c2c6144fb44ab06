#include "run/build_slots.h"

#include <algorithm>

namespace kgym::run {

BuildSlots::BuildSlots(std::set<int> cores, int jobs, std::vector<std::set<int>> device_cores)
    : cores_(std::move(cores)), device_cores_(std::move(device_cores)) {
  if (cores_.empty()) cores_.insert(0);
  int count = static_cast<int>(cores_.size());
  jobs_ = jobs > 0 ? jobs : count;
  per_core_ = (jobs_ + count - 1) / count;
  builds_on_.assign(static_cast<std::size_t>(*cores_.rbegin()) + 1, 0);
}

std::optional<int> BuildSlots::acquire(const std::vector<bool>& blocked) {
  if (running_ >= jobs_) return std::nullopt;
  auto on_blocked_device = [&](int core) {
    for (std::size_t d = 0; d < device_cores_.size(); ++d) {
      if (d < blocked.size() && blocked[d] && device_cores_[d].contains(core)) return true;
    }
    return false;
  };
  // The least busy allowed core, lowest number first.
  std::optional<int> best;
  for (int core : cores_) {
    int load = builds_on_[static_cast<std::size_t>(core)];
    if (load >= per_core_ || on_blocked_device(core)) continue;
    if (!best || load < builds_on_[static_cast<std::size_t>(*best)]) best = core;
  }
  if (best) {
    ++builds_on_[static_cast<std::size_t>(*best)];
    ++running_;
  }
  return best;
}

void BuildSlots::release(int core) {
  auto index = static_cast<std::size_t>(core);
  if (index >= builds_on_.size() || builds_on_[index] == 0) return;
  --builds_on_[index];
  --running_;
}

bool BuildSlots::device_clear(std::size_t device) const {
  if (device >= device_cores_.size()) return true;
  return std::ranges::none_of(device_cores_[device], [&](int core) {
    auto index = static_cast<std::size_t>(core);
    return index < builds_on_.size() && builds_on_[index] > 0;
  });
}

std::set<int> BuildSlots::host_cores() const {
  for (const auto& device : device_cores_) {
    for (int core : device) {
      if (cores_.contains(core)) return {};
    }
  }
  return cores_;
}

std::set<int> build_cores(const std::optional<std::set<int>>& configured, const std::set<int>& all,
                          const std::vector<std::set<int>>& device_cores) {
  if (configured && !configured->empty()) return *configured;
  std::set<int> free = all;
  for (const auto& cores : device_cores) {
    for (int core : cores) free.erase(core);
  }
  return free.empty() ? all : free;
}

}  // namespace kgym::run
