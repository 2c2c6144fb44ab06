#pragma once
// A small SVG writer for the plots of report.html: shapes in user units,
// appended in drawing order, every text and attribute escaped. No
// dependency, no script, no external reference: the output is meant to be
// inlined into a self-contained page.
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace kgym::report {

// `text` with & < > " ' replaced by entities (safe in element text and in
// quoted attributes). Invalid UTF-8 bytes become U+FFFD.
std::string xml_escape(std::string_view text);

// A linear (or log10) map from a data interval onto a pixel interval.
struct Scale {
  double data_lo = 0, data_hi = 1;
  double pixel_lo = 0, pixel_hi = 1;
  bool log = false;  // data must then be > 0; smaller values are clamped

  double operator()(double value) const;
};

// About `count` round tick values ("1, 2, 5 × 10^k" steps) covering [lo, hi].
std::vector<double> nice_ticks(double lo, double hi, int count);
// Tick values for a log axis: the powers of ten and their 2× and 5× within
// [lo, hi] (at least lo and hi themselves when none fall inside).
std::vector<double> log_ticks(double lo, double hi);
// A tick label: "0.5", "2", "1.25", "1e+03" — at most 3 significant digits.
std::string tick_label(double value);

class Svg {
 public:
  // `title` is the accessible name of the figure (role="img").
  Svg(double width, double height, std::string_view title);

  // `tooltip`, when not empty, becomes a <title> child shown on hover.
  void rect(double x, double y, double w, double h, std::string_view fill, std::string_view tooltip = {});
  void line(double x1, double y1, double x2, double y2, std::string_view stroke, double width = 1,
            bool dashed = false);
  void polyline(const std::vector<std::pair<double, double>>& points, std::string_view stroke,
                double width = 1.5);
  void circle(double cx, double cy, double r, std::string_view fill, std::string_view tooltip = {});
  // anchor: "start" | "middle" | "end"; `rotate` in degrees around (x, y);
  // `fill` empty = the page's text colour.
  void text(double x, double y, std::string_view text, std::string_view anchor = "start", double size = 11,
            double rotate = 0, std::string_view fill = {});

  // The <svg> element with everything drawn so far.
  std::string str() const;

 private:
  double width_, height_;
  std::string title_;
  std::string body_;
};

}  // namespace kgym::report
