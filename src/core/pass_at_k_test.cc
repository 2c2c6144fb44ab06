#include "core/pass_at_k.h"

#include <gtest/gtest.h>

#include <cmath>

namespace kgym {
namespace {

// C(a, b) by the textbook formula, only for the small values of the tests.
double choose(int a, int b) {
  if (b < 0 || b > a) return 0;
  double r = 1;
  for (int i = 1; i <= b; ++i) r = r * (a - b + i) / i;
  return r;
}

TEST(PassAtK, NoPassIsZeroAndAllPassIsOne) {
  EXPECT_EQ(pass_at_k(5, 0, 1), 0.0);
  EXPECT_EQ(pass_at_k(5, 0, 5), 0.0);
  EXPECT_EQ(pass_at_k(5, 5, 1), 1.0);
  EXPECT_EQ(pass_at_k(1, 1, 1), 1.0);
}

TEST(PassAtK, PassAtOneIsTheFractionThatPassed) {
  EXPECT_DOUBLE_EQ(pass_at_k(3, 1, 1), 1.0 / 3);
  EXPECT_DOUBLE_EQ(pass_at_k(10, 7, 1), 0.7);
}

TEST(PassAtK, PassAtNIsOneWhenAnySamplePassed) {
  EXPECT_EQ(pass_at_k(4, 1, 4), 1.0);
  EXPECT_EQ(pass_at_k(4, 2, 3), 1.0);  // only 2 failures: any 3 of 4 include a pass
}

TEST(PassAtK, MatchesTheBinomialFormulaOnSmallCounts) {
  for (int n = 1; n <= 12; ++n) {
    for (int c = 0; c <= n; ++c) {
      for (int k = 1; k <= n; ++k) {
        double expected = 1.0 - choose(n - c, k) / choose(n, k);
        EXPECT_NEAR(pass_at_k(n, c, k), expected, 1e-12) << n << " " << c << " " << k;
      }
    }
  }
}

TEST(PassAtK, StaysFiniteWhereBinomialsOverflow) {
  // C(2000, 1000) overflows a double; the product form does not.
  double p = pass_at_k(2000, 3, 1000);
  EXPECT_TRUE(std::isfinite(p));
  EXPECT_NEAR(p, 1.0 - (1000.0 / 2000) * (999.0 / 1999) * (998.0 / 1998), 1e-12);
}

TEST(PassAtK, RejectsImpossibleCounts) {
  EXPECT_THROW(pass_at_k(3, 4, 1), std::invalid_argument);
  EXPECT_THROW(pass_at_k(3, 1, 0), std::invalid_argument);
  EXPECT_THROW(pass_at_k(3, 1, 4), std::invalid_argument);
}

TEST(PassAtK, EveryKUpToNAndOnlyThose) {
  EXPECT_EQ(every_k(3), (std::vector<int>{1, 2, 3}));
  auto values = pass_at_ks(3, 1, {1, 3, 5});
  ASSERT_EQ(values.size(), 2u);
  EXPECT_DOUBLE_EQ(values.at(1), 1.0 / 3);
  EXPECT_EQ(values.at(3), 1.0);
}

}  // namespace
}  // namespace kgym
