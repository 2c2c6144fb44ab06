#include "report/format.h"

#include <cctype>
#include <cmath>

#include <fmt/format.h>

#include "util/text_cells.h"

namespace kgym::report {

std::string format_speedup(std::optional<double> speedup) {
  if (!speedup || !std::isfinite(*speedup)) return std::string(kAbsent);
  if (*speedup >= 10) return fmt::format("{:.1f}\u00d7", *speedup);
  return fmt::format("{:.2f}\u00d7", *speedup);
}

std::string format_ms(std::optional<double> ms) {
  if (!ms || !std::isfinite(*ms)) return std::string(kAbsent);
  if (*ms < 10) return fmt::format("{:.3f}", *ms);
  if (*ms < 1000) return fmt::format("{:.2f}", *ms);
  return fmt::format("{:.0f}", *ms);
}

std::string format_rate(std::optional<double> rate) {
  if (!rate || !std::isfinite(*rate)) return std::string(kAbsent);
  return fmt::format("{:.1f}%", *rate * 100);
}

std::string speedup_signs(std::string_view text) {
  std::string out;
  for (std::size_t i = 0; i < text.size(); ++i) {
    bool after_digit = i > 0 && std::isdigit(static_cast<unsigned char>(text[i - 1])) != 0;
    bool alone = i + 1 == text.size() || std::isalnum(static_cast<unsigned char>(text[i + 1])) == 0;
    if (text[i] == 'x' && after_digit && alone) {
      out += "\u00d7";
    } else {
      out += text[i];
    }
  }
  return out;
}

std::string one_line(std::string_view text, std::size_t max_cells) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    bool control = static_cast<unsigned char>(c) < 0x20 || c == 0x7f;
    char shown = control ? ' ' : c;
    if (shown == ' ' && (out.empty() || out.back() == ' ')) continue;
    out += shown;
  }
  out = util::trim_right(std::move(out));
  return util::truncate_cells(out, max_cells);
}

}  // namespace kgym::report
