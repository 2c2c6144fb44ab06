#include "util/sandbox.h"

#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <set>
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

// Whether unshare can also give the box a mount namespace with its own
// /proc (so the box sees only its own processes there); asked once.
bool unshare_mount_proc_works() {
  static const bool works = [] {
    std::vector<std::string> argv{"unshare", "--mount", "--mount-proc", "--pid", "--fork", "--kill-child"};
    if (::geteuid() != 0) argv.push_back("--map-root-user");
    argv.push_back("true");
    return command_works(argv);
  }();
  return works;
}

// Where the launcher is bound inside a bubblewrap box (its private /tmp).
const std::filesystem::path kBoxInside = "/tmp/.kgym-box";

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

std::vector<std::string> bwrap_prefix(const SandboxPolicy& p, const std::filesystem::path& launcher) {
  std::vector<std::string> out{"bwrap", "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc"};
  add(out, {"--perms", "1777", "--tmpfs", "/tmp"});
  if (!launcher.empty()) add(out, {"--ro-bind", launcher.string(), kBoxInside.string()});
  // Outer directories first: a hidden directory inside another one is
  // covered again after its parent's tmpfs.
  std::vector<std::filesystem::path> hidden = p.hidden;
  std::ranges::stable_sort(hidden, {}, [](const auto& dir) { return std::distance(dir.begin(), dir.end()); });
  // bwrap makes the directories a mount point needs inside a tmpfs with mode
  // 0700, as root: a box of another uid could not pass them. They are made
  // first, 0755, when the box changes its uid.
  std::vector<std::filesystem::path> tmpfs_roots{"/tmp"};
  std::set<std::filesystem::path> made;
  bool other_uid = p.run_as && ::geteuid() == 0;
  auto parents = [&](const std::filesystem::path& dest) {
    if (!other_uid) return;
    std::filesystem::path walked;
    for (const auto& part : dest.parent_path()) {
      walked /= part;
      bool below_tmpfs = std::ranges::any_of(tmpfs_roots, [&](const auto& root) {
        auto relative = walked.lexically_relative(root);
        return !relative.empty() && relative != "." && *relative.begin() != "..";
      });
      if (below_tmpfs && made.insert(walked).second) add(out, {"--perms", "0755", "--dir", walked.string()});
    }
  };
  auto bind = [&](const char* how, const std::filesystem::path& host, const std::filesystem::path& inside) {
    const std::filesystem::path& dest = inside.empty() ? host : inside;
    parents(dest);
    add(out, {how, host.string(), dest.string()});
  };
  for (const auto& dir : hidden) {
    if (dir.empty() || dir == "/" || dir == "/tmp") continue;
    parents(dir);
    add(out, {"--tmpfs", dir.string()});
    tmpfs_roots.push_back(dir);
  }
  for (const auto& path : p.read_only) bind("--ro-bind-try", path, path);
  for (const auto& [host, inside] : p.read_only_at) bind("--ro-bind", host, inside);
  for (const auto& [host, inside] : p.writable) bind("--bind", host, inside);
  for (const auto& [host, inside] : p.read_only_over_writable) bind("--ro-bind", host, inside);
  add(out, {"--unshare-pid", "--unshare-ipc", "--unshare-uts", "--die-with-parent"});
  if (!p.network) out.push_back("--unshare-net");
  if (!p.cwd.empty()) add(out, {"--chdir", p.cwd.string()});
  out.push_back("--");
  return out;
}

