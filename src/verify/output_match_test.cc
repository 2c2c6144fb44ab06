#include "verify/output_match.h"

#include <cstring>
#include <vector>

#include <gtest/gtest.h>

#include "verify/tensor_bytes_test_util.h"

namespace kgym::verify {
namespace {

using testing::float_bytes;

TEST(OutputMatch, EqualOutputsMatchWithTheirTolerancesRecorded) {
  std::string a = float_bytes({1, 2, 3}), b = float_bytes({1, 2, 3.00001f});
  std::vector<TensorBytes> got{{"float32", {3}, a}}, want{{"float32", {3}, b}};
  OutputMatch match = match_outputs(got, want, {});
  EXPECT_TRUE(match.ok) << match.problem;
  EXPECT_EQ(match.problem, "");
  ASSERT_EQ(match.tolerances.size(), 1u);
  EXPECT_GT(match.tolerances[0].atol, 0);
  ASSERT_TRUE(match.max_abs_err);
  EXPECT_LT(*match.max_abs_err, 1e-4);
}

TEST(OutputMatch, ACountMismatchNamesNoOutput) {
  std::string a = float_bytes({1});
  std::vector<TensorBytes> got{{"float32", {1}, a}, {"float32", {1}, a}}, want{{"float32", {1}, a}};
  OutputMatch match = match_outputs(got, want, {});
  EXPECT_FALSE(match.ok);
  EXPECT_FALSE(match.failed_output);
  EXPECT_EQ(match.problem, "2 outputs, the reference 1");
}

TEST(OutputMatch, TheFirstOutputOutsideItsToleranceIsNamed) {
  std::string same = float_bytes({1, 2}), off = float_bytes({1, 2.5f});
  std::vector<TensorBytes> got{{"float32", {2}, same}, {"float32", {2}, off}};
  std::vector<TensorBytes> want{{"float32", {2}, same}, {"float32", {2}, same}};
  OutputMatch match = match_outputs(got, want, {});
  EXPECT_FALSE(match.ok);
  ASSERT_TRUE(match.failed_output);
  EXPECT_EQ(*match.failed_output, 1u);
  EXPECT_EQ(match.problem.rfind("output 1: ", 0), 0u) << match.problem;
}

TEST(OutputMatch, ZerosForTinyOutputsFailOnlyWhenScaled) {
  // Every output of the reference within the default atol of zero.
  std::string tiny = float_bytes({1e-6f, -2e-6f, 3e-6f, 1e-6f}), zeros = float_bytes({0, 0, 0, 0});
  std::vector<TensorBytes> got{{"float32", {4}, zeros}}, want{{"float32", {4}, tiny}};
  EXPECT_FALSE(match_outputs(got, want, {}).ok);
  EXPECT_TRUE(match_outputs(got, want, {.scaled = false}).ok);
}

TEST(OutputMatch, TheScaleCanComeFromAnotherSetOfOutputs) {
  // The determinism check: the candidate against itself, scaled by the
  // reference's output.
  std::string first = float_bytes({1e-6f, 1e-6f}), second = float_bytes({3e-6f, 3e-6f}), large = float_bytes({10, 10});
  std::vector<TensorBytes> got{{"float32", {2}, second}}, want{{"float32", {2}, first}};
  std::vector<TensorBytes> scale{{"float32", {2}, large}};
  EXPECT_FALSE(match_outputs(got, want, {}).ok);
  EXPECT_TRUE(match_outputs(got, want, {}, scale).ok);
}

TEST(OutputMatch, ADegenerateReferenceAddsARelativeBound) {
  // A constant reference; an answer within atol elementwise, but 10 % off
  // over the whole output.
  std::string want_bytes = float_bytes({1e-3f, 1e-3f, 1e-3f, 1e-3f});
  std::string got_bytes = float_bytes({1.1e-3f, 1.1e-3f, 1.1e-3f, 1.1e-3f});
  std::vector<TensorBytes> got{{"float32", {4}, got_bytes}}, want{{"float32", {4}, want_bytes}};
  std::map<std::string, Tolerance> loose{{"float32", {1e-3, 1e-3}}};
  EXPECT_TRUE(match_outputs(got, want, {.configured = &loose, .scaled = false}).ok);
  OutputMatch match = match_outputs(got, want, {.configured = &loose, .scaled = false, .degenerate = "constant"});
  EXPECT_FALSE(match.ok);
  EXPECT_NE(match.problem.find("degenerate reference: constant"), std::string::npos) << match.problem;
}

}  // namespace
}  // namespace kgym::verify
