#include "run/roofline.h"

#include <gtest/gtest.h>

#include "util/cpu_set.h"
#include "util/fs.h"
#include "util/temp_dir.h"

namespace kgym::run {
namespace {

// A small working set: these tests are of the cache, not of the figures.
constexpr std::size_t kSmall = std::size_t{24} << 20;

TEST(Roofline, MeasuredOnceThenFromTheCacheAndADamagedEntryIsMeasuredAgain) {
  util::TempDir dir("kgym-roofs");
  std::string core = std::to_string(*util::allowed_cpus().begin());
  auto first = cpu_device_roofs(core, dir.path(), false, 1, kSmall);
  ASSERT_TRUE(first) << first.error();
  EXPECT_FALSE(first->from_cache);
  EXPECT_TRUE(std::filesystem::exists(first->cache_file));
  auto again = cpu_device_roofs(core, dir.path(), false, 1, kSmall);
  ASSERT_TRUE(again) << again.error();
  EXPECT_TRUE(again->from_cache);
  EXPECT_EQ(again->roofs.bandwidth_gbs.median, first->roofs.bandwidth_gbs.median);
  EXPECT_EQ(again->roofs.float32_gflops.runs, first->roofs.float32_gflops.runs);
  nlohmann::json j = roofs_json(*again);
  EXPECT_EQ(j["cores"], core);
  EXPECT_EQ(j["method"]["version"], kRoofsMethodVersion);
  EXPECT_TRUE(j["from_cache"].get<bool>());

  ASSERT_TRUE(util::write_file_atomic(first->cache_file, "{not json"));
  auto remeasured = cpu_device_roofs(core, dir.path(), false, 1, kSmall);
  ASSERT_TRUE(remeasured);
  EXPECT_FALSE(remeasured->from_cache);
  auto fresh = cpu_device_roofs(core, dir.path(), true, 1, kSmall);
  ASSERT_TRUE(fresh);
  EXPECT_FALSE(fresh->from_cache);
}

TEST(Roofline, ADeviceMustBeCoresThisProcessMayUse) {
  util::TempDir dir("kgym-roofs");
  EXPECT_FALSE(cpu_device_roofs("gpu0", dir.path(), false, 1));
  auto outside = cpu_device_roofs("100000", dir.path(), false, 1);
  ASSERT_FALSE(outside);
  EXPECT_NE(outside.error().find("100000"), std::string::npos) << outside.error();
}

}  // namespace
}  // namespace kgym::run
