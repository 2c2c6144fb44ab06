#include "monitor/frame.h"

#include <sstream>

#include <gtest/gtest.h>

#include "util/text_cells.h"

namespace kgym::monitor {
namespace {

constexpr double kT0 = 1700000000;  // run start
constexpr double kNow = kT0 + 400;

CaseState make_case(const std::string& id, const std::string& phase) {
  CaseState c;
  c.id = id;
  c.phase = phase;
  return c;
}

// A run in progress: two cases running, three done, five pending.
RunState sample_state() {
  RunState s;
  s.run_dir = "/home/user/kgym/runs/2023-11-14_221320";
  s.status = "running";
  s.harness_pid = 4242;
  s.started_at = kT0;
  s.updated_at = kNow - 1;

  CaseState verifying = make_case("level1/2_Standard_matrix_multiplication_", "verifying");
  verifying.stage = "timing";
  verifying.attempt = 1;
  verifying.pid = 31337;
  verifying.device = "cpu1";
  verifying.started_at = kT0 + 100;
  verifying.phase_started_at = kNow - 20;

  CaseState generating = make_case("level1/19_ReLU", "generating");
  generating.stage = "write";
  generating.attempt = 2;
  generating.pid = 4243;
  generating.started_at = kT0 + 300;
  generating.phase_started_at = kNow - 50;

  CaseState passed = make_case("level1/1_Square_matrix_multiplication_", "done");
  passed.attempt = 1;
  passed.device = "cpu0";
  passed.started_at = kT0 + 1;
  passed.finished_at = kT0 + 91;
  passed.verdict = "pass";
  passed.speedup = 1.4237;

  CaseState failed = make_case("level2/10_ConvTranspose3d_Add_Multiply_Clamp", "done");
  failed.attempt = 1;
  failed.device = "cpu0";
  failed.started_at = kT0 + 92;
  failed.finished_at = kT0 + 252;
  failed.verdict = "fail_correctness";
  failed.reason = "output 0: max abs err 3.1e-02 > atol 1e-02";

  CaseState cheat = make_case("level1/3_Batched_matrix_multiplication", "done");
  cheat.attempt = 1;
  cheat.started_at = kT0 + 253;
  cheat.finished_at = kT0 + 290;
  cheat.verdict = "fail_cheat";
  cheat.reason = "static: calls torch.matmul in forward";

  s.cases = {passed, verifying, cheat, generating, failed};
  for (int n = 20; n < 25; ++n)
    s.cases.push_back(make_case("level1/" + std::to_string(n) + "_Op", "pending"));
  return s;
}

TEST(RenderFrame, SmallScreen) {
  std::string frame = render_frame(sample_state(), kNow, 60, 10);
  EXPECT_EQ(frame,
            "running 3/10  pass 1 fail 1 cheat 1 run 2  6m40s\n"
            "devices 1/2 busy  cpu0: idle  cpu1: level1/2_Standard_m\u2026\n"
            "CASE                     ELAPSED  STATUS             SPEEDUP\n"
            "level1/2_Standard_ma\u2026      20.0s  verifying                -\n"
            "level1/19_ReLU             50.0s  generating               -\n"
            "level1/3_Batched_mat\u2026      37.0s  fail_cheat               -\n"
            "level2/10_ConvTransp\u2026      2m40s  fail_correctness         -\n"
            "\u2026 and 6 more (1 done, 5 pending)\n"
            "FAILURES (2 in all, newest first)\n"
            "\u2717 level1/3_Batched_ma\u2026  fail_cheat: static: calls torch.mat\u2026");
}

TEST(RenderFrame, LargeScreen) {
  std::string frame = render_frame(sample_state(), kNow, 160, 50);
  EXPECT_EQ(
      frame,
      "/home/user/kgym/runs/2023-11-14_221320  running  3/10 done  pass 1  fail 1  cheat 1  running 2  "
      "elapsed 6m40s\n"
      "devices 1/2 busy  cpu0: idle  cpu1: level1/2_Standard_m\u2026\n"
      "CASE                                          PHASE           STAGE   TRY  DEVICE      PID    ELAPSED "
      " STATUS             SPEEDUP\n"
      "level1/2_Standard_matrix_multiplication_      verifying       timing    1  cpu1      31337      20.0s "
      " verifying                -\n"
      "level1/19_ReLU                                generating      write     2  -          4243      50.0s "
      " generating               -\n"
      "level1/3_Batched_matrix_multiplication        done            -         1  -             -      37.0s "
      " fail_cheat               -\n"
      "level2/10_ConvTranspose3d_Add_Multiply_Clamp  done            -         1  cpu0          -      2m40s "
      " fail_correctness         -\n"
      "level1/1_Square_matrix_multiplication_        done            -         1  cpu0          -      1m30s "
      " pass                 1.42\u00d7\n"
      "level1/20_Op                                  pending         -         -  -             -          - "
      " pending                  -\n"
      "level1/21_Op                                  pending         -         -  -             -          - "
      " pending                  -\n"
      "level1/22_Op                                  pending         -         -  -             -          - "
      " pending                  -\n"
      "level1/23_Op                                  pending         -         -  -             -          - "
      " pending                  -\n"
      "level1/24_Op                                  pending         -         -  -             -          - "
      " pending                  -\n"
      "FAILURES (2 in all, newest first)\n"
      "\u2717 level1/3_Batched_matrix_multiplication  fail_cheat: static: calls torch.matmul in forward\n"
      "\u2717 level2/10_ConvTranspose3d_Add_Multiply_Clamp  fail_correctness: output 0: max abs err 3.1e-02 "
      "> atol 1e-02");
}

TEST(RenderFrame, EveryLineFitsTheScreen) {
  for (int width : {40, 60, 80, 100, 160}) {
    for (int height : {3, 5, 10, 50}) {
      std::string frame = render_frame(sample_state(), kNow, width, height);
      EXPECT_EQ(frame.find('\x1b'), std::string::npos);
      std::istringstream in(frame);
      int lines = 0;
      for (std::string line; std::getline(in, line); ++lines) {
        EXPECT_LE(util::display_width(line), static_cast<std::size_t>(width))
            << width << "x" << height << ": " << line;
      }
      EXPECT_LE(lines, height) << width << "x" << height;
    }
  }
}

TEST(RenderFrame, FinishedRunMeasuresToLastUpdateAndFlagsNothingStale) {
  RunState s = sample_state();
  s.status = "finished";
  s.updated_at = kT0 + 125;
  std::string frame = render_frame(s, kNow + 10000, 120, 20);
  EXPECT_NE(frame.find("finished  3/10 done  pass 1  fail 1  cheat 1  running 2  elapsed 2m05s"),
            std::string::npos)
      << frame;
  EXPECT_EQ(frame.find("no update"), std::string::npos);
}

TEST(RenderFrame, StaleRunningStateIsFlagged) {
  RunState s = sample_state();
  std::string frame = render_frame(s, kNow + 300, 160, 20);
  EXPECT_NE(frame.find("(no update for 5m01s)"), std::string::npos) << frame;
}

TEST(RenderFrame, EmptyRun) {
  RunState s;
  s.run_dir = "/r";
  EXPECT_EQ(render_frame(s, kNow, 60, 10),
            "/r  running 0/0  pass 0 fail 0 cheat 0 run 0  -\n"
            "devices  none used yet\n"
            "CASE  DEVICE    ELAPSED  STATUS             SPEEDUP\n"
            "(no cases yet)");
}

TEST(RenderFrame, StageColumnOnlyWhenSomeCaseHasAStage) {
  RunState s = sample_state();
  for (CaseState& c : s.cases) c.stage.clear();
  std::string frame = render_frame(s, kNow, 100, 20);
  EXPECT_EQ(frame.find("STAGE"), std::string::npos) << frame;
  // The room goes to the ids (23 cells instead of 16 with STAGE).
  EXPECT_NE(frame.find("\nlevel1/2_Standard_matr\u2026  verifying "), std::string::npos) << frame;
  EXPECT_NE(render_frame(sample_state(), kNow, 160, 20).find("STAGE"), std::string::npos);
}

TEST(RenderFrame, DevicesLineListsThePoolIdleDevicesIncluded) {
  RunState s = sample_state();
  s.devices = {"cpu1", "cpu0", "cpu2"};  // pool order is kept
  std::string frame = render_frame(s, kNow, 120, 20);
  EXPECT_NE(frame.find("\ndevices 1/3 busy  cpu1: level1/2_Standard_m\u2026  cpu0: idle  cpu2: idle\n"),
            std::string::npos)
      << frame;
  RunState fresh;
  fresh.devices = {"0", "1"};
  fresh.cases.push_back(CaseState{.id = "level1/1_A", .phase = "probing"});
  EXPECT_NE(render_frame(fresh, kNow, 80, 10).find("\ndevices 0/2 busy  0: idle  1: idle\n"),
            std::string::npos);
}

TEST(RenderFrame, RepromptedStageShowsItsFailedChecks) {
  RunState s;
  s.run_dir = "/runs/wf";
  s.started_at = kT0;
  s.updated_at = kNow - 1;
  CaseState c = make_case("level1/19_ReLU", "generating");
  c.stage = "plan";
  c.attempt = 2;
  c.started_at = kT0;
  c.phase_started_at = kNow - 5;
  c.failed_gates = {"forbidden_words PLAN.md: PLAN.md contains 'TBD' (line 7)", "headings PLAN.md: ..."};
  s.cases = {c};
  std::string frame = render_frame(s, kNow, 160, 10);
  EXPECT_NE(frame.find("generating      plan     2"), std::string::npos) << frame;
  EXPECT_NE(frame.find("2 checks failed"), std::string::npos) << frame;
}

// With samples per case the phase says which sample it is; the device line
// shows each holder the scheduler listed, a generating agent included.
TEST(RenderFrame, SampledCaseAndDeviceHolders) {
  RunState s;
  s.run_dir = "/runs/k";
  s.started_at = kT0;
  s.updated_at = kNow - 1;
  s.devices = {"0", "1"};
  s.device_holders = std::map<std::string, std::string>{{"1", "level1/19_ReLU s2/4"}};
  CaseState c = make_case("level1/19_ReLU", "generating");
  c.sample = 2;
  c.samples = 4;
  c.samples_done = 1;
  c.device = "1";
  c.started_at = kT0;
  c.phase_started_at = kNow - 5;
  CaseState done = make_case("level1/1_A", "done");
  done.samples = 4;
  done.samples_done = 4;
  done.verdict = "pass";
  done.device = "0";  // its last device, since returned
  s.cases = {c, done};
  std::string frame = render_frame(s, kNow, 160, 12);
  EXPECT_NE(frame.find("generating s2/4"), std::string::npos) << frame;
  EXPECT_NE(frame.find("done 4/4"), std::string::npos) << frame;
  EXPECT_NE(frame.find("\ndevices 1/2 busy  0: idle  1: level1/19_ReLU s2/4\n"), std::string::npos) << frame;
}

}  // namespace
}  // namespace kgym::monitor
