// problem.sizes in result.json: written, read back, and described.
#include <gtest/gtest.h>

#include "core/result.h"

namespace kgym {
namespace {

ProblemSizes shrunk() {
  ProblemSizes s;
  s.policy = "auto";
  s.sizes = {{"batch_size", 64}, {"shape[1]", 256}};
  s.original = {{"batch_size", 4096}, {"shape[1]", 1024}, {"dim", 512}};
  s.overrides = {{"dim", 512}};
  s.factor = 1.0 / 64;
  s.fits = true;
  s.bytes = 3 << 20;
  s.forward_ms = 1.25;
  return s;
}

TEST(ProblemSizes, RoundTripsThroughTheResult) {
  CaseResult r;
  r.case_id = "level1/19_ReLU";
  r.problem = shrunk();
  CaseResult back = result_from_json(nlohmann::json::parse(to_json(r).dump()));
  ASSERT_TRUE(back.problem);
  EXPECT_EQ(back.problem->sizes, r.problem->sizes);
  EXPECT_EQ(back.problem->original, r.problem->original);
  EXPECT_EQ(back.problem->overrides, r.problem->overrides);
  EXPECT_DOUBLE_EQ(back.problem->factor, 1.0 / 64);
  EXPECT_EQ(back.problem->bytes, r.problem->bytes);
  EXPECT_EQ(to_json(r)["problem"]["sizes"]["sizes"]["shape[1]"], 256);
}

TEST(ProblemSizes, AResultWithoutSizesHasNone) {
  CaseResult r;
  EXPECT_FALSE(to_json(r).contains("problem"));
  EXPECT_FALSE(result_from_json(to_json(r)).problem);
}

TEST(ProblemSizes, DescribedWithTheirOriginals) {
  std::string text = describe_sizes(shrunk());
  EXPECT_NE(text.find("batch_size=64 (as written 4096)"), std::string::npos) << text;
  EXPECT_NE(text.find("shape[1]=256 (as written 1024)"), std::string::npos) << text;
  EXPECT_NE(text.find("factor 1/64"), std::string::npos) << text;
  ProblemSizes over = shrunk();
  over.fits = false;
  EXPECT_NE(describe_sizes(over).find("over the budget"), std::string::npos);
  EXPECT_EQ(describe_sizes(ProblemSizes{}), "sizes as written");
}

TEST(TorchEnvironment, SurvivesTheResultJsonAndIsAbsentWhenUnknown) {
  CaseResult r;
  r.environment = TorchEnvironment{"/var/cache/kgym/torch2/bin/python", "2.15.0+cu132", "cuda 13.2"};
  nlohmann::json j = to_json(r);
  EXPECT_EQ(j["environment"]["torch"], "2.15.0+cu132");
  CaseResult back = result_from_json(j);
  ASSERT_TRUE(back.environment);
  EXPECT_EQ(back.environment->python, "/var/cache/kgym/torch2/bin/python");
  EXPECT_EQ(back.environment->torch_build, "cuda 13.2");
  EXPECT_FALSE(to_json(CaseResult{}).contains("environment"));
  EXPECT_FALSE(result_from_json(to_json(CaseResult{})).environment);
}

}  // namespace
}  // namespace kgym
