#pragma once
// Fixed-width text layout for plain terminal output. Widths are counted in
// cells: one per UTF-8 code point (the project prints only narrow
// characters such as "…" and "×"; wide East Asian characters would be
// under-counted). Invalid UTF-8 is counted byte by byte and never split
// inside a sequence.
#include <cstddef>
#include <string>
#include <string_view>

namespace kgym::util {

// Number of cells `text` takes.
std::size_t display_width(std::string_view text);

// `text` cut to at most `width` cells; a cut text ends in "…". Width 0
// gives "".
std::string truncate_cells(std::string_view text, std::size_t width);

// `text` truncated to `width` cells, then padded with spaces on the right
// (or on the left when `align_right`) to exactly `width` cells.
std::string fit_cells(std::string_view text, std::size_t width, bool align_right = false);

// A duration for people: "7.2s" under a minute, then "4m05s", "1h02m03s".
// Negative or non-finite values give "".
std::string compact_duration(double seconds);

// The last line of `text` that is not blank, without trailing spaces and
// newlines ("" when there is none).
std::string last_line(std::string_view text);

// Removes trailing spaces (so padded table rows carry no invisible tails).
std::string trim_right(std::string text);

}  // namespace kgym::util
