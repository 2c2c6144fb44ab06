#pragma once
// `kgym monitor`: reads a run's state.json (and nothing else) and shows it.
// The loop redraws on an interval, keeps the last good frame while the file
// is being replaced or is briefly missing, and ends when the run does, on
// 'q', or on SIGINT/SIGTERM. Every wait has a deadline.
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <expected>
#include <filesystem>
#include <string>

#include "core/run_state.h"

namespace kgym::monitor {

// STATE_DIR/state.json, or the argument itself when it is not a directory
// (a state.json path, existing or not).
std::filesystem::path resolve_state_path(const std::filesystem::path& state_dir_or_file);

// Reads and parses a state file; the error names the file and the problem.
std::expected<RunState, std::string> read_state(const std::filesystem::path& state_file);

// True once a run with this status will not change any more.
bool is_final_status(const std::string& status);

struct MonitorOptions {
  std::filesystem::path state_file;
  std::chrono::milliseconds interval{1000};
  // How long to wait for a state file that cannot be read at start (the run
  // may be starting). After that the monitor gives up with kNoState.
  std::chrono::milliseconds startup_grace{10000};
  int input_fd = STDIN_FILENO;  // keys are read only if this is a terminal
  std::FILE* out = stdout;      // frames; cleared with ANSI only if a terminal
  std::FILE* err = stderr;
};

enum class MonitorEnd {
  kRunEnded,  // the run reached finished/interrupted; last frame shown
  kQuit,      // 'q' pressed
  kSignal,    // SIGINT or SIGTERM
  kNoState,   // no readable state file within the startup grace
};

// Runs until one of MonitorEnd happens. Restores the terminal (modes,
// cursor, signal handlers) before returning.
MonitorEnd run_monitor(const MonitorOptions& options);

// `--once`: prints one frame sized to `out` (100×40 when not a terminal) and
// returns 0, or prints the reason to `err` and returns 2.
int print_one_frame(const std::filesystem::path& state_file, std::FILE* out, std::FILE* err);

}  // namespace kgym::monitor
