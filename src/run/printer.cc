#include "run/printer.h"

#include <sys/ioctl.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>

#include <fmt/format.h>

#include "util/live_terminal.h"
#include "util/text_cells.h"

namespace kgym::run {
namespace {

const util::SteadyClock& steady_clock() {
  static const util::SteadyClock clock;
  return clock;
}

const char* verdict_color(Verdict v) {
  switch (v) {
    case Verdict::kPass: return "\x1b[32m";       // green
    case Verdict::kFailCheat: return "\x1b[35m";  // magenta
    default: return "\x1b[31m";                   // red
  }
}

bool is_running_phase(const std::string& phase) {
  return phase != "pending" && phase != "done" && phase != "not_run";
}

}  // namespace

PrinterOptions detect_printer_options(std::FILE* stream) {
  PrinterOptions options;
  options.live = util::is_live_terminal(stream);
  const char* no_color = std::getenv("NO_COLOR");
  options.color = options.live && !(no_color && *no_color);
  return options;
}

Progress progress_of(const RunState& state) {
  Progress p;
  p.total = state.cases.size();
  for (const CaseState& c : state.cases) {
    if (c.phase == "done" && c.verdict) {
      ++p.done;
      if (*c.verdict == "pass") {
        ++p.pass;
      } else if (*c.verdict == "fail_cheat") {
        ++p.cheat;
      } else {
        ++p.fail;
      }
    } else if (is_running_phase(c.phase)) {
      ++p.running;
    }
  }
  return p;
}

std::string status_text(const Progress& p, double elapsed_s, std::size_t done_here, int width) {
  std::string text = fmt::format("[{}/{}] pass {} · fail {} · cheat {} · running {} · {}", p.done, p.total,
                                 p.pass, p.fail, p.cheat, p.running, util::compact_duration(elapsed_s));
  if (done_here > 0 && p.done < p.total) {
    double eta = elapsed_s / static_cast<double>(done_here) * static_cast<double>(p.total - p.done);
    text += fmt::format(" · ETA {}", util::compact_duration(eta));
  }
  return util::truncate_cells(text, static_cast<std::size_t>(std::max(width, 1)));
}

Printer::Printer(std::FILE* out) : Printer(out, stderr, detect_printer_options(out), steady_clock()) {}

Printer::Printer(std::FILE* out, std::FILE* err, PrinterOptions options, const util::Clock& clock)
    : out_(out), err_(err), options_(options), clock_(clock) {}

int Printer::status_width() const {
  if (options_.width > 0) return options_.width;
  winsize ws{};
  if (::ioctl(::fileno(out_), TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0) return ws.ws_col;
  return 80;
}

void Printer::clear_status() {
  if (!status_shown_) return;
  fmt::print(out_, "\r\x1b[K");
  status_shown_ = false;
}

void Printer::draw_status() {
  if (!options_.live || ended_ || status_.empty()) return;
  fmt::print(out_, "\r\x1b[K{}", status_);
  std::fflush(out_);
  status_shown_ = true;
}

void Printer::line(const std::string& text) {
  clear_status();
  fmt::print(out_, "{}\n", text);
  draw_status();
  std::fflush(out_);
}

void Printer::error(const std::string& text) {
  clear_status();
  std::fflush(out_);
  fmt::print(err_, "{}\n", text);
  std::fflush(err_);
  draw_status();
}

void Printer::case_finished(std::size_t done, std::size_t total, const CaseResult& r) {
  std::string speedup = r.performance ? fmt::format("{:.2f}x", r.performance->speedup.median) : "-";
  std::string took = r.timings.total_s ? fmt::format("{:.1f}s", *r.timings.total_s) : "-";
  std::string reason = r.verdict == Verdict::kPass ? "" : r.reason;
  // A speedup whose interval says little is marked so where it is shown.
  if (r.performance && std::ranges::find(r.performance->flags, "uncertain") != r.performance->flags.end())
    reason = reason.empty() ? "speedup uncertain (its 95% interval is wide; see result.json)" : reason;
  if (reason.size() > 100) reason = reason.substr(0, 97) + "...";
  int width = static_cast<int>(fmt::format("{}", total).size());
  std::string verdict = fmt::format("{:<17}", to_string(r.verdict));
  if (options_.live && options_.color)
    verdict = fmt::format("{}{}\x1b[0m", verdict_color(r.verdict), verdict);
  line(util::trim_right(fmt::format("[{:>{}}/{}] {} {:<36} {:>8} {:>7}  {}", done, width, total, verdict,
                                    r.case_id, speedup, took, reason)));
}

void Printer::progress(const RunState& state) {
  if (!options_.live || ended_) return;
  util::SteadyTime now = clock_.now();
  if (started_ && now - counted_at_ < kRecountInterval) return;
  counted_at_ = now;
  Progress p = progress_of(state);
  if (!started_) {
    started_ = now;
    done_at_start_ = p.done;
  }
  double elapsed = util::Seconds(now - *started_).count();
  std::size_t done_here = p.done - std::min(p.done, *done_at_start_);
  // One cell short of the width: a line that fills the last column leaves
  // the cursor where "\r" may no longer return to the line's start.
  status_ = status_text(p, elapsed, done_here, status_width() - 1);
  draw_status();
}

void Printer::end_progress() {
  clear_status();
  std::fflush(out_);
  ended_ = true;
}

}  // namespace kgym::run
