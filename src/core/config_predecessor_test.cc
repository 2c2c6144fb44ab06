#include "core/config_predecessor.h"

#include <gtest/gtest.h>

namespace kgym::config_detail {
namespace {

TEST(ConfigPredecessor, PyptoGymsKeysNameTheirPlaceInKgym) {
  auto model = predecessor_key("pypto.opencode_model");
  ASSERT_TRUE(model);
  EXPECT_NE(model->find("pypto-gym's key; in kgym it is agent.model"), std::string::npos) << *model;
  EXPECT_NE(predecessor_key("output.base_dir")->find("output.root_dir"), std::string::npos);
  EXPECT_NE(predecessor_key("verifier.verify_atol")->find("verifier.tolerances"), std::string::npos);
  EXPECT_FALSE(predecessor_key("verifier.trails"));  // a typo is no predecessor key
  EXPECT_FALSE(predecessor_key("opencode_model"));   // only at its own place
}

}  // namespace
}  // namespace kgym::config_detail
