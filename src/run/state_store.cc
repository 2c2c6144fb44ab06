#include "run/state_store.h"

#include <cstdio>

#include <fmt/format.h>

#include "core/case_paths.h"
#include "util/clock.h"
#include "util/fs.h"

namespace kgym::run {

StateStore::StateStore(std::filesystem::path run_dir) : run_dir_(std::move(run_dir)) {
  state_.run_dir = run_dir_.string();
}

void StateStore::flush(util::SteadyTime now, bool force) {
  if (!pending_events_.empty()) {
    pending_events_.pop_back();  // append_line_durable adds the last '\n'
    auto ok = util::append_line_durable(RunPaths{run_dir_}.events(), pending_events_);
    pending_events_.clear();
    if (!ok && !warned_) {
      warned_ = true;
      fmt::print(stderr, "kgym: warning: {}\n", ok.error());
    }
  }
  if (!dirty_ || (!force && now - last_state_write_ < kStateInterval)) return;
  dirty_ = false;
  last_state_write_ = now;
  state_.updated_at = util::unix_now();
  auto ok = util::write_file_atomic(RunPaths{run_dir_}.state(), to_json(state_).dump(2) + "\n",
                                    util::Durability::kRenameOnly);
  if (!ok && !warned_) {
    warned_ = true;
    fmt::print(stderr, "kgym: warning: {}\n", ok.error());
  }
}

void StateStore::event(const std::string& name, const std::string& case_id, nlohmann::json fields) {
  fields["t"] = util::unix_now();
  fields["event"] = name;
  if (!case_id.empty()) fields["case"] = case_id;
  pending_events_ += fields.dump();
  pending_events_ += '\n';
}

}  // namespace kgym::run
