#include "verify/correctness_phase.h"

#include <deque>
#include <vector>

#include <gtest/gtest.h>

#include "verify/tensor_bytes_test_util.h"

namespace kgym::verify::detail {
namespace {

using nlohmann::json;
using testing::float_bytes;

// Scripted workers: the reference answers every trial with `reference`
// (its inputs blob first), the candidate with the next of `candidate`
// (the last one again once they run out), and both record what they were
// asked.
struct ScriptedWorkers {
  std::vector<float> reference = {1, 2, 3, 4};
  std::vector<float> reference_again;  // the reference's answer to a re-run; `reference` when empty
  std::deque<std::vector<float>> candidate;
  json candidate_facts = json::object();
  std::vector<std::pair<Role, json>> requests;

  static worker::Message reply(const std::vector<float>& values, bool with_inputs, json facts) {
    worker::Message m;
    m.header = {{"outputs", {{{"dtype", "float32"}, {"shape", {static_cast<int>(values.size())}}}}},
                {"runtime", std::move(facts)}};
    if (with_inputs) {
      m.header["inputs"] = {{{"kind", "tensor"}, {"dtype", "float32"}, {"shape", {4}}}};
      m.payloads.push_back("inputs");
    }
    m.payloads.push_back(float_bytes(values));
    return m;
  }

  CorrectnessCall call() {
    return [this](Role side, const worker::Message& request, std::string_view) -> std::expected<worker::Message, Failure> {
      requests.emplace_back(side, request.header);
      if (side == Role::kReference) {
        bool rerun = !request.header.contains("seed");  // trial 0's inputs again
        return reply(rerun && !reference_again.empty() ? reference_again : reference, !rerun, json::object());
      }
      std::vector<float> values = candidate.empty() ? reference : candidate.front();
      if (candidate.size() > 1) candidate.pop_front();
      return reply(values, false, candidate_facts);
    };
  }
};

struct Phase {
  VerifierConfig config;
  CaseResult result;
  std::vector<std::string> notes;
  ScriptedWorkers workers;

