#pragma once
// Where the history database lives (docs/history.md "Location"): --db,
// else the config's history.db, else $XDG_DATA_HOME/kgym/history.db
// (~/.local/share/kgym/history.db).
#include <filesystem>
#include <optional>

namespace kgym::history {

std::filesystem::path default_history_db();

std::filesystem::path history_db_path(const std::optional<std::filesystem::path>& flag,
                                      const std::optional<std::filesystem::path>& configured);

}  // namespace kgym::history
