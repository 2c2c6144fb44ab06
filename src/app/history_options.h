#pragma once
// The options every `kgym history` and `kgym leaderboard` command shares:
// where the database is (docs/history.md "Location").
#include <filesystem>
#include <optional>
#include <string>

#include <CLI/CLI.hpp>

#include "history/sqlite.h"

namespace kgym::app {

struct HistoryDbOptions {
  std::string db;      // --db FILE
  std::string config;  // --config FILE: its history.db
};

void add_history_db_options(CLI::App& app, HistoryDbOptions& options);

// The database the options name, opened and migrated; nullopt after
// printing why not (a bad config, an unopenable file) to stderr.
std::optional<history::Database> open_history_db(const HistoryDbOptions& options, std::string_view command);

}  // namespace kgym::app
