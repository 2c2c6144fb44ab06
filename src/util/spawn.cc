#include "util/spawn.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <map>

#include <fmt/format.h>

#include "util/fs.h"

extern char** environ;

namespace kgym::util {
namespace {

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

std::vector<char*> c_strings(const std::vector<std::string>& items) {
  std::vector<char*> out;
  out.reserve(items.size() + 1);
  for (const auto& s : items) out.push_back(const_cast<char*>(s.c_str()));
  out.push_back(nullptr);
  return out;
}

// RAII for the posix_spawn attribute and file-action objects.
struct SpawnObjects {
  posix_spawnattr_t attr;
  posix_spawn_file_actions_t actions;
  SpawnObjects() {
    posix_spawnattr_init(&attr);
    posix_spawn_file_actions_init(&actions);
  }
  ~SpawnObjects() {
    posix_spawn_file_actions_destroy(&actions);
    posix_spawnattr_destroy(&attr);
  }
  SpawnObjects(const SpawnObjects&) = delete;
  SpawnObjects& operator=(const SpawnObjects&) = delete;
};

// Whether execvp would find `program` (a path, or a name on PATH).
bool executable_exists(const std::string& program, const std::filesystem::path& cwd) {
  // A relative path with a '/' is resolved from the child's cwd, as exec does.
  if (program.find('/') != std::string::npos && program.front() != '/' && !cwd.empty())
    return find_executable((cwd / program).string()).has_value();
  return find_executable(program).has_value();
}

}  // namespace

std::string describe_signal(int sig) {
  const char* name = signal_name(sig);
  return name ? fmt::format("{} ({})", name, ::strsignal(sig))
              : fmt::format("{} ({})", sig, ::strsignal(sig));
}

std::string describe_exit(bool signaled, int code) {
  return signaled ? "signal " + describe_signal(code) : fmt::format("exit code {}", code);
}

std::vector<std::string> environment_with(const std::vector<std::string>& overrides) {
  std::map<std::string, std::string> vars;
  auto put = [&vars](std::string_view entry) {
    auto eq = entry.find('=');
    if (eq != std::string_view::npos)
      vars[std::string(entry.substr(0, eq))] = std::string(entry.substr(eq + 1));
  };
  for (char** e = environ; e && *e; ++e) put(*e);
  for (const auto& item : overrides) put(item);
  std::vector<std::string> out;
  out.reserve(vars.size());
  for (const auto& [name, value] : vars) out.push_back(name + "=" + value);
  return out;
}

std::expected<pid_t, std::string> spawn_in_new_group(const SpawnSpec& spec) {
  if (spec.argv.empty()) return std::unexpected("empty command line");
  SpawnObjects spawn;
  posix_spawn_file_actions_addopen(&spawn.actions, 0, "/dev/null", O_RDONLY, 0);
  std::string log = spec.log_path.empty() ? std::string("/dev/null") : spec.log_path.string();
  posix_spawn_file_actions_addopen(&spawn.actions, 1, log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
  posix_spawn_file_actions_adddup2(&spawn.actions, 1, 2);
  for (auto [child_fd, parent_fd] : spec.fd_map) {
    posix_spawn_file_actions_adddup2(&spawn.actions, parent_fd, child_fd);
  }
  std::string cwd = spec.cwd.string();
  if (!cwd.empty()) posix_spawn_file_actions_addchdir_np(&spawn.actions, cwd.c_str());
  sigset_t all, none;
  sigfillset(&all);
  sigemptyset(&none);
  posix_spawnattr_setsigdefault(&spawn.attr, &all);
  posix_spawnattr_setsigmask(&spawn.attr, &none);
  posix_spawnattr_setpgroup(&spawn.attr, 0);
  posix_spawnattr_setflags(&spawn.attr,
                           POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK);
  // Behind setpriv a missing program would only show as exit 127; say it now.
  if (spec.die_with_parent && !executable_exists(spec.argv[0], spec.cwd))
    return std::unexpected(fmt::format("cannot start '{}': {}", spec.argv[0], std::strerror(ENOENT)));
  std::vector<std::string> command = spec.argv;
  if (spec.die_with_parent) command.insert(command.begin(), {"setpriv", "--pdeathsig", "KILL", "--"});
  auto argv = c_strings(command);
  auto envp = c_strings(spec.env);
  pid_t pid = -1;
  int rc = ::posix_spawnp(&pid, argv[0], &spawn.actions, &spawn.attr, argv.data(), envp.data());
  if (rc != 0) return std::unexpected(fmt::format("cannot start '{}': {}", spec.argv[0], std::strerror(rc)));
  return pid;
}

}  // namespace kgym::util
