#pragma once
// `kgym history case` and `kgym history regressions`: reads of the history
// database (docs/history.md). Pure reads; errors come back as messages.
#include <cstdint>
#include <expected>
#include <optional>
#include <string>
#include <vector>

#include "history/sqlite.h"

namespace kgym::history {

struct CaseEntry {
  std::string run_name, run_dir;
  std::optional<std::string> model;
  std::optional<double> started_at;  // unix seconds
  std::string verdict;
  std::optional<double> speedup, speedup_lo, speedup_hi;
};

// Every indexed result of `case_id`, newest run first.
std::expected<std::vector<CaseEntry>, std::string> case_history(Database& db, const std::string& case_id);
std::string case_history_table(const std::string& case_id, const std::vector<CaseEntry>& entries);

struct Regression {
  std::string case_id;
  std::string kind;  // "now fails" | "slower"
  CaseEntry before;  // the earlier run's result
  CaseEntry now;
};

struct RegressionReport {
  std::string run_name, run_dir, config_hash;
  int earlier_runs = 0;                 // earlier runs of the same config hash
  std::vector<Regression> regressions;  // case id order
};

// `run`: a run directory (indexed) or a run name (the newest run of that
// name). Compares each of its cases with the newest earlier result of the
// case in a run of the same config hash: a case that passed there and not
// now, or whose speedup interval now lies entirely below the earlier one.
std::expected<RegressionReport, std::string> regressions(Database& db, const std::string& run);
std::string regressions_text(const RegressionReport& report);

}  // namespace kgym::history
