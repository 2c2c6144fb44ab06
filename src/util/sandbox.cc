#include "util/sandbox.h"

#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <thread>

#include <fmt/format.h>

#include "util/spawn.h"

namespace kgym::util {
namespace {

// Runs `argv` with a short deadline; true when it exited 0.
bool command_works(const std::vector<std::string>& argv) {
  auto pid = spawn_in_new_group(SpawnSpec{.argv = argv, .env = environment_with({})});
  if (!pid) return false;
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  for (;;) {
    int status = 0;
    pid_t done = ::waitpid(*pid, &status, WNOHANG);
    if (done == *pid) return WIFEXITED(status) && WEXITSTATUS(status) == 0;
    if (done < 0) return false;
    if (std::chrono::steady_clock::now() > deadline) {
      ::kill(-*pid, SIGKILL);
      ::waitpid(*pid, &status, 0);
      return false;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

bool bwrap_works() {
  return command_works({"bwrap", "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--unshare-pid",
                        "--unshare-net", "--die-with-parent", "true"});
}

bool unshare_works() {
  std::vector<std::string> argv{"unshare", "--net", "--pid", "--fork", "--kill-child"};
  if (::geteuid() != 0) argv.push_back("--map-root-user");
  argv.push_back("true");
  return command_works(argv);
}

std::vector<std::string> prlimit_prefix(const SandboxLimits& limits) {
  std::vector<std::string> out{"prlimit"};
  if (limits.address_space_bytes) out.push_back(fmt::format("--as={}", *limits.address_space_bytes));
  if (limits.cpu_seconds) out.push_back(fmt::format("--cpu={}", *limits.cpu_seconds));
  if (limits.file_size_bytes) out.push_back(fmt::format("--fsize={}", *limits.file_size_bytes));
  if (limits.processes) out.push_back(fmt::format("--nproc={}", *limits.processes));
  if (limits.no_core_dumps) out.push_back("--core=0");
  if (out.size() == 1) return {};
  out.push_back("--");
  return out;
}

void add(std::vector<std::string>& out, std::initializer_list<std::string> items) {
  out.insert(out.end(), items.begin(), items.end());
}

std::vector<std::string> bwrap_prefix(const SandboxPolicy& p) {
  std::vector<std::string> out{"bwrap", "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc"};
  add(out, {"--perms", "1777", "--tmpfs", "/tmp"});
  for (const auto& dir : p.hidden) {
    if (dir.empty() || dir == "/" || dir == "/tmp") continue;
    add(out, {"--tmpfs", dir.string()});
  }
  for (const auto& dir : p.read_only) add(out, {"--ro-bind-try", dir.string(), dir.string()});
  for (const auto& [host, inside] : p.read_only_at) {
    add(out, {"--ro-bind", host.string(), (inside.empty() ? host : inside).string()});
  }
  for (const auto& [host, inside] : p.writable) {
    add(out, {"--bind", host.string(), (inside.empty() ? host : inside).string()});
  }
  for (const auto& [host, inside] : p.read_only_over_writable) {
    add(out, {"--ro-bind", host.string(), (inside.empty() ? host : inside).string()});
  }
  add(out, {"--unshare-pid", "--unshare-ipc", "--unshare-uts", "--die-with-parent"});
  if (!p.network) out.push_back("--unshare-net");
  if (!p.cwd.empty()) add(out, {"--chdir", p.cwd.string()});
  out.push_back("--");
  return out;
}

std::vector<std::string> unshare_prefix(const SandboxPolicy& p) {
  std::vector<std::string> out{"unshare", "--pid", "--fork", "--kill-child"};
  if (!p.network) out.push_back("--net");
  if (::geteuid() != 0) out.push_back("--map-root-user");
  out.push_back("--");
  return out;
}

}  // namespace

std::string_view to_string(SandboxMode mode) {
  switch (mode) {
    case SandboxMode::kBwrap: return "bwrap";
    case SandboxMode::kUnshare: return "unshare";
    case SandboxMode::kNone: return "none";
  }
  return "none";
}

std::expected<SandboxMode, std::string> resolve_sandbox_mode(std::string_view requested) {
  if (requested == "none") return SandboxMode::kNone;
  if (requested == "bwrap" || requested == "auto") {
    if (bwrap_works()) return SandboxMode::kBwrap;
    if (requested == "bwrap") {
      return std::unexpected(std::string(
          "sandbox.mode is bwrap but bubblewrap cannot start a sandbox here (is /usr/bin/bwrap installed, "
          "Debian package bubblewrap, and are namespaces allowed?); install it or set sandbox.mode: auto"));
    }
  }
  if (requested == "unshare" || requested == "auto") {
    if (unshare_works()) return SandboxMode::kUnshare;
    if (requested == "unshare") {
      return std::unexpected(std::string(
          "sandbox.mode is unshare but `unshare --net --pid` fails here (namespaces not allowed?); "
          "set sandbox.mode: auto or none"));
    }
    return SandboxMode::kNone;
  }
  return std::unexpected(
      fmt::format("unknown sandbox mode '{}'; use auto, bwrap, unshare or none", requested));
}

std::vector<std::string> sandboxed_argv(const SandboxPolicy& policy, const std::vector<std::string>& argv) {
  std::vector<std::string> out = prlimit_prefix(policy.limits);
  std::vector<std::string> inner;
  if (policy.mode == SandboxMode::kBwrap) inner = bwrap_prefix(policy);
  if (policy.mode == SandboxMode::kUnshare) inner = unshare_prefix(policy);
  out.insert(out.end(), inner.begin(), inner.end());
  if (policy.run_as && ::geteuid() == 0) {
    add(out, {"setpriv", fmt::format("--reuid={}", *policy.run_as), fmt::format("--regid={}", *policy.run_as),
              "--clear-groups",
              // Changing the uid clears the parent-death signal (bwrap's
              // --die-with-parent); setpriv sets it again after the change.
              "--pdeathsig", "KILL", "--"});
  }
  out.insert(out.end(), argv.begin(), argv.end());
  return out;
}

std::map<std::string, std::string> private_home_env(const std::filesystem::path& home) {
  return {{"HOME", home.string()},
          {"XDG_CONFIG_HOME", (home / ".config").string()},
          {"XDG_DATA_HOME", (home / ".local" / "share").string()},
          {"XDG_CACHE_HOME", (home / ".cache").string()},
          {"XDG_STATE_HOME", (home / ".local" / "state").string()}};
}

std::string describe_sandbox(SandboxMode mode, bool network) {
  std::string net = network ? "network kept" : "no network";
  switch (mode) {
    case SandboxMode::kBwrap:
      return fmt::format("bwrap (read-only root, private /tmp, pid namespace, {})", net);
    case SandboxMode::kUnshare:
      return fmt::format("unshare (pid namespace, {}; filesystem NOT isolated: install bubblewrap)", net);
    case SandboxMode::kNone: return "none (rlimits only; install bubblewrap for isolation)";
  }
  return "none";
}

}  // namespace kgym::util
