#include "util/posix_process_runner.h"

#include <poll.h>
#include <signal.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <fmt/format.h>

#include "util/cpu_set.h"
#include "util/spawn.h"

namespace kgym::util {
namespace {

int pidfd_open(int pid) { return static_cast<int>(::syscall(SYS_pidfd_open, pid, 0)); }

}  // namespace

std::string ProcessExit::describe() const {
  return describe_exit(kind == Kind::kSignaled, code);
}

PosixProcessRunner::~PosixProcessRunner() {
  kill_all();
  for (auto& [id, child] : children_) ::waitpid(child.pid, nullptr, 0);
}

std::expected<int, std::string> PosixProcessRunner::start(Id id, const ProcessSpec& spec) {
  if (spec.argv.empty()) return std::unexpected("empty command line");
  if (children_.contains(id)) return std::unexpected(fmt::format("child id {} is already running", id));
  std::vector<std::string> overrides;
  for (const auto& [key, value] : spec.env) overrides.push_back(key + "=" + value);
  // The child inherits the affinity it is spawned with: this (single-
  // threaded) process takes the child's cores for the spawn, then its own back.
  std::optional<std::set<int>> own_cpus;
  if (!spec.cpus.empty()) {
    auto cpus = parse_cpu_list(spec.cpus);
    if (!cpus) return std::unexpected(fmt::format("'{}' is not a CPU core list", spec.cpus));
    own_cpus = allowed_cpus();
    if (!set_allowed_cpus(*cpus))
      return std::unexpected(fmt::format("cannot run on cores {}: {}", spec.cpus, std::strerror(errno)));
  }
  auto pid = spawn_in_new_group(SpawnSpec{.argv = spec.argv,
                                          .env = environment_with(overrides),
                                          .cwd = spec.cwd,
                                          .log_path = spec.log_file,
                                          .die_with_parent = true});
  if (own_cpus) set_allowed_cpus(*own_cpus);
  if (!pid) return std::unexpected(pid.error());

  Child child;
  child.pid = *pid;
  child.pidfd = UniqueFd(pidfd_open(*pid));
  child.started = clock_.now();
  if (!child.pidfd) {
    ::kill(-*pid, SIGKILL);
    ::waitpid(*pid, nullptr, 0);
    return std::unexpected(fmt::format("pidfd_open failed: {}", std::strerror(errno)));
  }
  children_.emplace(id, std::move(child));
  return *pid;
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
