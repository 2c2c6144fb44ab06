#pragma once
// The seam between the scheduler and the operating system's processes
// (like ninja's CommandRunner): the scheduler starts children and waits for
// them through this interface, so its tests never start a process.
//
// Contract: every child runs in its own process group with stdin from
// /dev/null and stdout+stderr appended to `log_file`. wait() returns when a
// child ended, when `wake_fd` (if set) became readable, or at the deadline,
// whichever is first — it never blocks past the deadline.
#include <chrono>
#include <expected>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "util/clock.h"

namespace kgym::util {

struct ProcessSpec {
  std::vector<std::string> argv;  // argv[0] is looked up in PATH when it has no '/'
  std::filesystem::path cwd;
  std::map<std::string, std::string> env;  // set on top of the inherited environment
  std::filesystem::path log_file;          // stdout+stderr, appended
  std::string cpus;                        // a CPU core list ("0-3,5") the child runs on; "" = any
};

struct ProcessExit {
  enum class Kind { kExited, kSignaled };
  Kind kind = Kind::kExited;
  int code = 0;                   // exit status when kExited, signal number when kSignaled
  bool killed_by_runner = false;  // terminate() was called before it ended
  Seconds duration{0};

  bool ok() const { return kind == Kind::kExited && code == 0; }
  std::string describe() const;  // util::describe_exit: "exit code 1", "signal SIGSEGV (...)"
};

class ProcessRunner {
 public:
  using Id = int;  // chosen by the caller, unique among live children
  struct Finished {
    Id id;
    ProcessExit exit;
  };

  virtual ~ProcessRunner() = default;
  // Starts a child; returns its pid or why it could not start.
  virtual std::expected<int, std::string> start(Id id, const ProcessSpec& spec) = 0;
  // Asks the child's whole group to stop: SIGTERM now, SIGKILL after `grace`.
  virtual void terminate(Id id, std::chrono::milliseconds grace) = 0;
  // SIGKILL to every live child group at once.
  virtual void kill_all() = 0;
  virtual std::vector<Finished> wait(SteadyTime deadline, std::optional<int> wake_fd) = 0;
  virtual std::size_t running() const = 0;
};

}  // namespace kgym::util
