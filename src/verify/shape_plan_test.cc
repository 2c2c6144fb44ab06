#include "verify/shape_plan.h"

#include <gtest/gtest.h>

namespace kgym::verify {
namespace {

using nlohmann::json;

TEST(ShapePlan, HeldOutShapeShrinksSizeConstantsFromTheSeed) {
  json constants = {{"batch_size", 64}, {"dim", 4096}, {"reduce_dim", 1}, {"kernel", 3}};
  auto shapes = extra_shapes(constants, json::array(), {}, 11);
  ASSERT_EQ(shapes.size(), 1u);
  const auto& held = shapes[0];
  EXPECT_EQ(held.origin, "held_out");
  EXPECT_EQ(held.overrides.count("reduce_dim"), 0u);  // small constants stay
  EXPECT_EQ(held.overrides.count("kernel"), 0u);
  ASSERT_EQ(held.overrides.count("dim"), 1u);
  EXPECT_GE(held.overrides.at("dim"), 2048);
  EXPECT_LT(held.overrides.at("dim"), 4096);
  EXPECT_LT(held.overrides.at("batch_size"), 64);
  // Decided by the seed: the same seed gives the same shape, another seed
  // (almost always) another one.
  EXPECT_EQ(extra_shapes(constants, json::array(), {}, 11)[0].overrides, held.overrides);
  EXPECT_NE(extra_shapes(constants, json::array(), {}, 12)[0].overrides, held.overrides);
}

TEST(ShapePlan, DeclaredCasesComeFirstAndKeepTheBaseOverrides) {
  json constants = {{"n", 8}};
  json declared = json::array({json{{"n", 5}}, json{{"n", 8}}, json{{"n", 9}, {"name", "x"}}});
  auto shapes = extra_shapes(constants, declared, {{"n", 8}, {"other", 2}}, 1);
  ASSERT_EQ(shapes.size(), 3u);  // {n: 8} is the default shape again
  EXPECT_EQ(shapes[0].origin, "declared");
  EXPECT_EQ(shapes[0].overrides, (std::map<std::string, long long>{{"n", 5}, {"other", 2}}));
  EXPECT_EQ(shapes[1].overrides, (std::map<std::string, long long>{{"n", 9}, {"other", 2}}));
  EXPECT_EQ(shapes[2].origin, "held_out");
  EXPECT_EQ(overrides_string(shapes[0].overrides), "n=5, other=2");
}

TEST(ShapePlan, TheHeldOutShapeScalesTheSizesProblemSizeScales) {
  // `height` is a constant the inputs do not read (the load reply's
  // size_keys leave it out); a tuple element is a size like any other.
  json constants = {{"batch_size", 64}, {"height", 480}, {"block[1]", 1024}};
  auto shapes = extra_shapes(constants, json::array(), {}, 11, json::array({"batch_size", "block[1]"}));
  ASSERT_EQ(shapes.size(), 1u);
  EXPECT_EQ(shapes[0].overrides.count("height"), 0u);
  EXPECT_LT(shapes[0].overrides.at("block[1]"), 1024);
  EXPECT_LT(shapes[0].overrides.at("batch_size"), 64);
}

TEST(ShapePlan, NoSizeConstantsNoHeldOutShape) {
  EXPECT_TRUE(extra_shapes(json{{"dim", 1}}, nullptr, {}, 3).empty());
  EXPECT_TRUE(extra_shapes(json::object(), json::array(), {}, 3).empty());
}

}  // namespace
}  // namespace kgym::verify
