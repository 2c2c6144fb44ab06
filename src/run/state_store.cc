#include "run/state_store.h"

#include <algorithm>
#include <cstdio>

#include <fmt/format.h>

#include "core/case_paths.h"
#include "util/clock.h"
#include "util/fs.h"
#include "util/json_text.h"

namespace kgym::run {
namespace {

const util::Clock& steady_clock() {
  static const util::SteadyClock clock;
  return clock;
}

}  // namespace

void show_result(CaseState& row, const CaseResult& result) {
  row.verdict = std::string(to_string(result.verdict));
  row.reason = result.reason;
  if (result.performance) row.speedup = result.performance->speedup.median;
}

StateStore::StateStore(std::filesystem::path run_dir, std::filesystem::path files_dir)
    : StateStore(std::move(run_dir), std::move(files_dir), steady_clock()) {}

StateStore::StateStore(std::filesystem::path run_dir, std::filesystem::path files_dir,
                       const util::Clock& write_clock)
    : files_dir_(files_dir.empty() ? run_dir : std::move(files_dir)), write_clock_(write_clock) {
  state_.run_dir = run_dir.string();
}

std::chrono::steady_clock::duration StateStore::state_due_in(util::SteadyTime now) const {
  if (!written_) return {};
  auto by_interval = last_state_write_ + kStateInterval - now;
  auto by_cost = next_by_cost_ - write_clock_.now();
  return std::max({by_interval, by_cost, std::chrono::steady_clock::duration::zero()});
}

void StateStore::flush(util::SteadyTime now, bool force) {
  if (!pending_events_.empty()) {
    pending_events_.pop_back();  // append_line_durable adds the last '\n'
    auto ok = util::append_line_durable(RunPaths{files_dir_}.events(), pending_events_);
    pending_events_.clear();
    if (!ok && !warned_) {
      warned_ = true;
      fmt::print(stderr, "kgym: warning: {}\n", ok.error());
    }
  }
  if (!dirty_ || (!force && state_due_in(now) > std::chrono::steady_clock::duration::zero())) return;
  write_state(now);
}

void StateStore::write_state(util::SteadyTime now) {
  util::SteadyTime began = write_clock_.now();
  dirty_ = false;
  written_ = true;
  last_state_write_ = now;
  state_.updated_at = util::unix_now();
  std::string text = writer_.text(state_);
  auto ok = util::write_file_atomic(RunPaths{files_dir_}.state(), text, util::Durability::kRenameOnly);
  if (!ok && !warned_) {
    warned_ = true;
    fmt::print(stderr, "kgym: warning: {}\n", ok.error());
  }
  util::SteadyTime ended = write_clock_.now();
  next_by_cost_ = ended + kStateCostFactor * (ended - began);
  ++stats_.writes;
  stats_.last = ended - began;
  stats_.total += stats_.last;
  stats_.last_bytes = text.size();
}

void StateStore::event(const std::string& name, const std::string& case_id, nlohmann::json fields) {
  fields["t"] = util::unix_now();
  fields["event"] = name;
  if (!case_id.empty()) fields["case"] = case_id;
  pending_events_ += util::json_text(fields);
  pending_events_ += '\n';
}

}  // namespace kgym::run
