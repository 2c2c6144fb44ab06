#pragma once
// Reading a run directory's per-case records and writing its summary
// files. A corrupt or unreadable result.json is reported with its path and
// skipped; it never stops the others from being read.
#include <expected>
#include <filesystem>
#include <string>
#include <vector>

#include "core/result.h"
#include "report/summary.h"

namespace kgym::report {

struct LoadError {
  std::filesystem::path path;
  std::string message;  // what was wrong, e.g. the JSON parser's message
};

struct LoadedResults {
  std::vector<CaseResult> results;  // case id order (see case_order.h)
  // Case directories with no usable result.json (not finished, or corrupt),
  // as case ids "<level>/<N>_<Name>", in case id order.
  std::vector<std::string> unfinished_case_ids;
  std::vector<LoadError> errors;
  // One line each, naming the file: a result.json found for a case the run
  // did not select (never read, never counted), or a run.json without its
  // selection (then every case directory is read).
  std::vector<std::string> warnings;
};

// Reads RUN_DIR/cases/<id>/result.json for each case id the run selected:
// run.json's "cases" list. A result.json under cases/ for any other case is
// not read; a warning names it (a run writes results only for its own
// cases, so something else put it there). Without that list (run.json
// missing or damaged, or one that lacks "cases") every case directory is
// read, with a warning saying so. A result whose case_id differs from its
// directory is an error (the case is then unfinished). A missing cases/
// directory gives an empty result with one error.
LoadedResults load_results(const std::filesystem::path& run_dir);

// Summarizes `results` (selection and run facts from `info`) and writes
// RUN_DIR/summary.json, RUN_DIR/summary.md and RUN_DIR/report.html (which
// also reads run.json, the configuration file and which case files exist),
// each atomically. Returns
// the summary that was written, or a message naming the file that failed.
std::expected<Summary, std::string> write_summary(const std::filesystem::path& run_dir,
                                                  const std::vector<CaseResult>& results,
                                                  const RunInfo& info);

}  // namespace kgym::report
