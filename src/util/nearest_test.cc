#include "util/nearest.h"

#include <array>

#include <gtest/gtest.h>

namespace kgym::util {
namespace {

TEST(Nearest, EditDistanceCountsInsertionsDeletionsAndSubstitutions) {
  EXPECT_EQ(edit_distance("", ""), 0u);
  EXPECT_EQ(edit_distance("run", "run"), 0u);
  EXPECT_EQ(edit_distance("run", "rum"), 1u);
  EXPECT_EQ(edit_distance("report", "repot"), 1u);
  EXPECT_EQ(edit_distance("kitten", "sitting"), 3u);
}

TEST(Nearest, ATypoFindsItsNameAndNonsenseFindsNone) {
  constexpr std::array<std::string_view, 4> names = {"run", "report", "compare", "--set"};
  EXPECT_EQ(nearest_name("repot", names), "report");
  EXPECT_EQ(nearest_name("comapre", names), "compare");
  EXPECT_EQ(nearest_name("--sett", names), "--set");  // one a prefix of the other
  EXPECT_EQ(nearest_name("frobnicate", names), "");
}

}  // namespace
}  // namespace kgym::util
