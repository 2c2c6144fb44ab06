#pragma once
// Warm worker parents ("zygotes", boxed/kgym_worker_zygote.py): a Python
// process with torch already imported that forks one `serve` worker per
// request, so a verification does not pay the interpreter and torch start
// (docs/worker-protocol.md "Warm workers").
//
// Zygote is the server side, owned by `kgym run`: it creates the listening
// Unix socket, starts the zygote on it (fd 3) and kills the zygote's group
// when destroyed. ZygoteChild is the client side, used by `kgym verify`: it
// hands the zygote the worker's channel and log fds and then holds the
// connection as the child's lifeline — closing it (or this process dying)
// makes the zygote kill the child's process group.
#include <sys/types.h>

#include <chrono>
#include <expected>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "util/unique_fd.h"
#include "worker/child_process.h"

namespace kgym::worker {

// Where a verification finds its device's zygotes (part of verify/verifier.h's VerifyRequest).
struct WarmEndpoints {
  std::filesystem::path reference_socket;
  std::filesystem::path candidate_socket;
  // The candidate zygote's writable scratch root on the host and as the
  // candidate sees it; each verification uses a fresh subdirectory.
  std::filesystem::path scratch_root;
  std::filesystem::path scratch_inside;
  std::string candidate_box;       // the candidate zygote's box, for verify.log
  std::vector<std::string> notes;  // for verify.log: restarts of dead zygotes
  // The lease (util/cgroup.h): the cpuacct counters of the cgroups the
  // zygotes and all their forks run in (empty: no cgroup), and the
  // zygotes' pids, whose process trees are read instead.
  std::filesystem::path reference_cpu_usage;
  std::filesystem::path candidate_cpu_usage;
  int candidate_zygote_pid = 0;
  int reference_zygote_pid = 0;
};

class Zygote {
 public:
  // Binds `socket_path` (replacing a stale socket there), then starts `argv`
  // (which ends in `kgym_worker.py zygote ...`) with the listening socket on
  // fd 3, stdout+stderr appended to `log_path`, dying with this process.
  // Returns at once: the zygote imports torch in the background while
  // clients already queue on the socket.
  static std::expected<Zygote, std::string> start(const std::vector<std::string>& argv,
                                                  const std::vector<std::string>& env,
                                                  const std::filesystem::path& socket_path,
                                                  const std::filesystem::path& log_path);

  // False once the zygote process has exited (it is then reaped).
  bool alive();
  const std::optional<ChildExit>& exit() const { return child_.exit(); }
  const std::filesystem::path& socket_path() const { return socket_path_; }
  // The pid of the process started (the sandbox's outermost one, if boxed).
  pid_t pid() const { return child_.pid(); }

 private:
  Zygote(ChildProcess child, std::filesystem::path socket_path)
      : child_(std::move(child)), socket_path_(std::move(socket_path)) {}

  ChildProcess child_;
  std::filesystem::path socket_path_;
};

// What the forked worker runs: `kgym_worker.py <args>` with `env` added to
// the zygote's environment, in `cwd` (as the zygote sees paths).
struct ForkRequest {
  std::vector<std::string> args;  // "serve", "--role", ...
  std::vector<std::string> env;   // "NAME=VALUE"
  std::filesystem::path cwd;
};

// The wire format of one fork connection (docs/worker-protocol.md "Warm
// workers"), one JSON line each way; exposed for tests.
// The request line, '\n'-terminated; the fds travel beside it.
std::string encode_fork_request(const ForkRequest& request);
// The zygote's answer: the child's pid, or the zygote's refusal as text.
std::expected<pid_t, std::string> decode_fork_reply(const std::string& line);
// The zygote's report that the child ended; nullopt for any other line.
std::optional<ChildExit> decode_exit_report(const std::string& line);

class ZygoteChild {
 public:
  // Connects to the zygote at `socket_path` and has it fork a worker whose
  // fds 3 and 4 are `request_fd` and `response_fd` and whose stdout/stderr
  // go to `log_fd` (the caller keeps its fds). Fails — never blocks past
  // `deadline` — when the zygote is gone, refuses or does not answer.
  static std::expected<ZygoteChild, std::string> fork(const std::filesystem::path& socket_path,
                                                      const ForkRequest& request, int request_fd,
                                                      int response_fd, int log_fd, Deadline deadline);

  ZygoteChild(ZygoteChild&&) noexcept = default;
  ZygoteChild& operator=(ZygoteChild&& other) noexcept;
  ~ZygoteChild();

  // The child's pid as the zygote sees it (inside its PID namespace).
  pid_t pid() const { return pid_; }
  // Waits for the zygote's report that the child ended; nullopt = still
  // running at the deadline. A lost zygote counts as the child killed.
  std::optional<ChildExit> wait_until(Deadline deadline);
  const std::optional<ChildExit>& exit() const { return exit_; }
  // Asks the zygote to SIGKILL the child's group and waits for the report
  // (at most `grace` plus a few seconds). Idempotent.
  void terminate(std::chrono::milliseconds grace = std::chrono::milliseconds(2000));

 private:
  ZygoteChild(util::UniqueFd connection, pid_t pid) : connection_(std::move(connection)), pid_(pid) {}

  util::UniqueFd connection_;
  pid_t pid_ = -1;
  std::optional<ChildExit> exit_;
  std::string buffer_;
};

// Has the zygote at `socket_path` run `kgym_worker.py <request.args>` with
// this process's stdout/stderr and /dev/null on fds 3/4, and waits for it:
// a one-shot worker (the probe) without a new interpreter. Returns the
// child's exit status as a shell would (128+N for signal N), or an error
// when the zygote cannot be reached. Dying (e.g. SIGTERM at a deadline)
// closes the lifeline, so the zygote kills the child.
std::expected<int, std::string> run_forked(const std::filesystem::path& socket_path,
                                           const ForkRequest& request, Deadline fork_deadline);

}  // namespace kgym::worker
