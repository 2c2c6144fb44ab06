#include "worker/child_process.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <thread>

#include <fmt/format.h>

#include "util/unique_fd.h"

namespace kgym::worker {
namespace {

constexpr auto kPollStep = std::chrono::milliseconds(5);

ChildExit exit_from_status(int status) {
  ChildExit e;
  if (WIFSIGNALED(status)) {
    e.signaled = true;
    e.code = WTERMSIG(status);
    e.core_dumped = WCOREDUMP(status);
  } else {
    e.code = WEXITSTATUS(status);
  }
  return e;
}

}  // namespace

std::string ChildExit::describe() const {
  return util::describe_exit(signaled, code);
}

bool died_of_memory(const ChildExit& exit, std::string_view output) {
  if (exit.signaled && exit.code == SIGKILL) return true;
  for (std::string_view sign : {"MemoryError", "std::bad_alloc", "can't allocate memory",
                                "Cannot allocate memory", "not enough memory", "out of memory"}) {
    if (output.find(sign) != std::string_view::npos) return true;
  }
  return false;
}

std::string memory_reason(std::string_view who, const ChildExit& exit, long long address_space_mb,
                          std::string_view context) {
  std::string how = exit.signaled && exit.code == SIGKILL
                        ? "killed by SIGKILL, which the kernel's out-of-memory killer sends"
                        : fmt::format("an allocation failed ({})", exit.describe());
  if (address_space_mb > 0)
    how +=
        fmt::format("; its address space is limited to {} MB (sandbox.address_space_mb)", address_space_mb);
  if (exit.peak_rss_mb) how += fmt::format("; peak resident memory {:.0f} MB", *exit.peak_rss_mb);
  std::string tensors = context.empty() ? "" : fmt::format(" {}.", context);
  return fmt::format(
      "{} ran out of memory ({}).{} Shrink the problem: problem.size: auto (--size auto) or a smaller budget "
      "(--size '{{max_bytes: 16777216}}'), or --override NAME=VALUE for its size constants",
      who, how, tensors);
}

int poll_timeout_ms(Deadline deadline) {
  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
  return static_cast<int>(std::clamp<long long>(left, 0, 1000));
}

std::expected<ChildProcess, std::string> ChildProcess::spawn(const ChildSpec& spec) {
  auto pid = util::spawn_in_new_group(spec);
  if (!pid) return std::unexpected(pid.error());
  return ChildProcess(*pid);
}

ChildProcess::ChildProcess(ChildProcess&& other) noexcept
    : pid_(std::exchange(other.pid_, -1)), reaped_(other.reaped_), exit_(std::move(other.exit_)) {}

ChildProcess& ChildProcess::operator=(ChildProcess&& other) noexcept {
  if (this != &other) {
    terminate();
    pid_ = std::exchange(other.pid_, -1);
    reaped_ = other.reaped_;
    exit_ = std::move(other.exit_);
  }
  return *this;
}

ChildProcess::~ChildProcess() { terminate(); }

void ChildProcess::reap_and_kill_group() {
  // The exited child is still a zombie here (WNOWAIT), so its process group
  // id cannot have been reused: kill any stragglers, then reap.
  ::kill(-pid_, SIGKILL);
  int status = 0;
  struct rusage usage {};
  while (::wait4(pid_, &status, 0, &usage) < 0 && errno == EINTR) {
  }
  reaped_ = true;
  // Linux gives ru_maxrss in kilobytes: the child's own peak, not its children's.
  if (exit_ && usage.ru_maxrss > 0) exit_->peak_rss_mb = static_cast<double>(usage.ru_maxrss) / 1024.0;
}

bool ChildProcess::poll_exit() {
  if (pid_ < 0 || reaped_) return true;
  siginfo_t info{};
  if (::waitid(P_PID, pid_, &info, WEXITED | WNOHANG | WNOWAIT) != 0) return false;
  if (info.si_pid != pid_) return false;
  ChildExit e;
  if (info.si_code == CLD_EXITED) {
    e.code = info.si_status;
  } else {
    e.signaled = true;
    e.code = info.si_status;
    e.core_dumped = info.si_code == CLD_DUMPED;
  }
  exit_ = e;
  reap_and_kill_group();
  return true;
}

std::optional<ChildExit> ChildProcess::wait_until(Deadline deadline) {
  while (!poll_exit()) {
    if (Clock::now() >= deadline) return std::nullopt;
    std::this_thread::sleep_for(kPollStep);
  }
  return exit_;
}

void ChildProcess::terminate(std::chrono::milliseconds grace) {
  if (pid_ < 0 || reaped_) return;
  if (poll_exit()) return;
  ::kill(-pid_, SIGTERM);
  if (wait_until(Clock::now() + grace)) return;
  ::kill(-pid_, SIGKILL);
  // SIGKILL cannot be ignored; the wait is bounded anyway.
  if (!wait_until(Clock::now() + std::chrono::seconds(10))) {
    int status = 0;
    ::waitpid(pid_, &status, 0);
    exit_ = exit_from_status(status);
    reaped_ = true;
  }
}

std::expected<CapturedRun, std::string> run_captured(const std::vector<std::string>& argv, Deadline deadline,
                                                     std::size_t max_bytes) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) return std::unexpected(fmt::format("pipe: {}", std::strerror(errno)));
  util::UniqueFd read_end(fds[0]), write_end(fds[1]);
  // A high fd number so dup2 onto 1 and 2 never aliases it.
  util::UniqueFd child_out(::fcntl(write_end.get(), F_DUPFD_CLOEXEC, 10));
  write_end.reset();
  ChildSpec spec{
      .argv = argv, .env = environment_with({}), .fd_map = {{1, child_out.get()}, {2, child_out.get()}}};
  auto child = ChildProcess::spawn(spec);
  child_out.reset();
  if (!child) return std::unexpected(child.error());
  CapturedRun result;
  char buffer[65536];
  for (;;) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    if (left <= 0) {
      child->terminate();
      return std::unexpected(fmt::format("{} did not finish in time", argv[0]));
    }
    pollfd pfd{read_end.get(), POLLIN, 0};
    int n = ::poll(&pfd, 1, poll_timeout_ms(deadline));
    if (n < 0 && errno != EINTR) break;
    if (n <= 0) continue;
    ssize_t got = ::read(read_end.get(), buffer, sizeof buffer);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) break;
    if (result.output.size() < max_bytes) result.output.append(buffer, static_cast<std::size_t>(got));
  }
  auto exit = child->wait_until(deadline);
  if (!exit) {
    child->terminate();
    return std::unexpected(fmt::format("{} did not exit in time", argv[0]));
  }
  result.exit = *exit;
  return result;
}

}  // namespace kgym::worker
