#include "verify/child_process.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <map>
#include <thread>

#include <fmt/format.h>

#include "util/unique_fd.h"

extern char** environ;

namespace kgym::verify {
namespace {

constexpr auto kPollStep = std::chrono::milliseconds(5);

const char* signal_name(int sig) {
  switch (sig) {
    case SIGSEGV: return "SIGSEGV";
    case SIGABRT: return "SIGABRT";
    case SIGBUS: return "SIGBUS";
    case SIGFPE: return "SIGFPE";
    case SIGILL: return "SIGILL";
    case SIGKILL: return "SIGKILL";
    case SIGTERM: return "SIGTERM";
    case SIGINT: return "SIGINT";
    case SIGPIPE: return "SIGPIPE";
    case SIGXCPU: return "SIGXCPU";
    case SIGXFSZ: return "SIGXFSZ";
    default: return nullptr;
  }
}

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

std::vector<char*> c_strings(const std::vector<std::string>& items) {
  std::vector<char*> out;
  for (const auto& s : items) out.push_back(const_cast<char*>(s.c_str()));
  out.push_back(nullptr);
  return out;
}

}  // namespace

std::string ChildExit::describe() const {
  if (!signaled) return fmt::format("exit code {}", code);
  const char* name = signal_name(code);
  std::string text = name ? fmt::format("signal {} ({})", name, strsignal(code))
                          : fmt::format("signal {} ({})", code, strsignal(code));
  return text;
}

std::vector<std::string> environment_with(const std::vector<std::string>& overrides) {
  std::map<std::string, std::string> vars;
  for (char** e = environ; e && *e; ++e) {
    std::string_view entry(*e);
    auto eq = entry.find('=');
    if (eq == std::string_view::npos) continue;
    vars[std::string(entry.substr(0, eq))] = std::string(entry.substr(eq + 1));
  }
  for (const auto& item : overrides) {
    auto eq = item.find('=');
    if (eq == std::string::npos) continue;
    vars[item.substr(0, eq)] = item.substr(eq + 1);
  }
  std::vector<std::string> out;
  for (const auto& [name, value] : vars) out.push_back(name + "=" + value);
  return out;
}

std::expected<ChildProcess, std::string> ChildProcess::spawn(const ChildSpec& spec) {
  if (spec.argv.empty()) return std::unexpected("empty command");
  posix_spawn_file_actions_t actions;
  posix_spawnattr_t attr;
  posix_spawn_file_actions_init(&actions);
  posix_spawnattr_init(&attr);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  std::string log = spec.log_path.empty() ? std::string("/dev/null") : spec.log_path.string();
  posix_spawn_file_actions_addopen(&actions, 1, log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
  posix_spawn_file_actions_adddup2(&actions, 1, 2);
  for (auto [child_fd, parent_fd] : spec.fd_map) {
    posix_spawn_file_actions_adddup2(&actions, parent_fd, child_fd);
  }
  std::string cwd = spec.cwd.string();
  if (!cwd.empty()) posix_spawn_file_actions_addchdir_np(&actions, cwd.c_str());
  // Own process group, default signal dispositions and an empty mask.
  sigset_t all, none;
  sigfillset(&all);
  sigemptyset(&none);
  posix_spawnattr_setsigdefault(&attr, &all);
  posix_spawnattr_setsigmask(&attr, &none);
  posix_spawnattr_setpgroup(&attr, 0);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK);
  auto argv = c_strings(spec.argv);
  auto envp = c_strings(spec.env);
  pid_t pid = -1;
  int rc = posix_spawnp(&pid, argv[0], &actions, &attr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  if (rc != 0) return std::unexpected(fmt::format("cannot start {}: {}", spec.argv[0], std::strerror(rc)));
  return ChildProcess(pid);
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
  while (::waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
  }
  reaped_ = true;
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
    int n = ::poll(&pfd, 1, static_cast<int>(std::min<long long>(left, 1000)));
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

}  // namespace kgym::verify
