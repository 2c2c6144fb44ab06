#pragma once
// The case selector grammar (docs/cases.md), parsed without looking at any
// dataset. select_cases() (case_set.h) resolves the parsed form against the
// files on disk.
//
//   selector := ''  |  group (';' group)* [';']
//   group    := [LEVEL '='] item (',' item)* [',']   |   LEVEL '='
//   item     := N  |  N '_' NAME  |  N ':' N
//
// Whitespace is allowed around every token. Positions are 1-based character
// offsets into the selector so messages can point at the offending text.
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace kgym {

struct SelectorItem {
  enum class Kind { kNumber, kStem, kRange };
  Kind kind = Kind::kNumber;
  int first = 0;     // the number; for a range its first id
  int last = 0;      // == first, except for a range (first <= last)
  std::string stem;  // kStem only: "19_ReLU", matched exactly
  std::string text;  // as written, for messages
  std::size_t position = 0;
};

struct SelectorGroup {
  std::optional<std::string> level;  // nullopt = the default level
  std::size_t position = 0;          // of the level name, or of the group
  std::vector<SelectorItem> items;   // empty = every case of the level
};

struct SelectorParseError {
  std::size_t position = 0;
  std::string message;  // "what; fix", without the position
};

struct ParsedSelector {
  std::vector<SelectorGroup> groups;       // every group that could be read
  std::vector<SelectorParseError> errors;  // empty = the whole selector was read
};

// Parses a selector. An empty (or all-blank) selector is one group: the whole
// default level. Every problem in the selector is reported, not only the
// first. Items that could not be read are left out of `groups`, and so is a
// group that lost its level name or all of its items, so the rest can still
// be checked against the dataset.
ParsedSelector parse_selector(std::string_view selector);

// Natural order of names: digit runs compare as numbers, so "level2" sorts
// before "level10".
bool natural_less(std::string_view a, std::string_view b);

}  // namespace kgym
