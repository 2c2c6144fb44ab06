#include "monitor/terminal.h"

#include <sys/ioctl.h>
#include <unistd.h>

namespace kgym::monitor {
namespace {

volatile std::sig_atomic_t g_stop_requested = 0;

extern "C" void on_stop_signal(int) { g_stop_requested = 1; }

}  // namespace

TerminalSize terminal_size(int fd, TerminalSize fallback) {
  winsize ws{};
  if (::ioctl(fd, TIOCGWINSZ, &ws) != 0 || ws.ws_col == 0 || ws.ws_row == 0) return fallback;
  return {ws.ws_col, ws.ws_row};
}

RawKeys::RawKeys(int fd) : fd_(fd) {
  if (!::isatty(fd_) || ::tcgetattr(fd_, &saved_) != 0) return;
  termios raw = saved_;
  raw.c_lflag &= ~static_cast<tcflag_t>(ICANON | ECHO);
  raw.c_cc[VMIN] = 0;
  raw.c_cc[VTIME] = 0;
  active_ = ::tcsetattr(fd_, TCSANOW, &raw) == 0;
}

RawKeys::~RawKeys() {
  if (active_) ::tcsetattr(fd_, TCSANOW, &saved_);
}

StopSignals::StopSignals() {
  g_stop_requested = 0;
  struct sigaction action {};
  action.sa_handler = on_stop_signal;
  sigemptyset(&action.sa_mask);
  action.sa_flags = 0;  // no SA_RESTART: poll() returns EINTR at once
  ::sigaction(SIGINT, &action, &saved_int_);
  ::sigaction(SIGTERM, &action, &saved_term_);
}

StopSignals::~StopSignals() {
  ::sigaction(SIGINT, &saved_int_, nullptr);
  ::sigaction(SIGTERM, &saved_term_, nullptr);
}

bool StopSignals::raised() const { return g_stop_requested != 0; }

}  // namespace kgym::monitor
