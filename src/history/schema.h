#pragma once
// The history database's schema (docs/history.md "Schema"): ordered
// migrations, the version in PRAGMA user_version, WAL and a busy timeout so
// several kgym processes may index into one file at once.
#include <expected>
#include <filesystem>
#include <string>

#include "history/sqlite.h"

namespace kgym::history {

// The schema version this kgym writes: the number of migrations.
int schema_version();

// Applies migrations user_version+1 .. `target` (default: all) in one
// IMMEDIATE transaction each, re-reading the version under the lock, so a
// concurrent opener never applies one twice. Throws SqlError; a database of
// a newer kgym (user_version above every migration) is an error too.
void migrate(Database& db, int target = -1);

// Opens `file` (creating it and its directory), switches it to WAL, sets a
// 30 s busy timeout and migrates it to schema_version(). The error names
// the file.
std::expected<Database, std::string> open_history(const std::filesystem::path& file);

}  // namespace kgym::history
