#pragma once
// The books of a run's cases, one for both executors (the local scheduler,
// run/scheduler.h; the Slurm coordinator, run/slurm_coordinator.h): which
// cases and samples there are, what each sample ended with, when a case
// ends (with its only sample, or with the combination of its K samples,
// run/samples.h), and what its end writes: result.json, the reproduction
// bundle, its row of state.json and the events `sample_finished`,
// `finished` and `phase`. A result.json that cannot be written is an
// error the executor stops on (docs/robustness.md): that case stays
// unfinished and runs again on --resume.
#include <cstddef>
#include <expected>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/case_paths.h"
#include "core/case_set.h"
#include "core/config.h"
#include "core/result.h"
#include "run/printer.h"
#include "run/state_store.h"
#include "util/clock.h"

namespace kgym::run {

class CaseBook {
 public:
  struct Entry {
    Case c;
    std::string id;
    CasePaths paths;
    std::vector<int> samples;                        // 0 alone with samples: 1, else 1..K
    std::vector<std::optional<CaseResult>> results;  // per sample, as they end
    std::optional<CaseResult> result;                // the case's, once it ended
  };

  // `combine`: whether a case with samples ends here when its last sample
  // ends (false in a Slurm task, which runs one sample of the case; the
  // coordinator combines them). `clock` paces the store's flushes.
  CaseBook(const Config& config, const std::filesystem::path& run_dir, StateStore& store, Printer& printer,
           const util::Clock& clock, bool combine = true);

  // Adds a case and its row: a result.json from an earlier run ends it at
  // once (true); else it has its samples, none ended yet (false).
  bool add(const Case& c);
  // Sample `sample` of case `c` ended in an earlier run (its own
  // result.json), counted on the row.
  void resumed_sample(std::size_t c, int sample, CaseResult result);

  bool sampled() const { return config_.samples > 1; }
  std::size_t size() const { return entries_.size(); }
  std::size_t done() const { return done_; }
  const Entry& entry(std::size_t c) const { return entries_.at(c); }
  CaseState& row(std::size_t c) { return store_.case_state(c); }
  // Where sample `sample` of case `c` keeps its files.
  CasePaths sample_paths(std::size_t c, int sample) const;

  // Sample `sample` of case `c` ended with `result`. Unless `written` (a
  // Slurm task wrote it on its node), its result.json is written first:
  // with samples: 1 that is the case's own, and the case ends with it. With
  // samples: K the event sample_finished (with `fields`) is recorded, and
  // the case ends with their combination once every sample has a result
  // (a sample lost on a cluster leaves the case's result marked lost, so
  // that --resume runs it again). An error: a result.json could not be
  // written; nothing of the case is counted.
  std::expected<void, std::string> sample_finished(std::size_t c, int sample, CaseResult result, bool written,
                                                   nlohmann::json fields = nlohmann::json::object());
  // A resumed run stopped after the last sample of a case ended but before
  // the case's result was written: the case ends now.
  std::expected<void, std::string> finish_complete_cases();

  // The finished cases' results, in case order (moved out: the books are
  // closed).
  std::vector<CaseResult> take_results();

 private:
  std::expected<void, std::string> finish_if_complete(std::size_t c);
  std::expected<void, std::string> case_finished(std::size_t c, CaseResult result, bool written);
  std::optional<std::size_t> slot_of(std::size_t c, int sample) const;

  const Config& config_;
  std::filesystem::path run_dir_;
  StateStore& store_;
  Printer& printer_;
  const util::Clock& clock_;
  bool combine_;
  std::vector<Entry> entries_;
  std::size_t done_ = 0;
};

}  // namespace kgym::run
