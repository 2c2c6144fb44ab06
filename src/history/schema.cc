#include "history/schema.h"

#include <array>
#include <string_view>
#include <system_error>
#include <thread>

#include <fmt/format.h>

namespace kgym::history {
namespace {

// Migration i (from 1) takes the schema from version i-1 to i. Append only:
// a released migration never changes.
constexpr std::array<std::string_view, 4> kMigrations = {
    // 1: runs and their per-case results.
    R"sql(
CREATE TABLE runs (
  id            INTEGER PRIMARY KEY,
  run_dir       TEXT NOT NULL UNIQUE,
  name          TEXT NOT NULL,
  model         TEXT,
  agent         TEXT,
  workflow      TEXT,
  config_hash   TEXT,
  torch_version TEXT,
  torch_build   TEXT,
  machine       TEXT,
  backend       TEXT,
  mode          TEXT,
  started_at    REAL,
  ended_at      REAL,
  status        TEXT NOT NULL,
  fingerprint   TEXT NOT NULL,
  indexed_at    REAL NOT NULL
);
CREATE TABLE results (
  run_id      INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  case_id     TEXT NOT NULL,
  level       TEXT NOT NULL,
  verdict     TEXT NOT NULL,
  speedup     REAL,
  speedup_lo  REAL,
  speedup_hi  REAL,
  cost        REAL,
  tokens_in   INTEGER,
  tokens_out  INTEGER,
  cheat_rule  TEXT,
  execution   TEXT NOT NULL,
  PRIMARY KEY (run_id, case_id)
);
CREATE INDEX results_by_case ON results(case_id);
)sql",
    // 2: samples (pass@k) and A/A baselines; runs found by config.
    R"sql(
ALTER TABLE results ADD COLUMN samples_n INTEGER;
ALTER TABLE results ADD COLUMN samples_passed INTEGER;
ALTER TABLE results ADD COLUMN baseline INTEGER NOT NULL DEFAULT 0;
CREATE INDEX runs_by_config ON runs(config_hash, started_at);
)sql",
    // 3: refinement rounds (agent.feedback): each case's rounds, for
    // `kgym leaderboard --round`.
    R"sql(
CREATE TABLE result_rounds (
  run_id      INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  case_id     TEXT NOT NULL,
  round       INTEGER NOT NULL,
  verdict     TEXT NOT NULL,
  speedup     REAL,
  speedup_lo  REAL,
  speedup_hi  REAL,
  tokens      INTEGER,
  cost        REAL,
  PRIMARY KEY (run_id, case_id, round)
);
)sql",
    // 4: the roofline (docs/roofline.md): a passing case's sound sol, for the
    // leaderboard's median sol; null where none (no roofs, above the roof).
    R"sql(
ALTER TABLE results ADD COLUMN sol REAL;
)sql",
};

}  // namespace

int schema_version() { return static_cast<int>(kMigrations.size()); }

void migrate(Database& db, int target) {
  if (target < 0) target = schema_version();
  if (db.user_version() >= target) {
    if (db.user_version() > schema_version())
      throw SqlError(
          fmt::format("the database has schema version {}, newer than this kgym's {}; use a newer kgym",
                      db.user_version(), schema_version()));
    return;
  }
  for (int version = 1; version <= target; ++version) {
    Transaction tx(db);
    int current = db.user_version();  // under the write lock: another process may have migrated
    if (current >= version) continue;
    db.exec(kMigrations[version - 1]);
    db.exec(fmt::format("PRAGMA user_version = {}", version));
    tx.commit();
  }
}

std::expected<Database, std::string> open_history(const std::filesystem::path& file) {
  try {
    std::error_code ec;
    if (file.has_parent_path()) std::filesystem::create_directories(file.parent_path(), ec);
    Database db = Database::open(file, std::chrono::seconds(30));
    // Switching to WAL needs a moment alone with the file; concurrent first
    // openers may see SQLITE_BUSY here, which the busy handler does not cover.
    for (int attempt = 0;; ++attempt) {
      try {
        db.exec("PRAGMA journal_mode = WAL");
        break;
      } catch (const SqlError&) {
        if (attempt >= 50) throw;
        std::this_thread::sleep_for(std::chrono::milliseconds(20 * (attempt + 1)));
      }
    }
    db.exec("PRAGMA foreign_keys = ON; PRAGMA synchronous = NORMAL");
    migrate(db);
    return db;
  } catch (const SqlError& e) {
    return std::unexpected(fmt::format("history database {}: {}", file.string(), e.what()));
  }
}

}  // namespace kgym::history