  std::expected<void, Failure> run(bool trace_expected = false) {
    CorrectnessPhase phase({.config = &config, .run_seed = 42, .op_trace = true, .trace_expected = trace_expected},
                           workers.call(), [this](const std::string& line) { notes.push_back(line); }, result);
    return phase.run_trials();
  }
};

TEST(CorrectnessPhase, AMatchingCandidatePassesEveryTrialAndIsAskedTwiceOnTrialZero) {
  Phase p;
  ASSERT_TRUE(p.run());
  const int trials = 3 + kSignedNormalTrials;
  EXPECT_EQ(p.result.correctness.trials, trials);
  EXPECT_EQ(p.result.correctness.trials_passed, trials);
  EXPECT_EQ(p.result.correctness.seeds.size(), static_cast<std::size_t>(trials));
  EXPECT_EQ(p.result.correctness.distributions.back(), "normal");
  ASSERT_EQ(p.result.correctness.outputs.size(), 1u);
  EXPECT_EQ(p.result.correctness.outputs[0].dtype, "float32");
  EXPECT_EQ(p.result.correctness.input_dtypes, std::vector<std::string>{"float32"});
  int candidate_calls = 0, reference_calls = 0;
  for (const auto& [side, header] : p.workers.requests) {
    (side == Role::kCandidate ? candidate_calls : reference_calls)++;
    if (side == Role::kCandidate) {
      EXPECT_TRUE(header.value("trace", false));
    }
  }
  EXPECT_EQ(candidate_calls, trials + 1);  // trial 0 repeated: determinism
  EXPECT_EQ(reference_calls, trials + 1);  // trial 0 re-run: self-consistency
}

TEST(CorrectnessPhase, AWrongOutputFailsCorrectnessWithItsTrialAndError) {
  Phase p;
  p.workers.candidate = {{1, 2, 3, 5}};
  auto outcome = p.run();
  ASSERT_FALSE(outcome);
  EXPECT_EQ(outcome.error().verdict, Verdict::kFailCorrectness);
  EXPECT_NE(outcome.error().reason.find("trial 0 (given inputs)"), std::string::npos) << outcome.error().reason;
  EXPECT_EQ(p.result.correctness.failed_trial, 0);
  EXPECT_EQ(p.result.correctness.failed_output, 0);
  ASSERT_TRUE(p.result.correctness.max_abs_err);
  EXPECT_DOUBLE_EQ(*p.result.correctness.max_abs_err, 1.0);
}

TEST(CorrectnessPhase, AnAnswerThatChangesOnTheSameInputsIsNondeterministic) {
  Phase p;
  p.workers.candidate = {{1, 2, 3, 4}, {1, 2, 3, 9}};
  auto outcome = p.run();
  ASSERT_FALSE(outcome);
  EXPECT_EQ(outcome.error().verdict, Verdict::kFailCheat);
  ASSERT_TRUE(outcome.error().cheat);
  EXPECT_EQ(outcome.error().cheat->rule, "runtime.nondeterministic");
  EXPECT_NE(outcome.error().reason.find("trial 0 repeated"), std::string::npos);
}

TEST(CorrectnessPhase, AReferenceThatDoesNotMatchItselfIsTheProblemsFault) {
  Phase p;
  p.workers.reference_again = {1, 2, 3, 7};
  auto outcome = p.run();
  ASSERT_FALSE(outcome);
  EXPECT_EQ(outcome.error().verdict, Verdict::kReferenceError);
  EXPECT_EQ(p.result.correctness.trials, 0);  // no candidate was asked
}

TEST(CorrectnessPhase, ARuntimeFindingInACandidateReplyIsACheat) {
  Phase p;
  p.workers.candidate_facts = {{"op_trace", {{"aten.relu", 1}}}};
  auto outcome = p.run();
  ASSERT_FALSE(outcome);
  ASSERT_TRUE(outcome.error().cheat);
  EXPECT_EQ(outcome.error().cheat->rule, "runtime.op_trace");
  ASSERT_TRUE(p.result.runtime);
  EXPECT_EQ(p.result.runtime->ops.at("aten.relu"), 1);
  EXPECT_FALSE(p.notes.empty());
  EXPECT_NE(p.notes.back().find("runtime finding: runtime.op_trace"), std::string::npos);
}

TEST(CorrectnessPhase, ANullTraceIsACheatOnlyWhereTheReferenceCouldTrace) {
  Phase off;
  off.workers.candidate_facts = {{"op_trace", nullptr}};
  EXPECT_TRUE(off.run(/*trace_expected=*/false));
  Phase on;
  on.workers.candidate_facts = {{"op_trace", nullptr}};
  auto outcome = on.run(/*trace_expected=*/true);
  ASSERT_FALSE(outcome);
  ASSERT_TRUE(outcome.error().cheat);
  EXPECT_EQ(outcome.error().cheat->rule, "runtime.op_trace");
}

TEST(CorrectnessPhase, ATrialWhoseReferenceIsNotFiniteIsSkippedNotHeldAgainstTheCandidate) {
  Phase p;
  float inf = std::numeric_limits<float>::infinity();
  // Trial 0 (given inputs) must be finite to compare; the signed normal
  // trials get a reference that is not.
  ScriptedWorkers& w = p.workers;
  auto scripted = w.call();
  int reference_trials = 0;
  CorrectnessPhase phase(
      {.config = &p.config, .run_seed = 1},
      [&](Role side, const worker::Message& request, std::string_view what) -> std::expected<worker::Message, Failure> {
        if (side == Role::kReference && request.header.value("distribution", "") == "normal") {
          ++reference_trials;
          return ScriptedWorkers::reply({inf, 1, 2, 3}, true, json::object());
        }
        return scripted(side, request, what);
      },
      [](const std::string&) {}, p.result);
  ASSERT_TRUE(phase.run_trials());
  EXPECT_EQ(reference_trials, kSignedNormalTrials);
  EXPECT_EQ(p.result.correctness.trials, 3);
  EXPECT_EQ(p.result.correctness.skipped.size(), static_cast<std::size_t>(kSignedNormalTrials));
}

TEST(CorrectnessPhase, AWorkerFailureEndsThePhaseAsThatFailure) {
  Phase p;
  CorrectnessPhase phase(
      {.config = &p.config},
      [](Role side, const worker::Message& request, std::string_view) -> std::expected<worker::Message, Failure> {
        if (side == Role::kCandidate) return std::unexpected(Failure{Verdict::kCrash, "the candidate died"});
        return ScriptedWorkers::reply({1, 2, 3, 4}, request.header.contains("seed"), json::object());
      },
      [](const std::string&) {}, p.result);
  auto outcome = phase.run_trials();
  ASSERT_FALSE(outcome);
  EXPECT_EQ(outcome.error().verdict, Verdict::kCrash);
}

TEST(CorrectnessPhase, AShapeTrialNamesItsShapeInTheRecordAndInAFailure) {
  Phase p;
  p.workers.candidate = {{0, 0, 0, 0}};
  CorrectnessPhase phase({.config = &p.config}, p.workers.call(), [](const std::string&) {}, p.result);
  auto outcome = phase.shape_trial("held out: N=8");
  ASSERT_FALSE(outcome);
  EXPECT_NE(outcome.error().reason.find("[shape held out: N=8]"), std::string::npos) << outcome.error().reason;
  ASSERT_EQ(p.result.correctness.shapes.size(), 1u);
  EXPECT_EQ(p.result.correctness.shapes[0], "[4] (held out: N=8)");
}

}  // namespace
}  // namespace kgym::verify::detail
