#include "report/load_results.h"

#include <cstdlib>
#include <fstream>

#include <gtest/gtest.h>

#include "report/report_test_util.h"
#include "report/run_info.h"
#include "util/fs.h"
#include "util/temp_dir.h"

namespace kgym::report {
namespace {

namespace fs = std::filesystem;
using testing::make_result;

class LoadResultsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_FALSE(temp_.path().empty());
    run_dir_ = temp_.path();
  }
  void write(const fs::path& relative, const std::string& text) {
    fs::create_directories((run_dir_ / relative).parent_path());
    std::ofstream(run_dir_ / relative) << text;
  }
  void write_result(const CaseResult& r) {
    write(fs::path("cases") / r.case_id / "result.json", to_json(r).dump());
  }

  util::TempDir temp_{"kgym-report"};
  fs::path run_dir_;
};

TEST_F(LoadResultsTest, ReadsResultsInCaseOrderAndReportsCorruptFiles) {
  write_result(make_result("level10/1_Big", Verdict::kPass, 2.0));
  write_result(make_result("level1/10_Mul", Verdict::kPass, 1.1));
  write_result(make_result("level1/2_Add", Verdict::kCrash));
  write("cases/level1/3_Broken/result.json", "{\"schema_version\": 1, \"case_id\":");
  fs::create_directories(run_dir_ / "cases/level2/4_Unfinished");
  write_result(make_result("level2/5_Moved", Verdict::kPass, 1.0));
  fs::rename(run_dir_ / "cases/level2/5_Moved", run_dir_ / "cases/level2/6_Elsewhere");

  LoadedResults loaded = load_results(run_dir_);
  std::vector<std::string> ids;
  for (const CaseResult& r : loaded.results) ids.push_back(r.case_id);
  EXPECT_EQ(ids, (std::vector<std::string>{"level1/2_Add", "level1/10_Mul", "level10/1_Big"}));
  EXPECT_EQ(loaded.unfinished_case_ids,
            (std::vector<std::string>{"level1/3_Broken", "level2/4_Unfinished", "level2/6_Elsewhere"}));
  ASSERT_EQ(loaded.errors.size(), 2u);
  std::string all;
  for (const LoadError& e : loaded.errors) all += e.path.string() + ": " + e.message + "\n";
  EXPECT_NE(all.find("cases/level1/3_Broken/result.json: not a valid result record"), std::string::npos)
      << all;
  EXPECT_NE(all.find("does not match its directory"), std::string::npos) << all;
}

TEST_F(LoadResultsTest, MissingCasesDirIsAnError) {
  LoadedResults loaded = load_results(run_dir_);
  EXPECT_TRUE(loaded.results.empty());
  ASSERT_EQ(loaded.errors.size(), 1u);
  EXPECT_NE(loaded.errors[0].message.find("no cases/"), std::string::npos);
}

TEST_F(LoadResultsTest, WritesBothSummaryFiles) {
  write_result(make_result("level1/1_A", Verdict::kPass, 1.5));
  fs::create_directories(run_dir_ / "cases/level1/2_B");
  LoadedResults loaded = load_results(run_dir_);
  RecoveredRunInfo recovered = recover_run_info(run_dir_, loaded);
  EXPECT_EQ(recovered.info.status, "interrupted");  // no state.json, one case unfinished
  auto summary = write_summary(run_dir_, loaded.results, recovered.info);
  ASSERT_TRUE(summary) << summary.error();
  EXPECT_EQ(summary->total.not_run, 1);

  auto json_text = util::read_file(run_dir_ / "summary.json");
  ASSERT_TRUE(json_text);
  nlohmann::json j = nlohmann::json::parse(*json_text);
  EXPECT_EQ(j["totals"]["selected"], 2);
  EXPECT_EQ(j["cases"][1]["status"], "not_run");
  EXPECT_EQ(j["run"]["backend"], "cpu");  // taken from the results when run.json is absent
  auto md = util::read_file(run_dir_ / "summary.md");
  ASSERT_TRUE(md);
  EXPECT_NE(md->find("| `level1/2_B` | not run |"), std::string::npos);
}

TEST_F(LoadResultsTest, RunInfoFromRunJsonAndStateJson) {
  write_result(make_result("level1/1_A", Verdict::kPass, 1.5));
  write("run.json", R"({"run_dir": "/elsewhere/r1", "started_at": 1700000000, "config_path": "/cfg.yaml",
                       "backend": "cuda", "mode": "correctness", "machine": {"cpu": "X"},
                       "cases": ["level1/1_A", "level1/3_C"]})");
  write("state.json", R"({"schema_version": 1, "status": "finished", "started_at": 1700000000,
                         "updated_at": 1700000600, "cases": [{"id": "level1/1_A"}, {"id": "level1/2_B"}]})");
  RecoveredRunInfo recovered = recover_run_info(run_dir_, load_results(run_dir_));
  const RunInfo& info = recovered.info;
  EXPECT_TRUE(recovered.notes.empty());
  EXPECT_EQ(info.run_dir, "/elsewhere/r1");
  EXPECT_EQ(info.started_at_iso, "2023-11-14T22:13:20Z");
  EXPECT_EQ(info.finished_at_iso, "2023-11-14T22:23:20Z");
  EXPECT_EQ(info.config_path, "/cfg.yaml");
  EXPECT_EQ(info.backend, "cuda");
  EXPECT_EQ(info.status, "finished");
  EXPECT_EQ(info.machine["cpu"], "X");
  EXPECT_EQ(info.selected_case_ids, (std::vector<std::string>{"level1/1_A", "level1/2_B", "level1/3_C"}));
}

