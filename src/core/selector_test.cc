#include "core/selector.h"

#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace kgym {
namespace {

using Kind = SelectorItem::Kind;

std::vector<SelectorGroup> parse_ok(std::string_view selector) {
  ParsedSelector parsed = parse_selector(selector);
  EXPECT_TRUE(parsed.errors.empty()) << "selector '" << selector
                                     << "': " << (parsed.errors.empty() ? "" : parsed.errors.front().message);
  return parsed.groups;
}

std::vector<SelectorParseError> parse_bad(std::string_view selector) {
  ParsedSelector parsed = parse_selector(selector);
  EXPECT_FALSE(parsed.errors.empty()) << "selector '" << selector << "' was accepted";
  return parsed.errors;
}

// The single error of `selector`, checked for position and a message fragment.
void expect_error(std::string_view selector, std::size_t position, std::string_view fragment) {
  auto errors = parse_bad(selector);
  ASSERT_EQ(errors.size(), 1u) << selector;
  EXPECT_EQ(errors[0].position, position) << selector << ": " << errors[0].message;
  EXPECT_NE(errors[0].message.find(fragment), std::string::npos)
      << selector << ": '" << errors[0].message << "' lacks '" << fragment << "'";
}

TEST(ParseSelector, EmptyOrBlankIsTheWholeDefaultLevel) {
  for (std::string_view s : {"", "   ", "\t\n"}) {
    auto groups = parse_ok(s);
    ASSERT_EQ(groups.size(), 1u);
    EXPECT_FALSE(groups[0].level.has_value());
    EXPECT_TRUE(groups[0].items.empty());
  }
}

TEST(ParseSelector, NumberStemAndRange) {
  auto groups = parse_ok("19,19_ReLU,1:21,0");
  ASSERT_EQ(groups.size(), 1u);
  const auto& items = groups[0].items;
  ASSERT_EQ(items.size(), 4u);
  EXPECT_EQ(items[0].kind, Kind::kNumber);
  EXPECT_EQ(items[0].first, 19);
  EXPECT_EQ(items[1].kind, Kind::kStem);
  EXPECT_EQ(items[1].first, 19);
  EXPECT_EQ(items[1].stem, "19_ReLU");
  EXPECT_EQ(items[2].kind, Kind::kRange);
  EXPECT_EQ(items[2].first, 1);
  EXPECT_EQ(items[2].last, 21);
  EXPECT_EQ(items[2].text, "1:21");
  EXPECT_EQ(items[2].position, 12u);
  EXPECT_EQ(items[3].first, 0);
}

TEST(ParseSelector, StemKeepsUnderscoresDashesAndDots) {
  auto groups = parse_ok("33_Gemm_Scale_BatchNorm,16_gpt2_bs1_seq1023,7_a-b.c");
  ASSERT_EQ(groups[0].items.size(), 3u);
  EXPECT_EQ(groups[0].items[0].stem, "33_Gemm_Scale_BatchNorm");
  EXPECT_EQ(groups[0].items[0].first, 33);
  EXPECT_EQ(groups[0].items[1].stem, "16_gpt2_bs1_seq1023");
  EXPECT_EQ(groups[0].items[2].stem, "7_a-b.c");
}

TEST(ParseSelector, PerLevelGroups) {
  auto groups = parse_ok("level1=1,3;level2=9;pto_case=1:6");
  ASSERT_EQ(groups.size(), 3u);
  EXPECT_EQ(groups[0].level, "level1");
  EXPECT_EQ(groups[0].items.size(), 2u);
  EXPECT_EQ(groups[1].level, "level2");
  EXPECT_EQ(groups[1].position, 12u);
  EXPECT_EQ(groups[2].level, "pto_case");
  EXPECT_EQ(groups[2].items[0].kind, Kind::kRange);
}

TEST(ParseSelector, WholeLevelAndMixedGroups) {
  auto groups = parse_ok("level1=;level2=2");
  ASSERT_EQ(groups.size(), 2u);
  EXPECT_TRUE(groups[0].items.empty());
  EXPECT_EQ(groups[1].items.size(), 1u);

  groups = parse_ok("1:3;level2=9");  // a bare group uses the default level
  ASSERT_EQ(groups.size(), 2u);
  EXPECT_FALSE(groups[0].level.has_value());
  EXPECT_EQ(groups[1].level, "level2");
}

TEST(ParseSelector, WhitespaceAroundTokens) {
  auto groups = parse_ok("  level1 = 1 , 3 : 5 ;\tlevel2 =9 ; ");
  ASSERT_EQ(groups.size(), 2u);
  ASSERT_EQ(groups[0].items.size(), 2u);
  EXPECT_EQ(groups[0].items[1].kind, Kind::kRange);
  EXPECT_EQ(groups[0].items[1].text, "3 : 5");
}

TEST(ParseSelector, TrailingSeparatorsAreHarmless) {
  EXPECT_EQ(parse_ok("1,2,")[0].items.size(), 2u);
  EXPECT_EQ(parse_ok("level1=1;").size(), 1u);
  EXPECT_EQ(parse_ok("level1=1,;level2=2,;").size(), 2u);
}

TEST(ParseSelector, EmptyItemsAndGroups) {
  expect_error("1,,3", 3, "remove the extra ','");
  expect_error(",1", 1, "remove the extra ','");
  expect_error(";1", 1, "remove the extra ';'");
  expect_error("1;;2", 3, "remove the extra ';'");
  expect_error("level1=,", 8, "remove the extra ','");
  expect_error(",", 1, "remove the extra ','");
  expect_error(";", 1, "remove the extra ';'");
}

TEST(ParseSelector, BadNumbersAndRanges) {
  expect_error("-1", 1, "negative");
  expect_error("1-5", 1, "write it as 1:5");
  expect_error("1:", 1, "has no end; write 1:N");
  expect_error(":3", 1, "has no start; write 1:3");
  expect_error("4,5:3", 3, "runs backwards; write 3:5");
  expect_error("99999999999", 1, "too large");
  expect_error("99999999999_X", 1, "too large");
  expect_error("1:99999999999", 3, "too large");
  expect_error("19_ReLU:25", 1, "not a number");
  expect_error("1:2:3", 1, "cannot read '1:2:3'");
}

TEST(ParseSelector, StrayCharactersNameThePositionAndText) {
  expect_error("1,2!", 4, "unexpected '!'");
  expect_error("1, 2 ,#3", 7, "unexpected '#'");
  expect_error("1 2", 3, "missing ',' between '1' and '2'");
  expect_error("level2", 1, "'level2=' for a whole level");
  expect_error("=1", 1, "needs a level name");
  expect_error("level1=1=2", 9, "unexpected '='");
  expect_error("19_", 1, "not a case id");
  expect_error("1,ü", 3, "unexpected 'ü'");
}

TEST(ParseSelector, CollectsEveryError) {
  auto errors = parse_bad("-1,5:3,x!,,level1=1=2");
  std::vector<std::size_t> positions;
  for (const auto& e : errors) positions.push_back(e.position);
  // '-1', '5:3', the '!', the second ',' of ',,', both '=' after the level.
  EXPECT_EQ(positions, (std::vector<std::size_t>{1, 4, 9, 11, 18, 20}));
}

TEST(ParseSelector, KeepsWhatCouldBeReadBesideErrors) {
  ParsedSelector parsed = parse_selector("19,x!,1:;level2=-1;=3;level3=,;level4=5");
  EXPECT_EQ(parsed.errors.size(), 5u);
  // Groups whose every item failed, or without a level name, are dropped:
  // they must not turn into "the whole level".
  ASSERT_EQ(parsed.groups.size(), 2u);
  EXPECT_FALSE(parsed.groups[0].level.has_value());
  ASSERT_EQ(parsed.groups[0].items.size(), 1u);
  EXPECT_EQ(parsed.groups[0].items[0].first, 19);
  EXPECT_EQ(parsed.groups[1].level, "level4");
}

TEST(NaturalLess, DigitRunsCompareAsNumbers) {
  EXPECT_TRUE(natural_less("level2", "level10"));
  EXPECT_FALSE(natural_less("level10", "level2"));
  EXPECT_TRUE(natural_less("level1", "level2"));
  EXPECT_TRUE(natural_less("level9", "pto_case"));
  EXPECT_TRUE(natural_less("level", "level1"));
  EXPECT_FALSE(natural_less("level1", "level1"));
  EXPECT_TRUE(natural_less("a2b", "a10"));
  EXPECT_NE(natural_less("level01", "level1"), natural_less("level1", "level01"));
}

}  // namespace
}  // namespace kgym
