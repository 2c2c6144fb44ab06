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
  // "run.json: ..." problems worth telling the user, and load_results'
  // warnings (a result.json of a case the run did not select).
  std::vector<std::string> notes;
  // Records a report must not be built without, each with its fix
  // (core/record_files.h): a result.json that cannot be read (its case
  // would silently count as not run), a run.json or state.json from a
  // newer kgym (misread otherwise).
  std::vector<std::string> errors;
};

// Builds the RunInfo for `run_dir` (a damaged run.json or state.json is a
// note: what it held stays unknown). The selection is the union of the case
// ids in run.json, in state.json and in `loaded` (finished or not). Status:
// state.json's, else "interrupted" when some selected case has no result,
// else "finished".
RecoveredRunInfo recover_run_info(const std::filesystem::path& run_dir, const LoadedResults& loaded);

}  // namespace kgym::report
