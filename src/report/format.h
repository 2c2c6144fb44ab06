#pragma once
// Number and text formatting shared by the human-readable reporters.
// Absent values print as kAbsent, never as 0. Output is locale-independent.
#include <optional>
#include <string>
#include <string_view>

namespace kgym::report {

inline constexpr std::string_view kAbsent = "\u2014";  // em dash

// "1.23×" below 10, "12.3×" from 10 on.
std::string format_speedup(std::optional<double> speedup);
// "0.123", "12.35", "1234": milliseconds with precision that suits the size.
std::string format_ms(std::optional<double> ms);
// "66.7%" of a fraction in [0, 1].
std::string format_rate(std::optional<double> rate);

// `text` on one line: control characters (newlines, tabs, escapes) become
// spaces, runs of spaces collapse, ends trimmed; then cut to `max_cells`
// with "…".
std::string one_line(std::string_view text, std::size_t max_cells);
// The verifier's reasons write speedups as "1.450x"; the reports write
// "1.450×". Each number followed by a lone "x" becomes "×" (a dimension
// such as "64x16384" or a hex "0x1f" is left alone: a letter or digit
// follows its x).
std::string speedup_signs(std::string_view text);

}  // namespace kgym::report
