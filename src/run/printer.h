#pragma once
// The one owner of kgym run's terminal output.
//
// On a terminal ("live" mode) the last line is a status line redrawn in
// place — done/total, pass/fail/cheat/running counts, elapsed time, ETA —
// and every other line is printed above it. Elsewhere (a pipe, a file,
// TERM=dumb) there is no status line and no escape code: one plain line per
// event. Colour is used only in live mode and never when NO_COLOR is set
// (https://no-color.org). Errors go to stderr so stdout stays parseable;
// in live mode the status line is cleared first so the two do not mix.
#include <cstdio>
#include <optional>
#include <string>

#include "core/result.h"
#include "core/run_state.h"
#include "util/clock.h"

namespace kgym::run {

struct PrinterOptions {
  bool live = false;   // status line redrawn in place with "\r\x1b[K"
  bool color = false;  // ANSI colour for verdicts (live mode only)
  // Status line width in cells; 0 = ask the terminal each time (80 when it
  // cannot say).
  int width = 0;
};

// What `stream` supports: live iff it is a terminal and TERM is not "dumb";
// colour iff live and NO_COLOR is unset or empty.
PrinterOptions detect_printer_options(std::FILE* stream);

// Counts shown on the status line, from the run state.
struct Progress {
  std::size_t total = 0, done = 0, pass = 0, fail = 0, cheat = 0, running = 0;
};
Progress progress_of(const RunState& state);

// "[3/9] pass 2 · fail 0 · cheat 1 · running 2 · 1m05s · ETA 2m10s", cut to
// `width` cells. The ETA appears once a case finished in this process
// (`done_here` > 0): elapsed / done_here × cases left.
std::string status_text(const Progress& p, double elapsed_s, std::size_t done_here, int width);

class Printer {
 public:
  // Options detected from `out`; times from a steady clock.
  explicit Printer(std::FILE* out = stdout);
  Printer(std::FILE* out, std::FILE* err, PrinterOptions options, const util::Clock& clock);
  virtual ~Printer() = default;
  Printer(const Printer&) = delete;
  Printer& operator=(const Printer&) = delete;

  virtual void line(const std::string& text);
  // An error or warning for the user: to stderr.
  virtual void error(const std::string& text);
  // "[3/9] pass             level1/4_Softmax   2.31x  12.3s  <reason>"
  virtual void case_finished(std::size_t done, std::size_t total, const CaseResult& result);
  // The run state changed or time passed: redraws the status line (live
  // mode; nothing otherwise). The first call starts the elapsed clock.
  // Counting the cases takes time in proportion to their number, so a call
  // within kRecountInterval of the last count draws nothing: the line is
  // at most that much (or until the next call) behind.
  virtual void progress(const RunState& state);
  static constexpr std::chrono::milliseconds kRecountInterval{100};
  // Removes the status line for good (before the summary is printed).
  void end_progress();

 private:
  void clear_status();
  void draw_status();
  int status_width() const;

  std::FILE* out_;
  std::FILE* err_;
  PrinterOptions options_;
  const util::Clock& clock_;
  std::optional<util::SteadyTime> started_;
  util::SteadyTime counted_at_{};  // the last count, once started_
  std::optional<std::size_t> done_at_start_;
  std::string status_;  // the status line as last rendered; "" when none shown
  bool status_shown_ = false;
  bool ended_ = false;
};

}  // namespace kgym::run
