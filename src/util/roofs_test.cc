#include "util/roofs.h"

#include <gtest/gtest.h>

#include "util/cpu_set.h"

namespace kgym::util {
namespace {

// One run on one core (over a small working set: the mechanics, fast under
// the sanitizers): every figure is a positive rate, float64 lanes are half
// as many as float32's.
TEST(Roofs, OneCoreHasABandwidthAndAPeakPerPrecision) {
  std::set<int> allowed = allowed_cpus();
  ASSERT_FALSE(allowed.empty());
  Roofs r = measure_roofs({*allowed.begin()}, 1, std::size_t{24} << 20);
  EXPECT_FALSE(r.isa.empty());
  EXPECT_GT(r.bandwidth_gbs.median, 0.1);
  EXPECT_GT(r.float32_gflops.median, 0.1);
  EXPECT_GT(r.float64_gflops.median, 0.1);
  EXPECT_GT(r.float32_gflops.median, r.float64_gflops.median * 1.2) << "float32 vectors hold twice the lanes";
  EXPECT_GT(r.working_set_bytes, (std::size_t{23} << 20));
  ASSERT_EQ(r.bandwidth_gbs.runs.size(), 1u);
  EXPECT_EQ(r.bandwidth_gbs.min, r.bandwidth_gbs.max);
  EXPECT_EQ(allowed_cpus(), allowed) << "the caller's affinity is kept";
}

}  // namespace
}  // namespace kgym::util
