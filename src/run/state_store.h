#pragma once
// Owns the live RunState of a run and persists it: state.json rewritten
// atomically (rename, no fsync: it is rebuilt on resume), events.jsonl
// appended and fsynced. Both are group-committed: transitions mark the state
// dirty and queue events, and flush() — called by the scheduler once per
// event-loop turn, before it waits, and right after each result — writes
// them with one state.json rewrite and one fsync.
// A failed write is reported once on stderr and retried at the next
// transition; it never stops the run (results are written separately).
#include <chrono>
#include <filesystem>
#include <string>

#include <nlohmann/json.hpp>

#include "core/run_state.h"
#include "util/clock.h"

namespace kgym::run {

class StateStore {
 public:
  explicit StateStore(std::filesystem::path run_dir);

  RunState& state() { return state_; }
  CaseState& case_state(std::size_t index) { return state_.cases.at(index); }

  // Marks state.json for rewriting at the next flush().
  void save() { dirty_ = true; }
  // Queues {"t": <unix>, "event": name, "case": id, ...fields} for events.jsonl.
  void event(const std::string& name, const std::string& case_id,
             nlohmann::json fields = nlohmann::json::object());
  // Appends the queued events (one fsync) and rewrites state.json if dirty
  // (stamps updated_at) — at most every kStateInterval unless `force`, so a
  // thousand short cases do not rewrite a large state.json a thousand times.
  // `now` comes from the run's clock.
  void flush(util::SteadyTime now, bool force = false);
  // State changed since the last state.json write (the scheduler then waits
  // at most kStateInterval so the write is not put off).
  bool state_pending() const { return dirty_; }
  static constexpr std::chrono::milliseconds kStateInterval{100};

 private:
  std::filesystem::path run_dir_;
  RunState state_;
  bool warned_ = false;
  bool dirty_ = false;
  util::SteadyTime last_state_write_{};
  std::string pending_events_;  // complete lines, each ending in '\n'
};

}  // namespace kgym::run
