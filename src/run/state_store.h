#pragma once
// Owns the live RunState of a run and persists it: state.json rewritten
// atomically (rename, no fsync: it is rebuilt on resume), events.jsonl
// appended and fsynced. Both are group-committed: transitions mark the state
// dirty and queue events, and flush() — called by the scheduler once per
// event-loop turn, before it waits, and right after each result — writes
// them with one state.json rewrite and one fsync.
// A state.json rewrite costs time in proportion to the number of cases, so
// it is paced by what it costs: after a write that took d, the next waits
// at least max(kStateInterval, kStateCostFactor × d). Its share of the
// harness's time stays under 1 / (kStateCostFactor + 1) however many cases
// a run has, and state.json is at most that interval (plus one write) old.
// A failed write is reported once on stderr and retried at the next
// transition; it never stops the run (results are written separately).
#include <chrono>
#include <filesystem>
#include <string>

#include <nlohmann/json.hpp>

#include "core/result.h"
#include "core/run_state.h"
#include "util/clock.h"

namespace kgym::run {

// What the state.json rewrites cost so far (measured on the write clock).
struct StateWriteStats {
  std::size_t writes = 0;
  util::Seconds total{0};
  util::Seconds last{0};
  std::size_t last_bytes = 0;
};

// A case row's verdict, reason and speedup, from the case's result.
void show_result(CaseState& row, const CaseResult& result);

class StateStore {
 public:
  // state.json and events.jsonl go to `files_dir` (a Slurm task's own dir,
  // docs/cluster.md); by default to the run dir. Writes are timed on the
  // steady clock.
  explicit StateStore(std::filesystem::path run_dir, std::filesystem::path files_dir = {});
  // The same, timing state.json's writes on `write_clock` (tests; it must
  // outlive the store).
  StateStore(std::filesystem::path run_dir, std::filesystem::path files_dir, const util::Clock& write_clock);

  RunState& state() { return state_; }
  CaseState& case_state(std::size_t index) { return state_.cases.at(index); }

  // Marks state.json for rewriting at the next flush().
  void save() { dirty_ = true; }
  // Queues {"t": <unix>, "event": name, "case": id, ...fields} for events.jsonl.
  void event(const std::string& name, const std::string& case_id,
             nlohmann::json fields = nlohmann::json::object());
  // Appends the queued events (one fsync) and rewrites state.json if dirty
  // (stamps updated_at) and due — unless `force` — so a thousand short cases
  // do not rewrite a large state.json a thousand times: due once `now` (the
  // run's clock) is kStateInterval past the last write and the write clock
  // kStateCostFactor × that write's duration past its end.
  void flush(util::SteadyTime now, bool force = false);
  // State changed since the last state.json write (the scheduler then waits
  // at most state_due_in() so the write is not put off).
  bool state_pending() const { return dirty_; }
  // How long after `now` (the run's clock) a state.json write is due; zero
  // when it is due now.
  std::chrono::steady_clock::duration state_due_in(util::SteadyTime now) const;
  const StateWriteStats& write_stats() const { return stats_; }

  static constexpr std::chrono::milliseconds kStateInterval{100};
  static constexpr int kStateCostFactor = 10;

 private:
  void write_state(util::SteadyTime now);

  std::filesystem::path files_dir_;
  const util::Clock& write_clock_;
  RunState state_;
  RunStateWriter writer_;  // keeps each row's text between writes
  bool warned_ = false;
  bool dirty_ = false;
  bool written_ = false;                 // state.json was written once
  util::SteadyTime last_state_write_{};  // run's clock
  util::SteadyTime next_by_cost_{};      // write clock: the last write's end + its spacing
  StateWriteStats stats_;
  std::string pending_events_;  // complete lines, each ending in '\n'
};

}  // namespace kgym::run
