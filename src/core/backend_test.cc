#include "core/backend.h"

#include <gtest/gtest.h>

namespace kgym {
namespace {

TEST(BackendTest, EveryConfigNameHasOneDescription) {
  std::vector<std::string_view> names = backend_names();
  EXPECT_EQ(names, (std::vector<std::string_view>{"cpu", "cuda", "npu"}));
  for (std::string_view name : names) {
    ASSERT_NE(find_backend(name), nullptr) << name;
    EXPECT_EQ(find_backend(name)->name, name);
    EXPECT_FALSE(find_backend(name)->spec_rules.empty()) << name;
  }
  EXPECT_EQ(find_backend("tpu"), nullptr);
  EXPECT_EQ(backend_named("tpu").id, BackendId::kCpu);
}

// What used to be spelled as comparisons in four layers.
TEST(BackendTest, DevicesKernelsAndForksDifferAsTheRuntimesDo) {
  const Backend& cpu = backend_named("cpu");
  const Backend& cuda = backend_named("cuda");
  const Backend& npu = backend_named("npu");
  EXPECT_TRUE(cpu.devices_are_cores && cpu.forks_workers && cpu.always_available);
  EXPECT_FALSE(cuda.forks_workers || npu.forks_workers);
  EXPECT_TRUE(cuda.inline_needs_global);
  EXPECT_FALSE(cpu.inline_needs_global || npu.inline_needs_global);
  EXPECT_EQ(cuda.agent_device_env, (std::vector<std::string_view>{"CUDA_VISIBLE_DEVICES"}));
  EXPECT_TRUE(cuda.worker_device_env.empty());
  EXPECT_EQ(npu.worker_device_env, (std::vector<std::string_view>{"TILE_FWK_DEVICE_ID"}));
  EXPECT_EQ(npu.torch_extension, "torch_npu");
  EXPECT_FALSE(cpu.device_glue);
  EXPECT_TRUE(cuda.device_glue && npu.device_glue);
}

TEST(BackendTest, ToleranceIsTheConfiguredOneElseTheBackendsTable) {
  std::map<std::string, Tolerance> configured{{"float32", {0.5, 0.25}}};
  EXPECT_EQ(tolerance_for(configured, "float32").atol, 0.5);
  EXPECT_EQ(tolerance_for(configured, "float32").rtol, 0.25);
  EXPECT_EQ(tolerance_for(configured, "float16").rtol, default_tolerance("float16").rtol);
  EXPECT_EQ(tolerance_for(configured, "int64").atol, 0);
  EXPECT_EQ(tolerance_for({}, "bfloat16", backend_named("npu")).atol,
            backend_named("npu").default_tolerance("bfloat16").atol);
}

}  // namespace
}  // namespace kgym
