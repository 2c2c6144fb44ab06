#pragma once
// One Python worker (boxed/kgym_worker.py `serve`) and its protocol
// channel: requests go to the worker's fd 3, responses come from its fd 4
// (docs/worker-protocol.md). stdout/stderr of the worker are appended to a
// log file and never parsed. Every exchange has a deadline; the destructor
// kills the worker's whole process group. A worker is either spawned cold
// (a new interpreter) or forked from a warm zygote (worker/zygote.h); both
// speak the same protocol.
#include <expected>
#include <filesystem>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "util/unique_fd.h"
#include "worker/child_process.h"
#include "worker/protocol.h"
#include "worker/zygote.h"

namespace kgym::worker {

struct WorkerSpec {
  std::vector<std::string> argv;  // the interpreter, the script, "serve", ...
  std::vector<std::string> env;   // complete environment, "NAME=VALUE"
  std::filesystem::path cwd;
  std::filesystem::path log_path;  // stdout+stderr, appended
};

// Why an exchange with the worker failed.
struct ChannelError {
  enum class Kind {
    kTimeout,   // the deadline passed; the worker is still running (caller kills it)
    kExited,    // the worker closed the channel or died; `exit` says how
    kProtocol,  // malformed bytes on the channel
    kIo,        // an OS error on the channel
  };
  Kind kind;
  std::string message;
  std::optional<ChildExit> exit;  // for kExited, when it could be learned
};

class WorkerProcess {
 public:
  static std::expected<WorkerProcess, std::string> spawn(const WorkerSpec& spec);
  // Has the zygote at `zygote_socket` fork the worker; `log_path` receives
  // its stdout/stderr. Fails (the caller may spawn cold instead) when the
  // zygote is gone or does not answer before `deadline`.
  static std::expected<WorkerProcess, std::string> fork_warm(const std::filesystem::path& zygote_socket,
                                                             const ForkRequest& request,
                                                             const std::filesystem::path& log_path,
                                                             Deadline deadline);

  WorkerProcess(WorkerProcess&&) noexcept = default;
  WorkerProcess& operator=(WorkerProcess&&) noexcept = default;

  // Writes one message completely before the deadline.
  std::expected<void, ChannelError> send(const Message& message, Deadline deadline);
  // Reads the next complete message before the deadline.
  std::expected<Message, ChannelError> receive(Deadline deadline);
  // send() then receive().
  std::expected<Message, ChannelError> call(const Message& request, Deadline deadline);

  // Asks the worker to exit ({"op":"exit"}) and waits up to `deadline`;
  // kills the group if it is still running then. Returns how it ended.
  std::optional<ChildExit> shutdown(Deadline deadline);
  // Kills the worker's process group now (SIGTERM, then SIGKILL).
  void kill() { terminate(std::chrono::milliseconds(500)); }

  pid_t pid() const;
  bool warm() const { return std::holds_alternative<ZygoteChild>(child_); }
  // When this process asked for the worker (before the spawn or the fork
  // request): the origin of the worker's start-up times (WorkerStartup).
  Clock::time_point requested() const { return requested_; }

 private:
  using Child = std::variant<ChildProcess, ZygoteChild>;
  WorkerProcess(Child child, util::UniqueFd requests, util::UniqueFd responses, Clock::time_point requested)
      : child_(std::move(child)),
        requests_(std::move(requests)),
        responses_(std::move(responses)),
        requested_(requested) {}
  ChannelError exited(std::string message);
  std::optional<ChildExit> wait_until(Deadline deadline);
  void terminate(std::chrono::milliseconds grace);

  Child child_;
  util::UniqueFd requests_;   // parent end of fd 3
  util::UniqueFd responses_;  // parent end of fd 4
  MessageDecoder decoder_;
  // Descriptors received (SCM_RIGHTS) and not yet given to a message.
  std::vector<std::shared_ptr<util::UniqueFd>> received_fds_;
  Clock::time_point requested_;
};

}  // namespace kgym::worker
