#include "history/index.h"

#include <sys/wait.h>
#include <unistd.h>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "history/history_test_util.h"
#include "history/schema.h"
#include "util/temp_dir.h"

namespace kgym::history {
namespace {

using testing::FakeRun;
using testing::make_case;
using testing::write_case;
using testing::write_run;

std::int64_t count(Database& db, const std::string& sql) {
  Statement s = db.prepare(sql);
  return s.step() ? s.integer(0) : -1;
}

TEST(HistoryIndex, FindsRunsUnderRootsAndIndexesTheirResults) {
  util::TempDir tmp("kgym-history");
  FakeRun run{.dir = tmp.path() / "runs" / "a"};
  write_run(run);
  write_case(run.dir, make_case("level1/1_Relu", Verdict::kPass, 2.0));
  write_case(run.dir, make_case("level1/2_Gelu", Verdict::kFailCheat));
  auto runs = find_runs({tmp.path()});
  ASSERT_EQ(runs.size(), 1u);
  auto db = open_history(tmp.path() / "h.db");
  ASSERT_TRUE(db);
  auto indexed = index_run(*db, runs[0]);
  ASSERT_TRUE(indexed) << indexed.error();
  EXPECT_EQ(indexed->action, IndexAction::kAdded);
  EXPECT_EQ(indexed->results, 2);
  Statement r = db->prepare("SELECT name, model, agent, torch_version, status, config_hash FROM runs");
  ASSERT_TRUE(r.step());
  EXPECT_EQ(r.text(0), "a");
  EXPECT_EQ(r.text(1), "model-a");
  EXPECT_EQ(r.text(2), "command");
  EXPECT_EQ(r.text(3), "2.5.1");
  EXPECT_EQ(r.text(4), "finished");
  EXPECT_EQ(r.text(5).size(), 64u);
  Statement x =
      db->prepare("SELECT verdict, speedup, speedup_lo, tokens_in, cheat_rule FROM results ORDER BY case_id");
  ASSERT_TRUE(x.step());
  EXPECT_EQ(x.text(0), "pass");
  EXPECT_DOUBLE_EQ(x.real(1), 2.0);
  EXPECT_DOUBLE_EQ(x.real(2), 1.8);
  EXPECT_EQ(x.integer(3), 1000);
  ASSERT_TRUE(x.step());
  EXPECT_EQ(x.text(4), "static.torch_op");
}

// Issue 33: a result.json planted for a case the run did not select is
// not indexed; the run's index names it as skipped.
TEST(HistoryIndex, IndexesOnlyTheRunsSelectedCases) {
  util::TempDir tmp("kgym-history");
  FakeRun run{.dir = tmp.path() / "runs" / "a", .cases = std::vector<std::string>{"level1/1_Relu"}};
  write_run(run);
  write_case(run.dir, make_case("level1/1_Relu", Verdict::kFailCorrectness));
  write_case(run.dir, make_case("level1/2_Planted", Verdict::kPass, 5.0));
  auto db = open_history(tmp.path() / "h.db");
  ASSERT_TRUE(db);
  auto indexed = index_run(*db, run.dir);
  ASSERT_TRUE(indexed) << indexed.error();
  EXPECT_EQ(indexed->results, 1);
  EXPECT_EQ(count(*db, "SELECT count(*) FROM results WHERE verdict = 'pass'"), 0);
  ASSERT_EQ(indexed->skipped.size(), 1u);
  EXPECT_NE(indexed->skipped[0].find("level1/2_Planted/result.json: ignored"), std::string::npos)
      << indexed->skipped[0];
}

TEST(HistoryIndex, SkipsAnUnchangedRunAndReplacesAChangedOne) {
  util::TempDir tmp("kgym-history");
  FakeRun run{.dir = tmp.path() / "r", .status = "running"};
  write_run(run);
  write_case(run.dir, make_case("level1/1_Relu", Verdict::kPass, 2.0));
  auto db = open_history(tmp.path() / "h.db");
  ASSERT_TRUE(db);
  ASSERT_EQ(index_run(*db, run.dir)->action, IndexAction::kAdded);
  auto again = index_run(*db, run.dir);
  ASSERT_TRUE(again);
  EXPECT_EQ(again->action, IndexAction::kUnchanged);
  EXPECT_EQ(again->results, 1);

  // The run goes on: one more case, the first one rewritten, then it ends.
  write_case(run.dir, make_case("level1/1_Relu", Verdict::kFailCorrectness));
  write_case(run.dir, make_case("level1/2_Gelu", Verdict::kPass, 1.5));
  run.status = "finished";
  write_run(run);
  auto updated = index_run(*db, run.dir);
  ASSERT_TRUE(updated);
  EXPECT_EQ(updated->action, IndexAction::kUpdated);
  EXPECT_EQ(count(*db, "SELECT count(*) FROM runs"), 1);
  EXPECT_EQ(count(*db, "SELECT count(*) FROM results"), 2);
  EXPECT_EQ(count(*db,
                  "SELECT count(*) FROM results WHERE case_id = 'level1/1_Relu' AND verdict = "
                  "'fail_correctness'"),
            1);
  EXPECT_EQ(count(*db, "SELECT count(*) FROM runs WHERE status = 'finished' AND ended_at IS NOT NULL"), 1);
}

TEST(HistoryIndex, ConfigHashIgnoresHowTheWorkIsSpread) {
  nlohmann::json a = {{"agent", {{"kind", "command"}}}, {"concurrency", 1}};
  nlohmann::json b = {{"agent", {{"kind", "command"}}}, {"concurrency", 4}, {"monitor", {{"poll_sec", 2}}}};
  nlohmann::json c = {{"agent", {{"kind", "claude"}}}, {"concurrency", 1}};
  EXPECT_EQ(config_hash(a), config_hash(b));
  EXPECT_NE(config_hash(a), config_hash(c));
}

TEST(HistoryIndex, AMissingRunJsonIsAnError) {
  util::TempDir tmp("kgym-history");
  auto db = open_history(tmp.path() / "h.db");
  ASSERT_TRUE(db);
  auto indexed = index_run(*db, tmp.path());
  ASSERT_FALSE(indexed);
  EXPECT_NE(indexed.error().find("run.json"), std::string::npos);
}

// Several processes index different runs into one new database at once:
// every run and every result arrives, and the database checks out.
TEST(HistoryIndex, ConcurrentIndexersFromSeveralProcessesLoseNothing) {
  util::TempDir tmp("kgym-history");
  constexpr int kProcesses = 6, kRunsEach = 4, kCases = 8;
  std::vector<std::filesystem::path> dirs;
  for (int i = 0; i < kProcesses * kRunsEach; ++i) {
    FakeRun run{.dir = tmp.path() / "runs" / fmt::format("run{:02}", i), .started_at = 1'780'000'000.0 + i};
    write_run(run);
    for (int c = 1; c <= kCases; ++c)
      write_case(run.dir, make_case(fmt::format("level1/{}_Op", c),
                                    c % 3 ? Verdict::kPass : Verdict::kFailCorrectness, 1.0 + c / 10.0));
    dirs.push_back(run.dir);
  }
  auto file = tmp.path() / "h.db";
  std::vector<pid_t> children;
  for (int p = 0; p < kProcesses; ++p) {
    pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      int code = 0;
      {
        auto db = open_history(file);
        if (!db) ::_exit(10);
        for (int i = 0; i < kRunsEach; ++i) {
          // Each run also indexed by a neighbour: concurrent updates of one run too.
          if (!index_run(*db, dirs[p * kRunsEach + i])) code = 11;
          if (!index_run(*db, dirs[((p + 1) % kProcesses) * kRunsEach + i])) code = 12;
        }
      }
      ::_exit(code);
    }
    children.push_back(pid);
  }
  for (pid_t pid : children) {
    int status = 0;
    ASSERT_EQ(::waitpid(pid, &status, 0), pid);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "child status " << status;
  }
  auto db = open_history(file);
  ASSERT_TRUE(db) << db.error();
  Statement check = db->prepare("PRAGMA integrity_check");
  ASSERT_TRUE(check.step());
  EXPECT_EQ(check.text(0), "ok");
  EXPECT_EQ(count(*db, "SELECT count(*) FROM runs"), kProcesses * kRunsEach);
  EXPECT_EQ(count(*db, "SELECT count(*) FROM results"), kProcesses * kRunsEach * kCases);
}

}  // namespace
}  // namespace kgym::history
