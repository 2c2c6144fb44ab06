#pragma once
// The few terminal facilities `kgym monitor` and `kgym report` need. Every
// object restores what it changed when destroyed.
#include <termios.h>

#include <csignal>

namespace kgym::monitor {

struct TerminalSize {
  int columns = 100;
  int rows = 40;
};

// Size of the terminal on `fd` (TIOCGWINSZ); `fallback` when `fd` is not a
// terminal or reports zero.
TerminalSize terminal_size(int fd, TerminalSize fallback = {});

// While alive, the terminal on `fd` delivers key presses one by one without
// echo (canonical mode and echo off; Ctrl-C still raises SIGINT). Does
// nothing when `fd` is not a terminal.
class RawKeys {
 public:
  explicit RawKeys(int fd);
  ~RawKeys();
  RawKeys(const RawKeys&) = delete;
  RawKeys& operator=(const RawKeys&) = delete;

  bool active() const { return active_; }

 private:
  int fd_;
  bool active_ = false;
  termios saved_{};
};

// While alive, SIGINT and SIGTERM set a flag instead of ending the process
// (the handler is installed without SA_RESTART so a blocking wait returns
// EINTR). Only one may be alive at a time.
class StopSignals {
 public:
  StopSignals();
  ~StopSignals();
  StopSignals(const StopSignals&) = delete;
  StopSignals& operator=(const StopSignals&) = delete;

  bool raised() const;

 private:
  struct sigaction saved_int_ {};
  struct sigaction saved_term_ {};
};

}  // namespace kgym::monitor
