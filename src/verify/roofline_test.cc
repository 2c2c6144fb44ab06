#include "verify/roofline.h"

#include <sched.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <memory>
#include <optional>
#include <set>
#include <vector>

#include <gtest/gtest.h>

#include "util/cpu_set.h"
#include "util/fs.h"
#include "util/temp_dir.h"

namespace kgym::verify {
namespace {

// A small working set: the spinner's test is of the measurement's record
// of other work, not of the figures.
constexpr std::size_t kSmall = std::size_t{24} << 20;

// Figures that say which measurement made them, without measuring: the
// cache's tests are of the cache.
struct FakeMeasure {
  std::shared_ptr<int> made = std::make_shared<int>(0);
  std::optional<double> foreign_share = 0.0;
  RoofsOptions options() const {
    return {
        .runs = 1,
        .measure = [made = made, share = foreign_share](const std::set<int>& cores, int runs, std::size_t) {
          util::Roofs r;
          r.cores = cores;
          double n = ++*made;
          r.bandwidth_gbs = {.median = n, .min = n, .max = n, .runs = std::vector<double>(runs, n)};
          r.float32_gflops = {.median = 10 * n, .min = 10 * n, .max = 10 * n, .runs = {10 * n}};
          r.float64_gflops = {.median = 5 * n, .min = 5 * n, .max = 5 * n, .runs = {5 * n}};
          r.foreign_cpu_share = share;
          return r;
        }};
  }
};

TEST(Roofline, MeasuredOnceThenFromTheCacheAndADamagedEntryIsMeasuredAgain) {
  util::TempDir dir("kgym-roofs");
  std::string core = std::to_string(*util::allowed_cpus().begin());
  FakeMeasure fake;
  auto first = cpu_device_roofs(core, dir.path(), false, fake.options());
  ASSERT_TRUE(first) << first.error();
  EXPECT_FALSE(first->from_cache);
  EXPECT_EQ(*fake.made, 1);
  EXPECT_TRUE(std::filesystem::exists(first->cache_file));
  auto again = cpu_device_roofs(core, dir.path(), false, fake.options());
  ASSERT_TRUE(again) << again.error();
  EXPECT_TRUE(again->from_cache);
  EXPECT_EQ(*fake.made, 1);
  EXPECT_EQ(again->roofs.bandwidth_gbs.median, first->roofs.bandwidth_gbs.median);
  EXPECT_EQ(again->roofs.float32_gflops.runs, first->roofs.float32_gflops.runs);
  nlohmann::json j = roofs_json(*again);
  EXPECT_EQ(j["cores"], core);
  EXPECT_EQ(j["method"]["version"], kRoofsMethodVersion);
  EXPECT_TRUE(j["from_cache"].get<bool>());

  ASSERT_TRUE(util::write_file_atomic(first->cache_file, "{not json"));
  auto remeasured = cpu_device_roofs(core, dir.path(), false, fake.options());
  ASSERT_TRUE(remeasured);
  EXPECT_FALSE(remeasured->from_cache);
  EXPECT_EQ(remeasured->roofs.bandwidth_gbs.median, 2);
  auto fresh = cpu_device_roofs(core, dir.path(), true, fake.options());
  ASSERT_TRUE(fresh);
  EXPECT_FALSE(fresh->from_cache);
  EXPECT_EQ(*fake.made, 3);
}

// Another process spinning on the measured core: the figures are low, the
// record says how much of the core it took, and the next run measures again.
TEST(Roofline, RoofsMeasuredBesideOtherWorkAreMeasuredAgain) {
  util::TempDir dir("kgym-roofs");
  int core = *util::allowed_cpus().begin();
  pid_t spinner = fork();
  ASSERT_GE(spinner, 0);
  if (spinner == 0) {
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(core, &set);
    sched_setaffinity(0, sizeof(set), &set);
    for (;;) asm volatile("" ::: "memory");  // spins until killed
  }
  auto roofs =
      cpu_device_roofs(std::to_string(core), dir.path(), false, {.runs = 1, .working_set_bytes = kSmall});
  kill(spinner, SIGKILL);
  waitpid(spinner, nullptr, 0);
  ASSERT_TRUE(roofs) << roofs.error();
  ASSERT_TRUE(roofs->roofs.foreign_cpu_share);
  EXPECT_GT(*roofs->roofs.foreign_cpu_share, 0.2);
  EXPECT_TRUE(roofs->contended());
  EXPECT_FALSE(roofs_json(*roofs)["foreign_cpu_share"].is_null());
  EXPECT_TRUE(std::filesystem::exists(roofs->cache_file));  // a verification reads them as they are
  // The next ones from a fake with the real one's cache file.
  FakeMeasure fake;
  RoofsOptions faked = fake.options();
  faked.working_set_bytes = kSmall;
  auto soon = cpu_device_roofs(std::to_string(core), dir.path(), false, faked);
  ASSERT_TRUE(soon);
  EXPECT_TRUE(soon->from_cache);  // not measured again at once
  // Once old enough, the next run measures them again.
  auto text = util::read_file(roofs->cache_file);
  ASSERT_TRUE(text);
  nlohmann::json j = nlohmann::json::parse(*text);
  j["measured_unix"] = j["measured_unix"].get<double>() - kRemeasureContendedAfterS - 1;
  ASSERT_TRUE(util::write_file_atomic(roofs->cache_file, j.dump()));
  auto again = cpu_device_roofs(std::to_string(core), dir.path(), false, faked);
  ASSERT_TRUE(again);
  EXPECT_FALSE(again->from_cache);
  EXPECT_EQ(*fake.made, 1);
}

TEST(Roofline, ACaseGetsTheSmallestCacheLevelThatHoldsItsBytesAndTheHigherPeak) {
  DeviceRoofs d;
  d.roofs.cores = {0};
  d.roofs.bandwidth_gbs = {.median = 10, .min = 9, .max = 12, .runs = {9, 10, 12}};
  d.roofs.caches = {{1, 48 << 10, {.median = 90, .min = 80, .max = 100, .runs = {}}},
                    {2, 2 << 20, {.median = 50, .min = 40, .max = 60, .runs = {}}}};
  d.roofs.float32_gflops = {.median = 70, .min = 60, .max = 80, .runs = {}};
  d.roofs.float64_gflops = {.median = 35, .min = 30, .max = 40, .runs = {}};
  d.roofs.gemm_float32_gflops = util::RoofFigure{.median = 85, .min = 80, .max = 90, .runs = {}};
  d.roofs.gemm_float64_gflops = util::RoofFigure{.median = 20, .min = 18, .max = 22, .runs = {}};
  RoofsUsed small = roofs_used(d, "float32", 40 << 10);
  EXPECT_EQ(small.memory_level, "L1");
  EXPECT_EQ(small.bandwidth_gbs, 100);  // the best run: an upper bound
  EXPECT_EQ(small.peak_gflops, 90);     // the GEMM beat the FMA loop
  RoofsUsed middle = roofs_used(d, "float64", 1 << 20);
  EXPECT_EQ(middle.memory_level, "L2");
  EXPECT_EQ(middle.peak_gflops, 40);
  RoofsUsed big = roofs_used(d, "float32", 100 << 20);
  EXPECT_EQ(big.memory_level, "main memory");
  EXPECT_EQ(big.bandwidth_gbs, 12);
}

TEST(Roofline, ADeviceMustBeCoresThisProcessMayUse) {
  util::TempDir dir("kgym-roofs");
  EXPECT_FALSE(cpu_device_roofs("gpu0", dir.path(), false, {.runs = 1}));
  auto outside = cpu_device_roofs("100000", dir.path(), false, {.runs = 1});
  ASSERT_FALSE(outside);
  EXPECT_NE(outside.error().find("100000"), std::string::npos) << outside.error();
}

}  // namespace
}  // namespace kgym::verify