std::vector<std::string> unshare_prefix(const SandboxPolicy& p) {
  std::vector<std::string> out{"unshare", "--pid", "--fork", "--kill-child"};
  if (unshare_mount_proc_works()) add(out, {"--mount", "--mount-proc"});
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

std::expected<std::filesystem::path, std::string> box_launcher() {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (const char* given = std::getenv("KGYM_BOX"); given && *given) {
    if (fs::is_regular_file(given, ec)) return fs::absolute(given);
    return std::unexpected(fmt::format("KGYM_BOX={} is not a file; unset it or point it at kgym-box", given));
  }
  fs::path self = fs::read_symlink("/proc/self/exe", ec);
  if (!ec && fs::is_regular_file(self.parent_path() / "kgym-box", ec)) return self.parent_path() / "kgym-box";
#ifdef KGYM_BOX_BUILD_PATH
  if (fs::is_regular_file(KGYM_BOX_BUILD_PATH, ec)) return fs::path(KGYM_BOX_BUILD_PATH);
#endif
  return std::unexpected(fmt::format(
      "kgym-box (the launcher every box starts through) is not beside {}; build it (`./dev.sh build` "
      "makes build/kgym-box) or set KGYM_BOX to its path",
      self.string()));
}

std::optional<uid_t> box_uid(bool drop_privileges, SandboxMode mode) {
  if (drop_privileges && ::geteuid() == 0 && mode != SandboxMode::kNone) return kBoxUid;
  return std::nullopt;
}

std::expected<void, std::string> hand_over(const std::filesystem::path& dir, uid_t uid) {
  namespace fs = std::filesystem;
  auto give = [&](const fs::path& path) -> std::expected<void, std::string> {
    if (::lchown(path.c_str(), uid, uid) != 0)
      return std::unexpected(
          fmt::format("cannot hand {} to uid {}: {}", path.string(), uid, std::strerror(errno)));
    return {};
  };
  if (auto ok = give(dir); !ok) return ok;
  std::error_code ec;
  fs::recursive_directory_iterator it(dir, fs::directory_options::none, ec), end;
  for (; !ec && it != end; it.increment(ec)) {
    if (auto ok = give(it->path()); !ok) return ok;
  }
  if (ec)
    return std::unexpected(fmt::format("cannot hand {} to uid {}: {}", dir.string(), uid, ec.message()));
  return {};
}

void cover_unreachable(SandboxPolicy& policy) {
  if (!policy.run_as || policy.mode != SandboxMode::kBwrap) return;
  std::vector<std::filesystem::path> needed = policy.read_only;
  for (const auto& [host, inside] : policy.writable) needed.push_back(host);
  for (const auto& [host, inside] : policy.read_only_over_writable) needed.push_back(host);
  for (const auto& path : needed) {
    auto blocked = unreachable_for(*policy.run_as, path);
    if (blocked && *blocked != blocked->root_path() &&
        std::ranges::find(policy.hidden, *blocked) == policy.hidden.end())
      policy.hidden.push_back(*blocked);
  }
}

std::optional<std::filesystem::path> unreachable_for(uid_t uid, const std::filesystem::path& path,
                                                     bool need_read) {
  namespace fs = std::filesystem;
  auto may = [&](const fs::path& at, mode_t others_bit, mode_t group_bit, mode_t owner_bit) {
    struct stat st {};
    if (::stat(at.c_str(), &st) != 0) return true;  // nothing to judge
    if (st.st_uid == uid) return (st.st_mode & owner_bit) != 0;
    if (st.st_gid == uid) return (st.st_mode & group_bit) != 0;  // the uid's own group (nobody/nogroup)
    return (st.st_mode & others_bit) != 0;
  };
  fs::path absolute = fs::absolute(path).lexically_normal();
  fs::path walked = absolute.root_path();
  const fs::path relative = absolute.relative_path();
  for (const fs::path& part : relative) {
    if (!may(walked, S_IXOTH, S_IXGRP, S_IXUSR)) return walked;
    walked /= part;
  }
  if (need_read && !may(absolute, S_IROTH, S_IRGRP, S_IRUSR)) return absolute;
  return std::nullopt;
}

std::expected<SandboxMode, std::string> resolve_sandbox_mode(std::string_view requested) {
  if (requested == "none") return SandboxMode::kNone;
  if (auto launcher = box_launcher(); !launcher) return std::unexpected(launcher.error());
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
  std::vector<std::string> out;
  if (policy.relay_output_bytes > 0) {
    // The relay (bash and head, outside the box and its limits) holds the
    // log; the box writes into a pipe. The box's exit status is the relay's.
    add(out, {"bash", "-c",
              fmt::format(R"("$@" 2>&1 | head -c {}; exit "${{PIPESTATUS[0]}}")", policy.relay_output_bytes),
              "kgym-relay"});
  }
  std::vector<std::string> limits = prlimit_prefix(policy.limits);
  out.insert(out.end(), limits.begin(), limits.end());
  std::filesystem::path launcher;
  if (policy.mode != SandboxMode::kNone) launcher = box_launcher().value_or("kgym-box");
  std::vector<std::string> inner;
  if (policy.mode == SandboxMode::kBwrap) inner = bwrap_prefix(policy, launcher);
  if (policy.mode == SandboxMode::kUnshare) inner = unshare_prefix(policy);
  out.insert(out.end(), inner.begin(), inner.end());
  if (policy.mode != SandboxMode::kNone) {
    out.push_back((policy.mode == SandboxMode::kBwrap ? kBoxInside : launcher).string());
    // A uid change clears the parent-death signal (bwrap's
    // --die-with-parent): kgym-box sets it again after the change.
    out.push_back("--die-with-parent");
    if (policy.run_as && ::geteuid() == 0) add(out, {"--uid", std::to_string(*policy.run_as)});
    out.push_back("--");
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

std::string describe_sandbox(SandboxMode mode, bool network, std::optional<uid_t> run_as) {
  std::string net = network ? "network kept" : "no network";
  std::string who = run_as && ::geteuid() == 0 ? fmt::format("uid {}", *run_as)
                                               : fmt::format("uid {} (kgym's)", ::geteuid());
  std::string box =
      fmt::format("{}, no capabilities, no_new_privs, seccomp (no namespaces, mounts, chroot, ptrace)", who);
  switch (mode) {
    case SandboxMode::kBwrap:
      return fmt::format("bwrap (read-only root, private /tmp, pid namespace, {}), {}", net, box);
    case SandboxMode::kUnshare:
      return fmt::format("unshare (pid namespace{}, {}; filesystem NOT isolated: install bubblewrap), {}",
                         unshare_mount_proc_works() ? ", own /proc" : "", net, box);
    case SandboxMode::kNone: return "none (rlimits only; install bubblewrap for isolation)";
  }
  return "none";
}

}  // namespace kgym::util
