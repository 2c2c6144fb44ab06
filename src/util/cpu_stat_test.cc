#include "util/cpu_stat.h"

#include <gtest/gtest.h>

namespace kgym::util {
namespace {

constexpr const char* kBefore =
    "cpu  300 0 100 1000 10 0 0 0 0 0\n"
    "cpu0 100 0 50 500 5 0 0 0 0 0\n"
    "cpu1 200 0 50 500 5 0 0 0 0 0\n"
    "intr 12345\n";
constexpr const char* kAfter =
    "cpu  500 0 200 1100 10 0 0 0 0 0\n"
    "cpu0 190 0 60 550 5 0 0 0 0 0\n"   // +100 busy, +50 idle
    "cpu1 210 0 50 595 5 0 0 0 0 0\n";  // +10 busy, +95 idle

TEST(CpuStat, ParsesEveryNumberedCore) {
  auto stat = parse_cpu_stat(kBefore);
  ASSERT_TRUE(stat);
  ASSERT_EQ(stat->cores.size(), 2u);
  ASSERT_TRUE(stat->cores[0]);
  EXPECT_EQ(stat->cores[0]->busy, 150u);
  EXPECT_EQ(stat->cores[0]->total, 655u);
}

TEST(CpuStat, CountsStealAndIrqAsBusyAndIowaitAsIdle) {
  auto stat = parse_cpu_stat("cpu0 1 2 3 4 5 6 7 8 9 10\n");
  ASSERT_TRUE(stat);
  EXPECT_EQ(stat->cores[0]->busy, 1u + 2 + 3 + 6 + 7 + 8);
  EXPECT_EQ(stat->cores[0]->total, 1u + 2 + 3 + 4 + 5 + 6 + 7 + 8);
}

TEST(CpuStat, OfflineCoresHaveNoEntry) {
  auto stat = parse_cpu_stat("cpu0 1 0 0 1\ncpu2 1 0 0 1\n");
  ASSERT_TRUE(stat);
  ASSERT_EQ(stat->cores.size(), 3u);
  EXPECT_FALSE(stat->cores[1]);
  EXPECT_TRUE(stat->cores[2]);
}

TEST(CpuStat, RejectsTextWithoutCores) {
  EXPECT_FALSE(parse_cpu_stat("cpu  1 2 3 4\nintr 5\n"));
  EXPECT_FALSE(parse_cpu_stat(""));
}

TEST(CpuStat, UsageOfChosenCores) {
  auto before = parse_cpu_stat(kBefore), after = parse_cpu_stat(kAfter);
  ASSERT_TRUE(before && after);
  auto one = usage_between(*before, *after, {0}, 100);
  EXPECT_EQ(one.cores, 1);
  EXPECT_DOUBLE_EQ(one.busy_s, 1.0);
  EXPECT_DOUBLE_EQ(one.total_s, 1.5);
  auto all = usage_between(*before, *after, {}, 100);
  EXPECT_EQ(all.cores, 2);
  EXPECT_DOUBLE_EQ(all.busy_s, 1.1);
  EXPECT_DOUBLE_EQ(all.total_s, 2.55);
  auto missing = usage_between(*before, *after, {7}, 100);
  EXPECT_EQ(missing.cores, 0);
}

TEST(CpuStat, ReadsThisMachine) {
  auto stat = read_cpu_stat();
  if (!stat) GTEST_SKIP() << "no /proc/stat";
  EXPECT_FALSE(stat->cores.empty());
  EXPECT_GT(cpu_ticks_per_second(), 0);
  EXPECT_GE(own_cpu_seconds(), 0);
}

}  // namespace
}  // namespace kgym::util
