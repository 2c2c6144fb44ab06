#include "report/svg.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

namespace kgym::report {
namespace {

// Length of the UTF-8 sequence starting at text[i], 0 when invalid.
std::size_t utf8_length(std::string_view text, std::size_t i) {
  auto byte = [&](std::size_t k) { return static_cast<unsigned char>(text[k]); };
  unsigned char lead = byte(i);
  std::size_t n = lead < 0x80           ? 1
                  : (lead >> 5) == 0x6  ? 2
                  : (lead >> 4) == 0xE  ? 3
                  : (lead >> 3) == 0x1E ? 4
                                        : 0;
  if (n == 0 || i + n > text.size()) return 0;
  for (std::size_t k = 1; k < n; ++k) {
    if ((byte(i + k) & 0xC0) != 0x80) return 0;
  }
  return n;
}

// Numbers in attributes: fixed, short, locale-independent.
std::string num(double v) { return fmt::format("{:.1f}", std::isfinite(v) ? v : 0.0); }

}  // namespace

std::string xml_escape(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size();) {
    char c = text[i];
    std::size_t n = utf8_length(text, i);
    if (n == 0) {
      out += "\uFFFD";
      ++i;
      continue;
    }
    if (n > 1) {
      out.append(text.substr(i, n));
      i += n;
      continue;
    }
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      default:
        // Control characters other than tab and newline are not allowed in XML.
        if (static_cast<unsigned char>(c) < 0x20 && c != '\t' && c != '\n') {
          out += "\uFFFD";
        } else {
          out += c;
        }
    }
    ++i;
  }
  return out;
}

double Scale::operator()(double value) const {
  double lo = data_lo, hi = data_hi, v = value;
  if (log) {
    constexpr double kTiny = 1e-12;
    lo = std::log10(std::max(lo, kTiny));
    hi = std::log10(std::max(hi, kTiny));
    v = std::log10(std::max(v, kTiny));
  }
  if (hi == lo) return (pixel_lo + pixel_hi) / 2;
  return pixel_lo + (v - lo) / (hi - lo) * (pixel_hi - pixel_lo);
}

std::vector<double> nice_ticks(double lo, double hi, int count) {
  if (!(hi > lo) || count < 1) return {lo};
  double raw = (hi - lo) / count;
  double magnitude = std::pow(10.0, std::floor(std::log10(raw)));
  double step = magnitude;
  for (double m : {1.0, 2.0, 5.0, 10.0}) {
    step = m * magnitude;
    if (step >= raw) break;
  }
  std::vector<double> ticks;
  for (double t = std::ceil(lo / step - 1e-9) * step; t <= hi + step * 1e-9; t += step) {
    ticks.push_back(std::abs(t) < step * 1e-9 ? 0.0 : t);
  }
  return ticks;
}

std::vector<double> log_ticks(double lo, double hi) {
  std::vector<double> ticks;
  if (!(lo > 0) || !(hi > lo)) return {lo};
  for (int e = static_cast<int>(std::floor(std::log10(lo))); e <= static_cast<int>(std::ceil(std::log10(hi)));
       ++e) {
    for (double m : {1.0, 2.0, 5.0}) {
      double t = m * std::pow(10.0, e);
      if (t >= lo * (1 - 1e-9) && t <= hi * (1 + 1e-9)) ticks.push_back(t);
    }
  }
  if (ticks.empty()) ticks = {lo, hi};
  return ticks;
}

std::string tick_label(double value) { return fmt::format("{:.3g}", value); }

Svg::Svg(double width, double height, std::string_view title)
    : width_(width), height_(height), title_(title) {}

void Svg::rect(double x, double y, double w, double h, std::string_view fill, std::string_view tooltip) {
  body_ += fmt::format(R"(<rect x="{}" y="{}" width="{}" height="{}" fill="{}")", num(x), num(y),
                       num(std::max(w, 0.0)), num(std::max(h, 0.0)), xml_escape(fill));
  body_ += tooltip.empty() ? "/>\n" : fmt::format("><title>{}</title></rect>\n", xml_escape(tooltip));
}

void Svg::line(double x1, double y1, double x2, double y2, std::string_view stroke, double width,
               bool dashed) {
  body_ += fmt::format(R"(<line x1="{}" y1="{}" x2="{}" y2="{}" stroke="{}" stroke-width="{}"{}/>)", num(x1),
                       num(y1), num(x2), num(y2), xml_escape(stroke), num(width),
                       dashed ? R"( stroke-dasharray="4 3")" : "");
  body_ += "\n";
}

void Svg::polyline(const std::vector<std::pair<double, double>>& points, std::string_view stroke,
                   double width) {
  std::string coords;
  for (const auto& [x, y] : points)
    coords += fmt::format("{}{},{}", coords.empty() ? "" : " ", num(x), num(y));
  body_ += fmt::format(R"(<polyline points="{}" fill="none" stroke="{}" stroke-width="{}"/>)", coords,
                       xml_escape(stroke), num(width));
  body_ += "\n";
}

void Svg::circle(double cx, double cy, double r, std::string_view fill, std::string_view tooltip) {
  body_ +=
      fmt::format(R"(<circle cx="{}" cy="{}" r="{}" fill="{}")", num(cx), num(cy), num(r), xml_escape(fill));
  body_ += tooltip.empty() ? "/>\n" : fmt::format("><title>{}</title></circle>\n", xml_escape(tooltip));
}

void Svg::text(double x, double y, std::string_view text, std::string_view anchor, double size, double rotate,
               std::string_view fill) {
  std::string transform =
      rotate != 0 ? fmt::format(R"x( transform="rotate({} {} {})")x", num(rotate), num(x), num(y)) : "";
  std::string color = fill.empty() ? "" : fmt::format(R"( style="fill:{}")", xml_escape(fill));
  body_ += fmt::format(R"(<text x="{}" y="{}" text-anchor="{}" font-size="{}"{}{}>{}</text>)", num(x), num(y),
                       xml_escape(anchor), num(size), transform, color, xml_escape(text));
  body_ += "\n";
}

std::string Svg::str() const {
  return fmt::format(
      "<svg width=\"{0}\" height=\"{1}\" viewBox=\"0 0 {0} {1}\" "
      "role=\"img\" aria-label=\"{2}\">\n<title>{2}</title>\n{3}</svg>",
      num(width_), num(height_), xml_escape(title_), body_);
}

}  // namespace kgym::report
