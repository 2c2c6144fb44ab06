#include "util/posix_process_runner.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <fmt/format.h>

extern char** environ;

namespace kgym::util {
namespace {

int pidfd_open(int pid) { return static_cast<int>(::syscall(SYS_pidfd_open, pid, 0)); }

std::vector<std::string> merged_environment(const std::map<std::string, std::string>& overrides) {
  std::vector<std::string> env;
  for (char** e = environ; *e != nullptr; ++e) {
    std::string_view entry(*e);
    std::string key(entry.substr(0, entry.find('=')));
    if (!overrides.contains(key)) env.emplace_back(entry);
  }
  for (const auto& [key, value] : overrides) env.push_back(key + "=" + value);
  return env;
}

std::vector<char*> c_strings(std::vector<std::string>& items) {
  std::vector<char*> out;
  out.reserve(items.size() + 1);
  for (auto& s : items) out.push_back(s.data());
  out.push_back(nullptr);
  return out;
}

// RAII for the posix_spawn attribute and file-action objects.
struct SpawnSetup {
  posix_spawnattr_t attr;
  posix_spawn_file_actions_t actions;
  SpawnSetup() {
    posix_spawnattr_init(&attr);
    posix_spawn_file_actions_init(&actions);
  }
  ~SpawnSetup() {
    posix_spawn_file_actions_destroy(&actions);
    posix_spawnattr_destroy(&attr);
  }
};

}  // namespace

std::string ProcessExit::describe() const {
  if (kind == Kind::kExited) return fmt::format("exit {}", code);
  return fmt::format("signal {} ({})", code, ::strsignal(code));
}

PosixProcessRunner::~PosixProcessRunner() {
  kill_all();
  for (auto& [id, child] : children_) ::waitpid(child.pid, nullptr, 0);
}

std::expected<int, std::string> PosixProcessRunner::start(Id id, const ProcessSpec& spec) {
  if (spec.argv.empty()) return std::unexpected("empty command line");
  if (children_.contains(id)) return std::unexpected(fmt::format("child id {} is already running", id));
  SpawnSetup setup;
  sigset_t default_signals;
  sigemptyset(&default_signals);
  sigaddset(&default_signals, SIGINT);
  sigaddset(&default_signals, SIGTERM);
  sigaddset(&default_signals, SIGPIPE);
  sigaddset(&default_signals, SIGCHLD);
  sigset_t no_signals;
  sigemptyset(&no_signals);
  posix_spawnattr_setsigdefault(&setup.attr, &default_signals);
  posix_spawnattr_setsigmask(&setup.attr, &no_signals);
  posix_spawnattr_setpgroup(&setup.attr, 0);  // its own process group
  posix_spawnattr_setflags(&setup.attr,
                           POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK);
  posix_spawn_file_actions_addopen(&setup.actions, 0, "/dev/null", O_RDONLY, 0);
  std::string log = spec.log_file.empty() ? std::string("/dev/null") : spec.log_file.string();
  posix_spawn_file_actions_addopen(&setup.actions, 1, log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
  posix_spawn_file_actions_adddup2(&setup.actions, 1, 2);
  std::string cwd = spec.cwd.string();
  if (!cwd.empty()) posix_spawn_file_actions_addchdir_np(&setup.actions, cwd.c_str());

  std::vector<std::string> argv_storage = spec.argv;
  std::vector<std::string> env_storage = merged_environment(spec.env);
  std::vector<char*> argv = c_strings(argv_storage);
  std::vector<char*> envp = c_strings(env_storage);
  pid_t pid = -1;
  int err = ::posix_spawnp(&pid, argv[0], &setup.actions, &setup.attr, argv.data(), envp.data());
  if (err != 0)
    return std::unexpected(fmt::format("cannot start '{}': {}", spec.argv[0], std::strerror(err)));

  Child child;
  child.pid = pid;
  child.pidfd = UniqueFd(pidfd_open(pid));
  child.started = clock_.now();
  if (!child.pidfd) {
    ::kill(-pid, SIGKILL);
    ::waitpid(pid, nullptr, 0);
    return std::unexpected(fmt::format("pidfd_open failed: {}", std::strerror(errno)));
  }
  children_.emplace(id, std::move(child));
  return pid;
}

void PosixProcessRunner::terminate(Id id, std::chrono::milliseconds grace) {
  auto it = children_.find(id);
  if (it == children_.end() || it->second.terminated) return;
  it->second.terminated = true;
  it->second.kill_at = clock_.now() + grace;
  ::kill(-it->second.pid, SIGTERM);
}

void PosixProcessRunner::kill_all() {
  for (auto& [id, child] : children_) {
    child.terminated = true;
    ::kill(-child.pid, SIGKILL);
  }
}

void PosixProcessRunner::escalate_kills() {
  SteadyTime now = clock_.now();
  for (auto& [id, child] : children_) {
    if (child.kill_at && *child.kill_at <= now) {
      ::kill(-child.pid, SIGKILL);
      child.kill_at.reset();
    }
  }
}

std::optional<ProcessRunner::Finished> PosixProcessRunner::reap(Id id, Child& child) {
  siginfo_t info{};
  if (::waitid(P_PID, static_cast<id_t>(child.pid), &info, WEXITED | WNOHANG | WNOWAIT) != 0 ||
      info.si_pid == 0) {
    return std::nullopt;
  }
  // The child is a zombie, so its pid (= its group id) cannot be reused yet:
  // clear out anything it left running in its group, then reap it.
  ::kill(-child.pid, SIGKILL);
  int status = 0;
  ::waitpid(child.pid, &status, 0);
  ProcessExit exit;
  if (WIFSIGNALED(status)) {
    exit.kind = ProcessExit::Kind::kSignaled;
    exit.code = WTERMSIG(status);
  } else {
    exit.code = WEXITSTATUS(status);
  }
  exit.killed_by_runner = child.terminated;
  exit.duration = clock_.now() - child.started;
  return Finished{id, exit};
}

std::vector<ProcessRunner::Finished> PosixProcessRunner::wait(SteadyTime deadline,
                                                              std::optional<int> wake_fd) {
  std::vector<Finished> finished;
  for (;;) {
    escalate_kills();
    std::vector<pollfd> fds;
    std::vector<Id> ids;
    for (auto& [id, child] : children_) {
      fds.push_back({child.pidfd.get(), POLLIN, 0});
      ids.push_back(id);
    }
    if (wake_fd) fds.push_back({*wake_fd, POLLIN, 0});
    SteadyTime until = deadline;
    for (auto& [id, child] : children_) {
      if (child.kill_at && *child.kill_at < until) until = *child.kill_at;
    }
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(until - clock_.now());
    int timeout_ms = static_cast<int>(std::max<long long>(0, left.count()));
    int n = ::poll(fds.data(), fds.size(), timeout_ms);
    if (n < 0 && errno != EINTR) return finished;
    for (std::size_t i = 0; i < ids.size(); ++i) {
      if (n > 0 && (fds[i].revents & (POLLIN | POLLHUP))) {
        auto it = children_.find(ids[i]);
        if (auto done = reap(ids[i], it->second)) {
          finished.push_back(*done);
          children_.erase(it);
        }
      }
    }
    bool woke = wake_fd && n > 0 && (fds.back().revents & POLLIN);
    if (!finished.empty() || woke || clock_.now() >= deadline || n < 0) return finished;
  }
}

}  // namespace kgym::util
