#include "history/schema.h"

#include <gtest/gtest.h>

#include "util/temp_dir.h"

namespace kgym::history {
namespace {

TEST(HistorySchema, CreatesEveryTableAtTheCurrentVersionInWalMode) {
  util::TempDir tmp("kgym-history");
  auto db = open_history(tmp.path() / "sub" / "history.db");
  ASSERT_TRUE(db) << db.error();
  EXPECT_EQ(db->user_version(), schema_version());
  Statement mode = db->prepare("PRAGMA journal_mode");
  ASSERT_TRUE(mode.step());
  EXPECT_EQ(mode.text(0), "wal");
  Statement tables = db->prepare("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name");
  std::vector<std::string> names;
  while (tables.step()) names.push_back(tables.text(0));
  EXPECT_EQ(names, (std::vector<std::string>{"result_rounds", "results", "runs"}));
}

TEST(HistorySchema, MigratesAnOlderDatabaseKeepingItsRows) {
  util::TempDir tmp("kgym-history");
  auto file = tmp.path() / "history.db";
  {
    Database old = Database::open(file, std::chrono::seconds(1));
    migrate(old, 1);
    ASSERT_EQ(old.user_version(), 1);
    old.exec(
        "INSERT INTO runs (run_dir, name, status, fingerprint, indexed_at) VALUES ('/r', 'r', 'finished', "
        "'x', 0);"
        "INSERT INTO results (run_id, case_id, level, verdict, execution) VALUES (1, 'level1/1_A', 'level1', "
        "'pass', 'device')");
  }
  auto db = open_history(file);
  ASSERT_TRUE(db) << db.error();
  EXPECT_EQ(db->user_version(), schema_version());
  Statement row = db->prepare("SELECT case_id, baseline, samples_n FROM results");
  ASSERT_TRUE(row.step());
  EXPECT_EQ(row.text(0), "level1/1_A");
  EXPECT_EQ(row.integer(1), 0);
  EXPECT_TRUE(row.is_null(2));
}

TEST(HistorySchema, RefusesADatabaseOfANewerKgym) {
  util::TempDir tmp("kgym-history");
  auto file = tmp.path() / "history.db";
  {
    Database db = Database::open(file, std::chrono::seconds(1));
    db.exec("PRAGMA user_version = 999");
  }
  auto db = open_history(file);
  ASSERT_FALSE(db);
  EXPECT_NE(db.error().find("newer"), std::string::npos) << db.error();
}

}  // namespace
}  // namespace kgym::history
