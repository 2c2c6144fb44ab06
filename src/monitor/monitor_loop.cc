#include "monitor/monitor_loop.h"

#include <poll.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <csignal>
#include <optional>

#include <fmt/format.h>

#include "core/case_paths.h"
#include "core/record_files.h"
#include "core/run_state.h"
#include "monitor/frame.h"
#include "monitor/terminal.h"
#include "util/clock.h"
#include "util/fs.h"
#include "util/text_cells.h"

namespace kgym::monitor {
namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

namespace {

constexpr std::string_view kClearScreen = "\x1b[H\x1b[2J";
constexpr std::string_view kHideCursor = "\x1b[?25l";
constexpr std::string_view kShowCursor = "\x1b[?25h";

std::string first_line(std::string text) {
  if (auto nl = text.find('\n'); nl != std::string::npos) text.resize(nl);
  return text;
}

// A harness that died without writing a final status leaves "running"
// behind; say so instead of showing a run that never ends.
// The pid is gone, a zombie nobody reaped, or by now another program's
// (a pid is reused).
bool harness_gone(int pid) {
  if (::kill(pid, 0) != 0 && errno == ESRCH) return true;
  auto stat = util::read_file(fmt::format("/proc/{}/stat", pid));
  if (!stat) return false;  // no /proc: only kill(2) can tell
  // "PID (COMM) STATE ...": COMM may hold spaces and parentheses.
  auto close = stat->rfind(')');
  auto open = stat->find('(');
  if (close == std::string::npos || open == std::string::npos || close + 2 >= stat->size()) return false;
  char state = (*stat)[close + 2];
  std::string comm = stat->substr(open + 1, close - open - 1);
  return state == 'Z' || state == 'X' || !comm.starts_with("kgym");
}

std::string liveness_note(const RunState& s) {
  if (is_final_status(s.status) || s.harness_pid <= 0 || !harness_gone(s.harness_pid)) return "";
  return fmt::format(
      "its kgym run (pid {}) is gone: the run stopped without finishing; finish it with kgym run --resume {}",
      s.harness_pid, s.run_dir);
}

class Screen {
 public:
  explicit Screen(std::FILE* out) : out_(out), tty_(::isatty(::fileno(out)) != 0) {
    if (tty_) write(kHideCursor);
  }
  ~Screen() {
    if (tty_) write(kShowCursor);
    std::fflush(out_);
  }
  Screen(const Screen&) = delete;
  Screen& operator=(const Screen&) = delete;

  // Draws the frame with a footer line under it.
  void draw(const RunState& state, const std::string& footer) {
    TerminalSize size = terminal_size(::fileno(out_));
    // state.json stamps are wall-clock times, so elapsed times need the wall clock.
    std::string frame = render_frame(state, util::unix_now(), size.columns, size.rows - 1);
    std::string text = fmt::format("{}\n{}", frame, util::truncate_cells(footer, size.columns));
    if (tty_) {
      write(kClearScreen);
      write(text);  // no trailing newline: the screen must not scroll
    } else {
      write(text + "\n\n");
    }
    std::fflush(out_);
  }
  void write_line(const std::string& text) {
    write(fmt::format("{}{}\n", tty_ ? "\n" : "", text));
    std::fflush(out_);
  }
  void finish() {
    if (tty_) write("\n");
  }

 private:
  void write(std::string_view text) { std::fwrite(text.data(), 1, text.size(), out_); }
  std::FILE* out_;
  bool tty_;
};

enum class WaitResult { kTimeUp, kQuit, kSignal };

// Waits until `deadline`, returning early for 'q'/'Q' on `keys` or a stop
// signal. Without a terminal on input, it only sleeps.
WaitResult wait_until(Clock::time_point deadline, int input_fd, const RawKeys& keys,
                      const StopSignals& signals) {
  while (true) {
    if (signals.raised()) return WaitResult::kSignal;
    auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - Clock::now());
    if (left.count() <= 0) return WaitResult::kTimeUp;
    pollfd pfd{input_fd, POLLIN, 0};
    int n = ::poll(&pfd, keys.active() ? 1 : 0, static_cast<int>(left.count()));
    if (n <= 0 || !(pfd.revents & POLLIN)) continue;  // timeout, EINTR, or spurious
    std::array<char, 64> buf{};
    ssize_t got = ::read(input_fd, buf.data(), buf.size());
    for (ssize_t i = 0; i < got; ++i) {
      if (buf[i] == 'q' || buf[i] == 'Q') return WaitResult::kQuit;
    }
  }
}

}  // namespace

