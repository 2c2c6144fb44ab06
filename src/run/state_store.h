#pragma once
// Owns the live RunState of a run and persists it: state.json rewritten
// atomically after every transition, events.jsonl appended and fsynced.
// A failed write is reported once on stderr and retried at the next
// transition; it never stops the run (results are written separately).
#include <filesystem>
#include <string>

#include <nlohmann/json.hpp>

#include "core/run_state.h"

namespace kgym::run {

class StateStore {
 public:
  explicit StateStore(std::filesystem::path run_dir);

  RunState& state() { return state_; }
  CaseState& case_state(std::size_t index) { return state_.cases.at(index); }

  // Writes state.json now (stamps updated_at).
  void save();
  // Appends {"t": <unix>, "event": name, "case": id, ...fields} to events.jsonl.
  void event(const std::string& name, const std::string& case_id,
             nlohmann::json fields = nlohmann::json::object());

 private:
  std::filesystem::path run_dir_;
  RunState state_;
  bool warned_ = false;
};

}  // namespace kgym::run
