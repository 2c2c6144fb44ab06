// The timing phase end to end with the real Python worker. The candidate
// slot runs a problem file as a second reference (`candidate_is_reference`),
// so these tests need no compiler and are independent of the static checks.
// Skipped when no interpreter with torch is available.
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <iterator>

#include <gtest/gtest.h>

#include "worker/python_env.h"
#include "verify/verifier.h"

namespace kgym::verify {
namespace {

namespace fs = std::filesystem;

constexpr const char* kLinearReluProblem = R"(import torch
import torch.nn as nn

class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.linear = nn.Linear(64, 64)

    def forward(self, x):
        return torch.relu(self.linear(x))

def get_inputs():
    return [torch.randn(128, 64)]

def get_init_inputs():
    return []
)";

class TimingTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto env = worker::resolve_python(std::nullopt);
    if (!env) GTEST_SKIP() << "no Python with torch";
    python_ = env->python;
    std::string pattern = (fs::temp_directory_path() / "kgym-timing-test-XXXXXX").string();
    ASSERT_NE(::mkdtemp(pattern.data()), nullptr);
    dir_ = pattern;
    std::ofstream(dir_ / "problem.py") << kLinearReluProblem;
  }

  void TearDown() override {
    std::error_code ec;
    if (!dir_.empty() && !HasFailure()) fs::remove_all(dir_, ec);
  }

  // Times the problem against `stand_in` (a problem file in the candidate's place).
  CaseResult time_against(const std::string& stand_in) {
    std::ofstream(dir_ / "stand_in.py") << stand_in;
    VerifyRequest req;
    req.case_id = "test/1_Timing";
    req.problem = dir_ / "problem.py";
    req.candidate = dir_ / "stand_in.py";
    req.scratch_dir = dir_ / "scratch";
    req.python = python_;
    req.config.mode = "performance";
    req.config.timing.warmup = 1;
    req.config.timing.max_repetitions = 40;
    // Long enough that a loaded machine still reaches max_repetitions first.
    req.config.timing.budget = std::chrono::seconds(60);
    req.device = "0";
    req.run_seed = 7;
    req.candidate_is_reference = true;
    return verify_candidate(req);
  }

  std::string python_;
  fs::path dir_;
};

TEST_F(TimingTest, ReferenceAgainstItselfRecordsEveryField) {
  auto r = time_against(kLinearReluProblem);
  ASSERT_EQ(r.verdict, Verdict::kPass) << r.reason;
  ASSERT_TRUE(r.performance);
  const Performance& p = *r.performance;
  EXPECT_GE(p.candidate.samples, 10);
  EXPECT_EQ(p.reference.samples, p.candidate.samples);  // two workers each
  ASSERT_FALSE(p.rounds_ms.empty());
  EXPECT_EQ(p.rounds_ms.front().size(), 4u);
  EXPECT_TRUE(p.candidate_noise_floor);
  EXPECT_TRUE(p.stop_reason == "target_rse" || p.stop_reason == "budget" ||
              p.stop_reason == "max_repetitions")
      << p.stop_reason;
  ASSERT_TRUE(p.noise_floor);
  ASSERT_TRUE(p.speedup.ci95);
  EXPECT_GT(p.speedup.median, 0.5);  // loose: the machine running the tests may be busy
  EXPECT_LT(p.speedup.median, 2.0);
  EXPECT_TRUE(p.memory_bandwidth_gbs);
  EXPECT_TRUE(p.candidate.mad_ms);
  EXPECT_TRUE(p.measure_s);
  // What an A/A may say of itself; `uncertain` (an interval more than 2x
  // wide) on a machine running the rest of the suite beside it.
  for (const auto& flag : p.flags) {
    EXPECT_TRUE(flag == "within_noise" || flag == "few_samples" || flag == "contended" || flag == "uncertain")
        << flag;
  }
  // Other processes' share comes from the workers' CPU time read from outside
  // them, A/A runs included: their own reports leave out what they do between
  // calls (drawing the input sets), which counted as other processes' load.
  EXPECT_TRUE(p.foreign_cpu_share);
  std::ifstream log(dir_ / "scratch" / "verify.log");
  std::string text((std::istreambuf_iterator<char>(log)), std::istreambuf_iterator<char>());
  EXPECT_NE(text.find("the workers' CPU time, for other processes' share of the cores, from"), std::string::npos)
      << text;
}

TEST_F(TimingTest, TimedCallWithWrongOutputFailsCorrectness) {
  // Right for the correctness calls (three trials, two signed-normal trials, trial 0 repeated), wrong once it
  // is being timed.
  std::string drifting = std::string(kLinearReluProblem) + R"(
_Right = Model

class Model(_Right):
    calls = 0

    def forward(self, x):
        Model.calls += 1
        return _Right.forward(self, x) + (Model.calls > 6)
)";
  auto r = time_against(drifting);
  EXPECT_EQ(r.verdict, Verdict::kFailCorrectness) << r.reason;
  EXPECT_NE(r.reason.find("output of timed call"), std::string::npos) << r.reason;
  EXPECT_NE(r.reason.find("input set of seed"), std::string::npos) << r.reason;
}

}  // namespace
}  // namespace kgym::verify
