#include "monitor/status_line.h"

#include <unistd.h>


#include <fmt/format.h>

#include "monitor/terminal.h"
#include "util/live_terminal.h"
#include "util/text_cells.h"

namespace kgym::monitor {
namespace {

constexpr auto kTick = std::chrono::milliseconds(250);

const util::Clock& steady_clock() {
  static const util::SteadyClock clock;
  return clock;
}

}  // namespace

std::string status_text(std::string_view label, double elapsed_s, std::string_view what, int width) {
  // A log line's "[kgym +1.234s] " stamp says nothing the elapsed time does not.
  if (what.starts_with("[kgym +")) {
    if (auto end = what.find("] "); end != std::string_view::npos) what.remove_prefix(end + 2);
  }
  if (auto newline = what.find('\n'); newline != std::string_view::npos) what = what.substr(0, newline);
  auto seconds = static_cast<long>(elapsed_s);
  std::string elapsed = seconds >= 60 ? fmt::format("{}m{:02}s", seconds / 60, seconds % 60) : fmt::format("{}s", seconds);
  std::string text = what.empty() ? fmt::format("{} · {}", label, elapsed)
                                  : fmt::format("{} · {} · {}", label, elapsed, what);
  return util::truncate_cells(text, static_cast<std::size_t>(std::max(width - 1, 10)));
}

StatusLine::StatusLine(std::FILE* stream, std::string label)
    : StatusLine(stream, std::move(label), util::is_live_terminal(stream), 0, steady_clock()) {}

StatusLine::StatusLine(std::FILE* stream, std::string label, bool live, int width, const util::Clock& clock)
    : stream_(stream), label_(std::move(label)), live_(live), width_(width), clock_(clock), started_(clock.now()) {
  if (live_ && width_ == 0) ticker_ = std::thread([this] { tick(); });
}

StatusLine::~StatusLine() {
  {
    std::lock_guard lock(mutex_);
    stop_ = true;
  }
  wake_.notify_all();
  if (ticker_.joinable()) ticker_.join();
  std::lock_guard lock(mutex_);
  erase_locked();
}

void StatusLine::set(std::string what) {
  std::lock_guard lock(mutex_);
  what_ = std::move(what);
}

void StatusLine::set_label(std::string label) {
  std::lock_guard lock(mutex_);
  label_ = std::move(label);
}

void StatusLine::above(const std::function<void()>& print) {
  std::lock_guard lock(mutex_);
  erase_locked();
  print();
  std::fflush(nullptr);  // the lines reach the terminal before the next draw
}

void StatusLine::draw() {
  if (!live_) return;
  std::lock_guard lock(mutex_);
  int width = width_ > 0 ? width_ : terminal_size(::fileno(stream_), {80, 24}).columns;
  double elapsed = std::chrono::duration<double>(clock_.now() - started_).count();
  fmt::print(stream_, "\r\x1b[K{}", status_text(label_, elapsed, what_, width));
  std::fflush(stream_);
  shown_ = true;
}

void StatusLine::erase_locked() {
  if (!shown_) return;
  fmt::print(stream_, "\r\x1b[K");
  std::fflush(stream_);
  shown_ = false;
}

void StatusLine::tick() {
  std::unique_lock lock(mutex_);
  while (!stop_) {
    lock.unlock();
    draw();
    lock.lock();
    wake_.wait_for(lock, kTick, [this] { return stop_; });
  }
}

}  // namespace kgym::monitor
