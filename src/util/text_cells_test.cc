#include "util/text_cells.h"

#include <gtest/gtest.h>

namespace kgym::util {
namespace {

TEST(TextCells, CountsCodePointsNotBytes) {
  EXPECT_EQ(display_width(""), 0u);
  EXPECT_EQ(display_width("abc"), 3u);
  EXPECT_EQ(display_width("1.5\u00d7"), 4u);
  EXPECT_EQ(display_width("a\u2026"), 2u);
}

TEST(TextCells, TruncatesWithEllipsis) {
  EXPECT_EQ(truncate_cells("level1/19_ReLU", 20), "level1/19_ReLU");
  EXPECT_EQ(truncate_cells("level1/19_ReLU", 8), "level1/\u2026");
  EXPECT_EQ(truncate_cells("abc", 1), "\u2026");
  EXPECT_EQ(truncate_cells("abc", 0), "");
  // Never splits a multi-byte character.
  EXPECT_EQ(truncate_cells("\u00d7\u00d7\u00d7\u00d7", 3), "\u00d7\u00d7\u2026");
}

TEST(TextCells, FitsToExactWidth) {
  EXPECT_EQ(fit_cells("ab", 4), "ab  ");
  EXPECT_EQ(fit_cells("ab", 4, true), "  ab");
  EXPECT_EQ(fit_cells("1.00\u00d7", 6, true), " 1.00\u00d7");
  EXPECT_EQ(fit_cells("abcdef", 4), "abc\u2026");
}

TEST(TextCells, CompactDurations) {
  EXPECT_EQ(compact_duration(7.3), "7.3s");
  EXPECT_EQ(compact_duration(245), "4m05s");
  EXPECT_EQ(compact_duration(3723), "1h02m03s");
  EXPECT_EQ(compact_duration(-1), "");
}

TEST(TextCells, TrimRight) { EXPECT_EQ(trim_right("a b  "), "a b"); }

TEST(TextCells, LastLineIsTheLastOneNotBlank) {
  EXPECT_EQ(last_line("first\nsecond  \n\n"), "second");
  EXPECT_EQ(last_line("only"), "only");
  EXPECT_EQ(last_line("\n \n"), "");
  EXPECT_EQ(last_line(""), "");
}

}  // namespace
}  // namespace kgym::util
