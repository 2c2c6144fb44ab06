#include "util/text_cells.h"

#include <cmath>

#include <fmt/format.h>

namespace kgym::util {
namespace {

constexpr std::string_view kEllipsis = "\u2026";

bool is_continuation(unsigned char c) { return (c & 0xC0) == 0x80; }

// Byte offset just past the first `cells` code points of `text`.
std::size_t prefix_bytes(std::string_view text, std::size_t cells) {
  std::size_t i = 0;
  std::size_t seen = 0;
  while (i < text.size() && seen < cells) {
    ++i;
    while (i < text.size() && is_continuation(static_cast<unsigned char>(text[i]))) ++i;
    ++seen;
  }
  return i;
}

}  // namespace

std::size_t display_width(std::string_view text) {
  std::size_t cells = 0;
  for (char c : text) {
    if (!is_continuation(static_cast<unsigned char>(c))) ++cells;
  }
  return cells;
}

std::string truncate_cells(std::string_view text, std::size_t width) {
  if (display_width(text) <= width) return std::string(text);
  if (width == 0) return "";
  std::string out(text.substr(0, prefix_bytes(text, width - 1)));
  out += kEllipsis;
  return out;
}

std::string fit_cells(std::string_view text, std::size_t width, bool align_right) {
  std::string cut = truncate_cells(text, width);
  std::string pad(width - display_width(cut), ' ');
  return align_right ? pad + cut : cut + pad;
}

std::string compact_duration(double seconds) {
  if (!std::isfinite(seconds) || seconds < 0) return "";
  if (seconds < 60) return fmt::format("{:.1f}s", seconds);
  auto total = static_cast<long long>(seconds);
  long long h = total / 3600;
  long long m = (total % 3600) / 60;
  long long s = total % 60;
  if (h > 0) return fmt::format("{}h{:02}m{:02}s", h, m, s);
  return fmt::format("{}m{:02}s", m, s);
}

std::string last_line(std::string_view text) {
  std::size_t end = text.find_last_not_of("\n ");
  if (end == std::string_view::npos) return "";
  std::size_t start = text.find_last_of('\n', end);
  std::size_t from = start == std::string_view::npos ? 0 : start + 1;
  return std::string(text.substr(from, end - from + 1));
}

std::string trim_right(std::string text) {
  while (!text.empty() && text.back() == ' ') text.pop_back();
  return text;
}

}  // namespace kgym::util
