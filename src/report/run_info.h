#pragma once
// Recovers what a report says about a run from the files the run left:
// RUN_DIR/run.json (written by the scheduler at start: run_dir, started_at,
// config_path, backend, mode, machine, cases: the selected case ids) and
// RUN_DIR/state.json (status, case list, last update). Either may be
// missing or damaged; what cannot be read stays unknown and is noted.
#include <filesystem>
#include <string>
#include <vector>

#include "report/load_results.h"
#include "report/summary.h"

namespace kgym::report {

struct RecoveredRunInfo {
  RunInfo info;
  std::vector<std::string> notes;  // "run.json: ..." problems worth telling the user
};

// Builds the RunInfo for `run_dir`. The selection is the union of the case
// ids in run.json, in state.json and in `loaded` (finished or not). Status:
// state.json's, else "interrupted" when some selected case has no result,
// else "finished".
RecoveredRunInfo recover_run_info(const std::filesystem::path& run_dir, const LoadedResults& loaded);

}  // namespace kgym::report
