#pragma once
// "Did you mean": the known name nearest to a mistyped one.
#include <cstddef>
#include <span>
#include <string>
#include <string_view>

namespace kgym::util {

// Levenshtein distance: insertions, deletions and substitutions.
std::size_t edit_distance(std::string_view a, std::string_view b);

// The name of `allowed` nearest to `name` when it is a plausible typo (a
// few edits, or one a prefix of the other); "" if none is.
std::string nearest_name(std::string_view name, std::span<const std::string_view> allowed);

}  // namespace kgym::util
