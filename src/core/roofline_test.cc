#include "core/roofline.h"

#include <gtest/gtest.h>

namespace kgym {
namespace {

WorkCount relu_work() {
  WorkCount w;
  w.input_bytes = 4'000'000;
  w.output_bytes = 4'000'000;
  w.flops = 1'000'000;
  w.counter = "kgym's formulas";
  w.float_dtypes = {"float32"};
  return w;
}

RoofsUsed roofs() {
  return {.cores = "0",
          .bandwidth_gbs = 10,
          .memory_level = "main memory",
          .peak_gflops = 100,
          .precision = "float32",
          .measured_at = "2026-12-07T00:00:00Z"};
}

TEST(Roofline, AMemoryBoundCaseIsLimitedByItsBytesOverTheBandwidth) {
  Roofline r = place_on_roofline(relu_work(), roofs(), 2.0, 1.6);
  EXPECT_EQ(r.bound, "memory");
  EXPECT_DOUBLE_EQ(r.intensity, 1'000'000.0 / 8'000'000.0);
  EXPECT_DOUBLE_EQ(r.limit_ms, 0.8);  // 8 MB at 10 GB/s
  EXPECT_DOUBLE_EQ(*r.sol, 0.4);
  EXPECT_DOUBLE_EQ(*r.reference_sol, 0.5);
  EXPECT_DOUBLE_EQ(*r.achieved_gflops, 0.5);  // 1 MFLOP in 2 ms
  EXPECT_TRUE(r.errors.empty());
  EXPECT_TRUE(r.sound());
}

TEST(Roofline, AComputeBoundCaseIsLimitedByItsFlopsOverThePeak) {
  WorkCount w = relu_work();
  w.flops = 2e9;  // 2 GFLOP at 100 GFLOP/s: 20 ms, against 0.8 ms of bytes
  Roofline r = place_on_roofline(w, roofs(), 40, 0);
  EXPECT_EQ(r.bound, "compute");
  EXPECT_DOUBLE_EQ(r.limit_ms, 20);
  EXPECT_DOUBLE_EQ(*r.sol, 0.5);
  EXPECT_FALSE(r.reference_sol);  // a side never timed has none
}

TEST(Roofline, FasterThanTheLimitIsAnErrorNeverAScore) {
  Roofline r = place_on_roofline(relu_work(), roofs(), 0.4, 1.0);
  EXPECT_DOUBLE_EQ(*r.sol, 2.0);
  ASSERT_EQ(r.errors.size(), 1u);
  EXPECT_NE(r.errors[0].find("candidate ran at 2.00x"), std::string::npos) << r.errors[0];
  EXPECT_FALSE(r.sound());
}

TEST(Roofline, ProblemsWithAnyFloat64GetTheFloat64Roof) {
  EXPECT_EQ(roof_precision({"float32"}), "float32");
  EXPECT_EQ(roof_precision({"bfloat16", "float32"}), "float32");
  EXPECT_EQ(roof_precision({"float32", "float64"}), "float64");
  EXPECT_EQ(roof_precision({}), "float32");
}

TEST(Roofline, TheRecordRoundTripsWithAndWithoutRoofs) {
  WorkCount w = relu_work();
  w.uncounted = {{"aten.linalg_qr", 2}};
  Roofline placed = place_on_roofline(w, roofs(), 0.4, 1.0);
  Roofline back = roofline_from_json(to_json(placed));
  EXPECT_EQ(back.work.bytes(), 8'000'000);
  EXPECT_EQ(back.work.uncounted, w.uncounted);
  EXPECT_EQ(back.roofs->memory_level, "main memory");
  EXPECT_EQ(back.bound, "memory");
  EXPECT_EQ(back.sol, placed.sol);
  EXPECT_EQ(back.errors, placed.errors);

  Roofline missing;
  missing.work = w;
  missing.missing = "no roofs are cached for cores 3";
  nlohmann::json j = to_json(missing);
  EXPECT_FALSE(j.contains("sol"));
  Roofline missing_back = roofline_from_json(j);
  EXPECT_FALSE(missing_back.roofs);
  EXPECT_EQ(missing_back.missing, missing.missing);
  EXPECT_EQ(missing_back.work.flops, w.flops);
}

}  // namespace
}  // namespace kgym
