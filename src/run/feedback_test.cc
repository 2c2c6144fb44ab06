#include "run/feedback.h"

#include <gtest/gtest.h>

#include <algorithm>

namespace kgym::run {
namespace {

TEST(Feedback, UntilPassOrAClearSpeedup) {
  CaseResult r;
  r.verdict = Verdict::kPass;
  EXPECT_TRUE(meets(r, "pass"));
  EXPECT_FALSE(meets(r, "fast_1")) << "no speedup measured";
  r.performance.emplace();
  r.performance->speedup = {1.5, Interval{1.2, 1.8}};
  EXPECT_TRUE(meets(r, "fast_1"));
  EXPECT_FALSE(meets(r, "fast_2"));
  r.performance->speedup = {1.5, std::nullopt};
  EXPECT_FALSE(meets(r, "fast_1")) << "fast_p counts an interval above p, as summary.json does";
  r.verdict = Verdict::kFailCorrectness;
  EXPECT_FALSE(meets(r, "pass"));
}

TEST(Feedback, ACheatOrAnOutcomeNotTheCandidatesEndsTheRounds) {
  for (Verdict v : {Verdict::kFailCorrectness, Verdict::kCompileError, Verdict::kRuntimeError,
                    Verdict::kTimeout, Verdict::kCrash, Verdict::kGenerationFailed, Verdict::kPass})
    EXPECT_TRUE(worth_another_round(v)) << to_string(v);
  for (Verdict v :
       {Verdict::kFailCheat, Verdict::kReferenceError, Verdict::kDeviceUnavailable, Verdict::kHarnessError})
    EXPECT_FALSE(worth_another_round(v)) << to_string(v);
}

TEST(Feedback, TheCompilersErrorLinesTrimmed) {
  std::string log =
      "[1/3] c++ -c main.cpp\nmain.cpp:4:1: error: 'x' was not declared\n    4 | x = 1;\n"
      "ok line\nninja: build stopped: subcommand failed.\nRuntimeError: Error building extension\n";
  EXPECT_EQ(
      compiler_errors(log),
      "main.cpp:4:1: error: 'x' was not declared\n    4 | x = 1;\nRuntimeError: Error building extension\n");
  std::string many;
  for (int i = 0; i < 100; ++i) many += "error: " + std::string(400, 'e') + "\n";
  std::string trimmed = compiler_errors(many, 5);
  EXPECT_EQ(std::count(trimmed.begin(), trimmed.end(), '\n'), 5);
  EXPECT_LT(trimmed.size(), 5 * 320u);
}

TEST(Feedback, APassSaysItsSpeedupAndWhatEndsTheRounds) {
  CaseResult r;
  r.verdict = Verdict::kPass;
  r.reason = "pass";
  r.performance.emplace();
  r.performance->speedup = {0.95, Interval{0.9, 1.01}};
  r.performance->reference.median_ms = 2.0;
  r.performance->candidate.median_ms = 2.1;
  BaselineSpeedup compile{.name = "compile"};
  compile.speedup = SpeedupEstimate{0.5, Interval{0.4, 0.6}};
  r.performance->speedup_vs.push_back(compile);
  FeedbackConfig feedback{.rounds = 3, .until = "fast_1"};
  std::string text = feedback_section(r, 1, feedback, "");
  EXPECT_NE(text.find("Round 1 of 3: the verdict on your candidate is `pass`"), std::string::npos);
  EXPECT_NE(
      text.find("Speedup over the PyTorch reference: 0.95× (95 % interval 0.90×–1.01×); the reference takes "
                "2.000 ms, yours 2.100 ms."),
      std::string::npos)
      << text;
  EXPECT_NE(text.find("Against the reference through torch.compile: 0.50×"), std::string::npos);
  EXPECT_NE(text.find("lower end of its speedup's 95 % interval above 1×"), std::string::npos);
  EXPECT_NE(text.find("2 rounds are left"), std::string::npos);
}

}  // namespace
}  // namespace kgym::run
