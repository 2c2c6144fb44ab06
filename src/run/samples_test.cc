#include "run/samples.h"

#include <gtest/gtest.h>

namespace kgym::run {
namespace {

CaseResult sample(Verdict verdict, std::optional<double> speedup = std::nullopt) {
  CaseResult r;
  r.case_id = "level1/1_Op";
  r.verdict = verdict;
  r.reason = std::string(to_string(verdict));
  if (speedup) {
    r.performance = Performance{};
    r.performance->speedup.median = *speedup;
  }
  return r;
}

TEST(SampleSeed, OneSampleKeepsTheRunSeedAndSamplesDiffer) {
  EXPECT_EQ(sample_seed(42, "level1/1_Op", 0), 42u);
  EXPECT_NE(sample_seed(42, "level1/1_Op", 1), sample_seed(42, "level1/1_Op", 2));
  EXPECT_NE(sample_seed(42, "level1/1_Op", 1), sample_seed(42, "level1/2_Op", 1));
  EXPECT_NE(sample_seed(42, "level1/1_Op", 1), sample_seed(43, "level1/1_Op", 1));
  EXPECT_EQ(sample_seed(42, "level1/1_Op", 3), sample_seed(42, "level1/1_Op", 3));
}

TEST(ChosenSample, TheFastestPassingSample) {
  std::vector<CaseResult> s = {sample(Verdict::kPass, 1.1), sample(Verdict::kFailCorrectness),
                               sample(Verdict::kPass, 1.7), sample(Verdict::kPass, 1.7)};
  EXPECT_EQ(chosen_sample(s), 2u);  // the tie goes to the lower sample
}

TEST(ChosenSample, AMeasuredPassBeatsAnUnmeasuredOne) {
  std::vector<CaseResult> s = {sample(Verdict::kPass), sample(Verdict::kPass, 0.5)};
  EXPECT_EQ(chosen_sample(s), 1u);
  std::vector<CaseResult> unmeasured = {sample(Verdict::kCrash), sample(Verdict::kPass),
                                        sample(Verdict::kPass)};
  EXPECT_EQ(chosen_sample(unmeasured), 1u);
}

TEST(ChosenSample, WithoutAPassACheatIsNeverHidden) {
  std::vector<CaseResult> s = {sample(Verdict::kFailCorrectness), sample(Verdict::kFailCheat)};
  EXPECT_EQ(chosen_sample(s), 1u);
}

TEST(ChosenSample, WithoutAPassTheFailureThatGotFurthest) {
  std::vector<CaseResult> s = {sample(Verdict::kGenerationFailed), sample(Verdict::kCompileError),
                               sample(Verdict::kRuntimeError), sample(Verdict::kRuntimeError)};
  EXPECT_EQ(chosen_sample(s), 2u);
  std::vector<CaseResult> all_same = {sample(Verdict::kTimeout), sample(Verdict::kTimeout)};
  EXPECT_EQ(chosen_sample(all_same), 0u);
}

TEST(CaseResultOfSamples, TheChosenResultWithItsSamplesBlock) {
  std::vector<CaseResult> s = {sample(Verdict::kPass, 1.2), sample(Verdict::kFailCorrectness),
                               sample(Verdict::kPass, 1.5)};
  CaseResult r = case_result_of_samples(s);
  EXPECT_EQ(r.verdict, Verdict::kPass);
  EXPECT_EQ(r.performance->speedup.median, 1.5);
  ASSERT_TRUE(r.samples);
  EXPECT_EQ(r.samples->n, 3);
  EXPECT_EQ(r.samples->passed, 2);
  EXPECT_EQ(r.samples->chosen, 3);
  EXPECT_DOUBLE_EQ(r.samples->pass_at_k.at(1), 2.0 / 3);
  EXPECT_EQ(r.samples->pass_at_k.at(2), 1.0);
  EXPECT_EQ(r.samples->pass_at_k.at(3), 1.0);
  EXPECT_EQ(r.samples->best_speedup, 1.5);
  ASSERT_EQ(r.samples->per_sample.size(), 3u);
  EXPECT_EQ(r.samples->per_sample[1].verdict, Verdict::kFailCorrectness);
  EXPECT_EQ(r.samples->per_sample[1].sample, 2);
}

TEST(CaseResultOfSamples, AgentUsageIsSummedOverSamples) {
  std::vector<CaseResult> s = {sample(Verdict::kPass, 1.0), sample(Verdict::kPass, 2.0),
                               sample(Verdict::kCrash)};
  s[0].generation = Generation{};
  s[0].generation->tokens_in = 100;
  s[0].generation->cost = 0.25;
  s[1].generation = Generation{};
  s[1].generation->tokens_in = 50;
  s[1].generation->cost = 0.5;
  CaseResult r = case_result_of_samples(s);
  EXPECT_EQ(r.generation->cost, 0.5);  // the chosen sample's own
  EXPECT_EQ(r.samples->tokens_in, 150);
  EXPECT_EQ(r.samples->cost, 0.75);
  EXPECT_FALSE(r.samples->tokens_out);
  CaseResult back = result_from_json(to_json(r));
  EXPECT_EQ(back.samples->tokens_in, 150);
  EXPECT_EQ(back.samples->cost, 0.75);
}

TEST(CaseResultOfSamples, SurvivesTheResultJson) {
  CaseResult r = case_result_of_samples({sample(Verdict::kCrash), sample(Verdict::kPass, 2.0)});
  CaseResult back = result_from_json(to_json(r));
  ASSERT_TRUE(back.samples);
  EXPECT_EQ(back.samples->n, 2);
  EXPECT_EQ(back.samples->passed, 1);
  EXPECT_EQ(back.samples->chosen, 2);
  EXPECT_EQ(back.samples->pass_at_k, r.samples->pass_at_k);
  EXPECT_EQ(back.samples->best_speedup, 2.0);
  EXPECT_EQ(back.samples->per_sample[0].verdict, Verdict::kCrash);
  EXPECT_EQ(to_json(back), to_json(r));
}

TEST(CaseResultOfSamples, ASingleSampleResultHasNoSamplesKey) {
  EXPECT_FALSE(to_json(sample(Verdict::kPass)).contains("samples"));
}

}  // namespace
}  // namespace kgym::run