fs::path resolve_state_path(const fs::path& state_dir_or_file) {
  std::error_code ec;
  if (fs::is_directory(state_dir_or_file, ec)) return RunPaths{state_dir_or_file}.state();
  return state_dir_or_file;
}

std::expected<RunState, std::string> read_state(const fs::path& state_file) {
  std::error_code ec;
  if (!fs::exists(state_file, ec)) {
    return std::unexpected(fmt::format(
        "no state file at {} (`kgym run` writes RUN_DIR/state.json when it starts; pass the run directory "
        "or its state.json)",
        state_file.string()));
  }
  auto text = util::read_file(state_file);
  if (!text) return std::unexpected(text.error());
  try {
    nlohmann::json state = nlohmann::json::parse(*text);
    if (std::string newer = newer_schema_message(state_file, state, kStateSchemaVersion); !newer.empty())
      return std::unexpected(newer);
    return run_state_from_json(state);
  } catch (const nlohmann::json::exception& e) {
    return std::unexpected(fmt::format("{}: not a valid kgym state file: {}; {}", state_file.string(),
                                       e.what(), damaged_state_fix(state_file.parent_path())));
  }
}

bool is_final_status(const std::string& status) { return status == "finished" || status == "interrupted"; }

MonitorEnd run_monitor(const MonitorOptions& options) {
  StopSignals signals;
  RawKeys keys(options.input_fd);
  Screen screen(options.out);
  const auto interval = std::max(options.interval, std::chrono::milliseconds(100));
  const std::string hint =
      fmt::format("q quit \u00b7 refresh every {:.1f}s \u00b7 {}",
                  std::chrono::duration<double>(interval).count(), options.state_file.string());
  const Clock::time_point started = Clock::now();
  std::optional<RunState> last_good;
  bool waiting_shown = false;
  while (true) {
    auto state = read_state(options.state_file);
    std::string footer = hint;
    if (state) {
      last_good = std::move(*state);
      if (std::string note = liveness_note(*last_good); !note.empty()) footer = note;
    } else if (last_good) {
      footer = "state unreadable, showing the last good frame: " + first_line(state.error());
    } else if (Clock::now() - started >= options.startup_grace) {
      screen.finish();
      fmt::print(options.err, "kgym monitor: {}\n", first_line(state.error()));
      return MonitorEnd::kNoState;
    }
    if (last_good) {
      screen.draw(*last_good, footer);
      if (state && is_final_status(last_good->status)) {
        screen.finish();
        return MonitorEnd::kRunEnded;
      }
    } else if (!waiting_shown) {
      screen.write_line("waiting for " + options.state_file.string() + " \u2026");
      waiting_shown = true;
    }
    switch (wait_until(Clock::now() + interval, options.input_fd, keys, signals)) {
      case WaitResult::kTimeUp: break;
      case WaitResult::kQuit: screen.finish(); return MonitorEnd::kQuit;
      case WaitResult::kSignal: screen.finish(); return MonitorEnd::kSignal;
    }
  }
}

int print_one_frame(const fs::path& state_file, std::FILE* out, std::FILE* err) {
  auto state = read_state(state_file);
  if (!state) {
    fmt::print(err, "kgym monitor: {}\n", first_line(state.error()));
    return 2;
  }
  TerminalSize size = terminal_size(::fileno(out));
  fmt::print(out, "{}\n", render_frame(*state, util::unix_now(), size.columns, size.rows));
  std::string note = liveness_note(*state);
  if (!note.empty()) fmt::print(out, "{}\n", note);
  return 0;
}

}  // namespace kgym::monitor