TEST_F(LoadResultsTest, DamagedRunJsonIsANoteNotAFailure) {
  write_result(make_result("level1/1_A", Verdict::kPass, 1.5));
  write("run.json", "[1, 2");
  RecoveredRunInfo recovered = recover_run_info(run_dir_, load_results(run_dir_));
  ASSERT_EQ(recovered.notes.size(), 2u);  // no selection to go by, and the damage
  EXPECT_NE(recovered.notes[0].find("every result.json under"), std::string::npos) << recovered.notes[0];
  EXPECT_NE(recovered.notes[1].find("run.json"), std::string::npos);
  EXPECT_EQ(recovered.info.status, "finished");
  EXPECT_TRUE(recovered.errors.empty());
}

// A report must not count a damaged result's case as not run, nor misread
// a newer kgym's records: they are errors with the file and the fix.
TEST_F(LoadResultsTest, ADamagedResultOrANewerRecordIsAnErrorWithItsFix) {
  write_result(make_result("level1/1_A", Verdict::kPass, 1.5));
  std::string whole = to_json(make_result("level1/2_B", Verdict::kPass, 1.5)).dump();
  write("cases/level1/2_B/result.json", whole.substr(0, whole.size() - 7));
  RecoveredRunInfo recovered = recover_run_info(run_dir_, load_results(run_dir_));
  ASSERT_EQ(recovered.errors.size(), 1u);
  EXPECT_NE(recovered.errors[0].find("level1/2_B/result.json: not a valid result record"), std::string::npos)
      << recovered.errors[0];
  EXPECT_NE(recovered.errors[0].find("move it aside"), std::string::npos) << recovered.errors[0];

  nlohmann::json newer = to_json(make_result("level1/2_B", Verdict::kPass, 1.5));
  newer["schema_version"] = kResultSchemaVersion + 1;
  write("cases/level1/2_B/result.json", newer.dump());
  write("run.json", R"({"schema_version": 9, "cases": ["level1/1_A", "level1/2_B"]})");
  write("state.json", R"({"schema_version": 9, "status": "finished"})");
  recovered = recover_run_info(run_dir_, load_results(run_dir_));
  ASSERT_EQ(recovered.errors.size(), 3u);
  for (const std::string& error : recovered.errors)
    EXPECT_NE(error.find("newer kgym"), std::string::npos) << error;
}

// Issue 33: a result.json planted for a case the run did not select is
// never read nor counted; a warning names the file.
TEST_F(LoadResultsTest, ReadsOnlyTheSelectedCasesAndNamesAPlantedResult) {
  write("run.json", R"({"schema_version": 1, "cases": ["level1/1_A", "level1/2_B", "level1/4_D"]})");
  write_result(make_result("level1/1_A", Verdict::kFailCorrectness));
  fs::create_directories(run_dir_ / "cases/level1/2_B");
  write_result(make_result("level1/3_Planted", Verdict::kPass, 9.0));
  fs::create_directories(run_dir_ / "cases/level2/5_Stray");  // no result: nothing to say
  LoadedResults loaded = load_results(run_dir_);
  ASSERT_EQ(loaded.results.size(), 1u);
  EXPECT_EQ(loaded.results[0].case_id, "level1/1_A");
  EXPECT_EQ(loaded.unfinished_case_ids, (std::vector<std::string>{"level1/2_B"}));
  EXPECT_TRUE(loaded.errors.empty());
  ASSERT_EQ(loaded.warnings.size(), 1u);
  EXPECT_NE(loaded.warnings[0].find("cases/level1/3_Planted/result.json: ignored: a result for case "
                                    "'level1/3_Planted', which this run did not select"),
            std::string::npos)
      << loaded.warnings[0];

  RecoveredRunInfo recovered = recover_run_info(run_dir_, loaded);
  EXPECT_EQ(recovered.notes, loaded.warnings);
  EXPECT_EQ(recovered.info.selected_case_ids,
            (std::vector<std::string>{"level1/1_A", "level1/2_B", "level1/4_D"}));
  auto summary = write_summary(run_dir_, loaded.results, recovered.info);
  ASSERT_TRUE(summary) << summary.error();
  EXPECT_EQ(summary->total.selected, 3);
  EXPECT_EQ(summary->total.passed(), 0);
  EXPECT_EQ(summary->total.not_run, 2);
}

// An id in run.json that is not "<level>/<N>_<Name>" names no directory.
TEST_F(LoadResultsTest, ACaseIdThatLeavesCasesIsNotFollowed) {
  write("run.json", R"({"cases": ["../x", "level1/../../x", "/abs/x", "level1/1_A"]})");
  write("x/result.json", to_json(make_result("../x", Verdict::kPass, 2.0)).dump());
  write_result(make_result("level1/1_A", Verdict::kPass, 1.5));
  LoadedResults loaded = load_results(run_dir_);
  ASSERT_EQ(loaded.results.size(), 1u);
  EXPECT_EQ(loaded.results[0].case_id, "level1/1_A");
}

TEST_F(LoadResultsTest, WithoutASelectionEveryResultIsReadAndThatIsSaid) {
  write("run.json", R"({"schema_version": 1, "backend": "cpu"})");
  write_result(make_result("level1/1_A", Verdict::kPass, 1.5));
  write_result(make_result("level1/2_B", Verdict::kPass, 1.5));
  LoadedResults loaded = load_results(run_dir_);
  EXPECT_EQ(loaded.results.size(), 2u);
  ASSERT_EQ(loaded.warnings.size(), 1u);
  EXPECT_NE(loaded.warnings[0].find("run.json: no list of the run's selected cases"), std::string::npos)
      << loaded.warnings[0];
}

}  // namespace
}  // namespace kgym::report
