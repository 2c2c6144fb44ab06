#include "monitor/monitor_loop.h"
#include "util/temp_dir.h"

#include <cstdlib>
#include <fstream>

#include <gtest/gtest.h>

namespace kgym::monitor {
namespace {

namespace fs = std::filesystem;

class MonitorLoopTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_FALSE(temp_.path().empty());
    dir_ = temp_.path();
    out_ = std::tmpfile();
    err_ = std::tmpfile();
    ASSERT_NE(out_, nullptr);
    ASSERT_NE(err_, nullptr);
  }
  void TearDown() override {
    std::fclose(out_);
    std::fclose(err_);
  }
  void write_state(const std::string& status) {
    RunState s;
    s.run_dir = dir_.string();
    s.status = status;
    s.started_at = 1700000000;
    s.updated_at = 1700000010;
    CaseState c;
    c.id = "level1/19_ReLU";
    c.phase = "done";
    c.verdict = "pass";
    c.speedup = 2.0;
    s.cases = {c};
    std::ofstream(dir_ / "state.json") << to_json(s).dump();
  }
  static std::string contents(std::FILE* f) {
    std::fflush(f);
    std::rewind(f);
    std::string text;
    for (int ch; (ch = std::fgetc(f)) != EOF;) text += static_cast<char>(ch);
    return text;
  }
  MonitorOptions options() {
    MonitorOptions o;
    o.state_file = resolve_state_path(dir_);
    o.interval = std::chrono::milliseconds(100);
    o.startup_grace = std::chrono::milliseconds(300);
    o.input_fd = -1;  // not a terminal: no keys are read
    o.out = out_;
    o.err = err_;
    return o;
  }

  util::TempDir temp_{"kgym-monitor"};
  fs::path dir_;
  std::FILE* out_ = nullptr;
  std::FILE* err_ = nullptr;
};

TEST_F(MonitorLoopTest, ResolvesDirectoryOrFile) {
  EXPECT_EQ(resolve_state_path(dir_), dir_ / "state.json");
  EXPECT_EQ(resolve_state_path(dir_ / "other.json"), dir_ / "other.json");
}

TEST_F(MonitorLoopTest, OnceMissingStateExits2WithTheReason) {
  EXPECT_EQ(print_one_frame(dir_ / "state.json", out_, err_), 2);
  EXPECT_NE(contents(err_).find((dir_ / "state.json").string()), std::string::npos);
  EXPECT_EQ(contents(out_), "");
}

TEST_F(MonitorLoopTest, OnceCorruptStateExits2) {
  std::ofstream(dir_ / "state.json") << "{\"schema_version\": 1, \"cases\": [";
  EXPECT_EQ(print_one_frame(dir_ / "state.json", out_, err_), 2);
  EXPECT_NE(contents(err_).find("not a valid kgym state file"), std::string::npos);
}

TEST_F(MonitorLoopTest, ATruncatedOrNewerStateNamesTheFileAndTheFix) {
  std::ofstream(dir_ / "state.json") << R"({"schema_version": 1, "status": "runn)";
  auto damaged = read_state(dir_ / "state.json");
  ASSERT_FALSE(damaged.has_value());
  EXPECT_NE(damaged.error().find("state.json: not a valid kgym state file"), std::string::npos);
  EXPECT_NE(damaged.error().find("kgym run --resume " + dir_.string()), std::string::npos) << damaged.error();
  std::ofstream(dir_ / "state.json") << R"({"schema_version": 5, "status": "running"})";
  auto newer = read_state(dir_ / "state.json");
  ASSERT_FALSE(newer.has_value());
  EXPECT_NE(newer.error().find("written by a newer kgym (schema_version 5"), std::string::npos)
      << newer.error();
}

TEST_F(MonitorLoopTest, OncePrintsOneFrame) {
  write_state("running");
  EXPECT_EQ(print_one_frame(dir_ / "state.json", out_, err_), 0);
  std::string text = contents(out_);
  EXPECT_NE(text.find("level1/19_ReLU"), std::string::npos);
  EXPECT_NE(text.find("2.00\u00d7"), std::string::npos);
  EXPECT_EQ(text.find('\x1b'), std::string::npos);
}

TEST_F(MonitorLoopTest, LoopEndsWithTheRun) {
  write_state("finished");
  EXPECT_EQ(run_monitor(options()), MonitorEnd::kRunEnded);
  EXPECT_NE(contents(out_).find("finished  1/1 done  pass 1"), std::string::npos);
}

TEST_F(MonitorLoopTest, LoopGivesUpWithoutStateAfterGrace) {
  EXPECT_EQ(run_monitor(options()), MonitorEnd::kNoState);
  EXPECT_NE(contents(out_).find("waiting for"), std::string::npos);
  EXPECT_NE(contents(err_).find("state.json"), std::string::npos);
}

}  // namespace
}  // namespace kgym::monitor
