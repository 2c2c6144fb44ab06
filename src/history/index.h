#pragma once
// Indexing run directories into the history database (docs/history.md).
// A run directory is one holding run.json; its cases are read the way
// `kgym report` reads them (report/load_results.h). Indexing is
// incremental: a run whose files are unchanged since it was last indexed
// (the fingerprint of run.json, state.json and every case's result.json:
// relative path, size, modification time) is skipped; a changed one — a run
// still in progress, a resumed one — has its row updated and its results
// replaced, in one transaction.
#include <expected>
#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "history/sqlite.h"

namespace kgym::history {

enum class IndexAction { kAdded, kUpdated, kUnchanged };
std::string_view to_string(IndexAction a);

struct IndexedRun {
  std::filesystem::path run_dir;
  IndexAction action = IndexAction::kUnchanged;
  int results = 0;  // result rows the run has now
  // "path: why" for unreadable result files and for results of cases the
  // run did not select (report::load_results' warnings)
  std::vector<std::string> skipped;
};

// Run directories under `roots`: a root holding run.json is a run itself;
// otherwise its sub-directories are searched (a run's own cases/ is never
// entered), a few levels deep. Sorted, duplicates removed.
std::vector<std::filesystem::path> find_runs(const std::vector<std::filesystem::path>& roots);

// Indexes one run directory. An error (no readable run.json, a database
// failure) is returned as a message naming the run.
std::expected<IndexedRun, std::string> index_run(Database& db, const std::filesystem::path& run_dir);

// The hash runs of "the same configuration" share: SHA-256 of run.json's
// `config` record without the keys that only spread the work (concurrency,
// monitor, executor, output). "" when the record is absent.
std::string config_hash(const nlohmann::json& config_record);

}  // namespace kgym::history

namespace kgym::history {

// What `kgym run` does at its end with history.db set: opens `db_file` and
// indexes `run_dir`; returns the line to print — "history: ..." on
// success, "kgym: warning: ..." on failure (the run's files are untouched).
std::string index_after_run(const std::filesystem::path& db_file, const std::filesystem::path& run_dir);

}  // namespace kgym::history
