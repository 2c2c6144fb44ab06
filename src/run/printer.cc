#include "run/printer.h"

#include <fmt/format.h>

namespace kgym::run {

void Printer::line(const std::string& text) {
  fmt::print(out_, "{}\n", text);
  std::fflush(out_);
}

void Printer::error(const std::string& text) {
  std::fflush(out_);
  fmt::print(stderr, "{}\n", text);
}

void Printer::case_finished(std::size_t done, std::size_t total, const CaseResult& r) {
  std::string speedup = r.performance ? fmt::format("{:.2f}x", r.performance->speedup.median) : "-";
  std::string took = r.timings.total_s ? fmt::format("{:.1f}s", *r.timings.total_s) : "-";
  std::string reason = r.verdict == Verdict::kPass ? "" : r.reason;
  if (reason.size() > 100) reason = reason.substr(0, 97) + "...";
  int width = static_cast<int>(fmt::format("{}", total).size());
  line(fmt::format("[{:>{}}/{}] {:<17} {:<36} {:>8} {:>7}  {}", done, width, total, to_string(r.verdict),
                   r.case_id, speedup, took, reason));
}

}  // namespace kgym::run
