#pragma once
// A child process in its own process group, started with posix_spawn:
// stdin from /dev/null, stdout and stderr appended to a log file (or
// captured into a pipe), optional extra fds mapped to fixed numbers. The
// destructor kills the whole group (SIGTERM, then SIGKILL) and reaps the
// child, so no child outlives its owner. Every wait takes a deadline.
#include <sys/types.h>

#include <chrono>
#include <expected>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "util/spawn.h"

namespace kgym::worker {

using Clock = std::chrono::steady_clock;
using Deadline = Clock::time_point;

using ChildSpec = util::SpawnSpec;
using util::environment_with;

// How a child ended.
struct ChildExit {
  bool signaled = false;
  int code = 0;  // exit status, or the signal number when signaled
  bool core_dumped = false;
  std::optional<double> peak_rss_mb;  // the child's own peak resident memory, when reaped here
  // util::describe_exit: "exit code 3" / "signal SIGSEGV (Segmentation fault)"
  std::string describe() const;
};

// A worker's death that speaks of memory: killed by SIGKILL (the kernel's
// OOM killer, or a cgroup's memory limit), or its last output names an
// allocation failure (MemoryError, std::bad_alloc, "can't allocate memory":
// the address-space limit).
bool died_of_memory(const ChildExit& exit, std::string_view output);

// The reason for such a death, with what is known (the limit, the peak,
// `context`: the sizes the problem ran at) and the fix: "<who> ran out of
// memory (...). Shrink the problem: ...".
std::string memory_reason(std::string_view who, const ChildExit& exit, long long address_space_mb,
                          std::string_view context = "");

// The timeout for one poll() on the way to `deadline`: what is left, at
// most a second (so a loop around poll rechecks its state), never negative.
int poll_timeout_ms(Deadline deadline);

class ChildProcess {
 public:
  static std::expected<ChildProcess, std::string> spawn(const ChildSpec& spec);

  ChildProcess(ChildProcess&& other) noexcept;
  ChildProcess& operator=(ChildProcess&& other) noexcept;
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;
  ~ChildProcess();

  pid_t pid() const { return pid_; }

  // Waits until the child exits or the deadline passes; reaps it (after
  // killing the rest of its group). std::nullopt = still running.
  std::optional<ChildExit> wait_until(Deadline deadline);
  // The exit, once known.
  const std::optional<ChildExit>& exit() const { return exit_; }

  // SIGTERM to the group, `grace` to exit, then SIGKILL; reaps the child.
  // Idempotent.
  void terminate(std::chrono::milliseconds grace = std::chrono::milliseconds(2000));

 private:
  explicit ChildProcess(pid_t pid) : pid_(pid) {}
  bool poll_exit();  // true when the child has exited (reaped)
  void reap_and_kill_group();

  pid_t pid_ = -1;
  bool reaped_ = false;
  std::optional<ChildExit> exit_;
};

// Runs a command to completion with stdout+stderr captured (at most
// `max_bytes`); kills it at the deadline. Returns the exit and the output, or
// an error when it could not be started or timed out.
struct CapturedRun {
  ChildExit exit;
  std::string output;
};
std::expected<CapturedRun, std::string> run_captured(const std::vector<std::string>& argv, Deadline deadline,
                                                     std::size_t max_bytes = 1 << 20);

}  // namespace kgym::worker
