#pragma once
// Starting a child process the one way kgym starts every child: posix_spawn
// into a new process group, stdin from /dev/null, stdout+stderr appended to a
// log file, default signal dispositions and an empty signal mask.
#include <sys/types.h>

#include <expected>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

namespace kgym::util {

struct SpawnSpec {
  std::vector<std::string> argv;   // argv[0] is a path or found on PATH
  std::vector<std::string> env;    // the complete environment, "NAME=VALUE"
  std::filesystem::path cwd;       // empty = inherit
  std::filesystem::path log_path;  // stdout+stderr appended here; empty = /dev/null
  // Child fd number <- parent fd (the parent keeps ownership of its fd).
  std::vector<std::pair<int, int>> fd_map;
  // SIGKILL the child when this process dies (even by kill -9), so no child
  // outlives its supervisor: it starts through `setpriv --pdeathsig KILL`.
  bool die_with_parent = false;
};

// Returns the child's pid (= its process group id) or why it did not start.
std::expected<pid_t, std::string> spawn_in_new_group(const SpawnSpec& spec);

// This process's environment with `overrides` ("NAME=VALUE") replacing or
// adding entries.
std::vector<std::string> environment_with(const std::vector<std::string>& overrides);

// "SIGSEGV (Segmentation fault)"; the number when the signal has no short name.
std::string describe_signal(int signal);

// How every process exit is worded: "exit code 3", "signal SIGSEGV (Segmentation fault)".
std::string describe_exit(bool signaled, int code);

}  // namespace kgym::util
