#include "verify/repro_compare.h"

#include <gtest/gtest.h>

namespace kgym::verify {
namespace {

using nlohmann::json;

CaseResult timed(Verdict verdict, double median, double lo, double hi) {
  CaseResult r;
  r.verdict = verdict;
  r.performance = Performance{};
  r.performance->speedup = SpeedupEstimate{median, Interval{lo, hi}};
  r.environment = TorchEnvironment{"/usr/bin/python3", "1.13.1", "cpu"};
  return r;
}

const json kMachine = {{"cpu_model", "Test CPU"}, {"online_cpus", 2}, {"hostname", "a"}};

TEST(ReproCompare, AgreesWhenTheVerdictMatchesAndTheSpeedupFallsInside) {
  ReproComparison c = compare_reproduction(timed(Verdict::kPass, 1.5, 1.4, 1.6), kMachine,
                                           timed(Verdict::kPass, 1.55, 1.3, 1.8), kMachine);
  EXPECT_TRUE(c.agrees());
  EXPECT_EQ(c.speedup, ReproComparison::Speedup::kInside);
  EXPECT_TRUE(c.warnings.empty());
  std::vector<std::string> lines = comparison_lines(c);
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_EQ(lines[0], "repro: verdict pass, recorded pass: same");
  EXPECT_EQ(
      lines[1],
      "repro: speedup 1.550x [1.300, 1.800], recorded 1.500x [1.400, 1.600]: inside the recorded interval");
  EXPECT_EQ(lines[2], "repro: agrees with the recorded result");
}

TEST(ReproCompare, DisagreesOnASpeedupOutsideOrAnotherVerdict) {
  ReproComparison outside = compare_reproduction(timed(Verdict::kPass, 1.5, 1.4, 1.6), kMachine,
                                                 timed(Verdict::kPass, 2.0, 1.9, 2.1), kMachine);
  EXPECT_FALSE(outside.agrees());
  EXPECT_EQ(comparison_lines(outside).back(),
            "repro: disagrees with the recorded result: the speedup lies outside the recorded interval");
  CaseResult failed;
  failed.verdict = Verdict::kFailCorrectness;
  ReproComparison verdict =
      compare_reproduction(timed(Verdict::kPass, 1.5, 1.4, 1.6), kMachine, failed, kMachine);
  EXPECT_FALSE(verdict.agrees());
  EXPECT_EQ(verdict.speedup, ReproComparison::Speedup::kNotMeasured);
  EXPECT_EQ(comparison_lines(verdict).front(), "repro: verdict fail_correctness, recorded pass: DIFFERENT");
  EXPECT_EQ(comparison_lines(verdict).back(),
            "repro: disagrees with the recorded result: the verdict differs, no speedup was measured");
}

TEST(ReproCompare, CorrectnessOnlyResultsCompareVerdicts) {
  CaseResult a, b;
  a.verdict = b.verdict = Verdict::kFailCheat;
  ReproComparison c = compare_reproduction(a, kMachine, b, kMachine);
  EXPECT_TRUE(c.agrees());
  EXPECT_EQ(c.speedup, ReproComparison::Speedup::kNotRecorded);
  EXPECT_EQ(comparison_lines(c).size(), 2u);
}

TEST(ReproCompare, WarnsOfAnotherMachineOrTorch) {
  CaseResult now = timed(Verdict::kPass, 1.5, 1.4, 1.6);
  now.environment = TorchEnvironment{"/venv/bin/python3", "2.5.0", "cuda 12.4"};
  json other = kMachine;
  other["cpu_model"] = "Other CPU";
  ReproComparison c = compare_reproduction(timed(Verdict::kPass, 1.5, 1.4, 1.6), kMachine, now, other);
  EXPECT_TRUE(c.agrees());  // warnings only
  ASSERT_EQ(c.warnings.size(), 2u);
  EXPECT_EQ(c.warnings[0], "another machine: cpu_model Other CPU (recorded Test CPU)");
  EXPECT_EQ(c.warnings[1], "another torch: torch 2.5.0 (cuda 12.4) (recorded torch 1.13.1 (cpu))");
  ReproComparison unknown = compare_reproduction(timed(Verdict::kPass, 1.5, 1.4, 1.6), nullptr, now, other);
  EXPECT_EQ(unknown.warnings[0], "the bundle does not describe the machine it was recorded on");
}

}  // namespace
}  // namespace kgym::verify
