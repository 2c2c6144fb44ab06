#pragma once
// Wrapping a command line so it runs confined: resource limits (prlimit),
// then either a bubblewrap sandbox (read-only root, private /tmp, chosen
// directories writable or hidden, own PID/IPC/UTS namespaces, optionally no
// network, optionally an unprivileged uid) or, without bubblewrap,
// `unshare` namespaces (network and PID only; the filesystem stays as it is).
// The wrapped command is still started through the ProcessRunner / spawn
// path, so it keeps its own process group and the runner's kill-on-timeout.
#include <cstdint>
#include <expected>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace kgym::util {

enum class SandboxMode { kNone, kUnshare, kBwrap };

std::string_view to_string(SandboxMode mode);

// Resource limits (setrlimit); nullopt leaves a limit as inherited.
struct SandboxLimits {
  std::optional<std::uint64_t> address_space_bytes;  // RLIMIT_AS
  std::optional<std::uint64_t> cpu_seconds;          // RLIMIT_CPU (SIGXCPU, then SIGKILL)
  std::optional<std::uint64_t> file_size_bytes;      // RLIMIT_FSIZE (SIGXFSZ)
  std::optional<std::uint64_t> processes;            // RLIMIT_NPROC, per uid; Linux exempts uid 0
  bool no_core_dumps = true;                         // RLIMIT_CORE = 0
};

struct SandboxPolicy {
  SandboxMode mode = SandboxMode::kNone;
  bool network = false;
  // Directories replaced by an empty directory (bwrap only); entries of
  // `read_only` and `writable` below them are mounted back.
  std::vector<std::filesystem::path> hidden;
  // Mounted read-only (bwrap only) — used to show again what `hidden` covers.
  std::vector<std::filesystem::path> read_only;
  // Host path -> path inside the sandbox, writable (bwrap). Later entries
  // may lie inside earlier ones. With an empty second the host path is used.
  std::vector<std::pair<std::filesystem::path, std::filesystem::path>> writable;
  // Read-only mounts at another path inside the sandbox (bwrap).
  std::vector<std::pair<std::filesystem::path, std::filesystem::path>> read_only_at;
  // Read-only mounts made after the writable ones (bwrap), so a single file
  // can be shown read-only inside a writable directory (a credential file
  // inside the agent's private home).
  std::vector<std::pair<std::filesystem::path, std::filesystem::path>> read_only_over_writable;
  std::filesystem::path cwd;    // inside the sandbox; empty = unchanged
  std::optional<uid_t> run_as;  // switch to this uid/gid (setpriv) when started as root
  SandboxLimits limits;
};

// Which confinement `requested` ("auto", "bwrap", "unshare", "none") gives on
// this machine: "auto" takes bwrap when it works, else unshare when it
// works, else none. An explicit mode that does not work is an error naming
// the fix. Each probe starts one short process.
std::expected<SandboxMode, std::string> resolve_sandbox_mode(std::string_view requested);

// The command line that runs `argv` under `policy`.
std::vector<std::string> sandboxed_argv(const SandboxPolicy& policy, const std::vector<std::string>& argv);

// The environment that makes `home` (a writable directory inside the box)
// the home of the boxed program: HOME and the XDG base directories
// (XDG_CONFIG_HOME, XDG_DATA_HOME, XDG_CACHE_HOME, XDG_STATE_HOME) below it,
// laid out as on a desktop (`.config`, `.local/share`, `.cache`,
// `.local/state`). CLIs then keep their config, data, caches and state there
// instead of in the real $HOME, which the box shows read-only.
std::map<std::string, std::string> private_home_env(const std::filesystem::path& home);

// One line for run headers: "bwrap (read-only root, no network, pid namespace)".
std::string describe_sandbox(SandboxMode mode, bool network);

}  // namespace kgym::util
