#pragma once
// A status line for the commands that work for tens of seconds between
// lines of output (`kgym verify`, `kgym lint`): on a terminal it reads
// "<label> · 12s · <what is happening>", redrawn in place by a thread of its
// own four times a second, so that a long build or timing phase does not
// read as a hang. Elsewhere (a pipe, a file, TERM=dumb) it draws nothing:
// the output stays what it is without it.
#include <condition_variable>
#include <cstdio>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

#include "util/clock.h"

namespace kgym::monitor {

// "[kgym +12.345s] " and such prefixes cut, then the line cut to `width`
// display cells: what a status line shows of a log line.
std::string status_text(std::string_view label, double elapsed_s, std::string_view what, int width);

class StatusLine {
 public:
  // Live when `stream` is a terminal (util::is_live_terminal).
  StatusLine(std::FILE* stream, std::string label);
  // For tests: live or not as told, a fixed width, the clock given.
  StatusLine(std::FILE* stream, std::string label, bool live, int width, const util::Clock& clock);
  ~StatusLine();  // erases the line
  StatusLine(const StatusLine&) = delete;
  StatusLine& operator=(const StatusLine&) = delete;

  bool live() const { return live_; }
  // What is happening now (the line is redrawn at the next tick).
  void set(std::string what);
  void set_label(std::string label);
  // Erases the line, runs `print` (which writes ordinary lines) and lets
  // the line be drawn again below them at the next tick.
  void above(const std::function<void()>& print);
  // Draws the line now (the ticker calls it; tests call it directly).
  void draw();

 private:
  void erase_locked();
  void tick();

  std::FILE* stream_;
  std::string label_;
  bool live_;
  int width_;  // 0: ask the terminal each time
  const util::Clock& clock_;
  util::SteadyTime started_;
  std::mutex mutex_;
  std::condition_variable wake_;
  std::string what_;
  bool shown_ = false;
  bool stop_ = false;
  std::thread ticker_;
};

}  // namespace kgym::monitor
