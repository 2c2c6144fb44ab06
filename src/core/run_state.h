#pragma once
// state.json: the live state of a run, rewritten atomically on every
// transition by run/ and read by monitor/. Times are wall-clock UNIX seconds
// (they only stamp the record; durations inside the harness use a steady
// clock).
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace kgym {

inline constexpr int kStateSchemaVersion = 1;

struct CaseState {
  std::string id;
  // run/sample_flow.h's Phase: pending|probing|generating|checking|
  // building|waiting_device|verifying|done; not_run for a case an interrupt left.
  std::string phase = "pending";
  std::string stage;  // workflow stage name, "" when none
  int attempt = 0;
  std::optional<int> pid;
  std::optional<std::string> device;
  std::optional<double> started_at;        // case left pending
  std::optional<double> phase_started_at;  // current phase began
  std::optional<double> finished_at;
  std::optional<std::string> verdict;  // set when phase == done
  std::optional<double> speedup;
  std::string reason;
  std::vector<std::string> failed_gates;  // workflow: the checks the last attempt failed
  // A case run with samples > 1 (absent from the JSON otherwise): the
  // sample the phase belongs to (from 1), how many there are, how many ended.
  int sample = 0;
  int samples = 0;
  int samples_done = 0;
  // agent.feedback: the refinement round the case-sample is in (from 2;
  // 0 in the first round and without feedback: absent from the JSON).
  int round = 0;
  // executor.kind slurm: the array task ("1234_5") and its node, once known.
  std::optional<std::string> job;
  std::optional<std::string> node;

  bool operator==(const CaseState&) const = default;
};

struct RunState {
  int schema_version = kStateSchemaVersion;
  std::string run_dir;
  std::string status = "running";  // running|finished|interrupted
  int harness_pid = 0;
  double started_at = 0;
  double updated_at = 0;
  double monitor_poll_sec = 1.0;     // the run's monitor.poll_sec: how often a monitor rereads this file
  std::vector<std::string> devices;  // the run's device pool, in order; empty when unknown (older files)
  std::vector<CaseState> cases;
  // Device name -> who holds it now ("level1/2_Op" or "level1/2_Op s2/3");
  // a device missing from the map is free. nullopt in older files, whose
  // holders are read off the case rows instead.
  std::optional<std::map<std::string, std::string>> device_holders;
};

nlohmann::json to_json(const RunState& s);

// state.json's text, util::json_text(to_json(s), 2) + "\n" byte for byte, made row by
// row: no tree of the whole document is built, and a row equal to the one
// the last text() was made from keeps its text, so a rewrite after a few
// transitions serialises only the rows they changed (the rest is a
// comparison and a copy). Memory: one copy of each row and of its text.
// Invalid UTF-8 in a string becomes U+FFFD (util/json_text.h).
class RunStateWriter {
 public:
  std::string text(const RunState& s);

 private:
  struct Row {
    CaseState state;
    std::string text;  // indented as an element of "cases"
  };
  std::vector<Row> rows_;
};
// Throws nlohmann::json::exception on a malformed document.
RunState run_state_from_json(const nlohmann::json& j);

}  // namespace kgym
