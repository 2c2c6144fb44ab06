#pragma once
// Wrapping a command line so it runs confined: resource limits (prlimit),
// then either a bubblewrap sandbox (read-only root, private /tmp, chosen
// directories writable or hidden, own PID/IPC/UTS namespaces, optionally no
// network) or, without bubblewrap, `unshare` namespaces (network and PID
// only; the filesystem stays as it is); last `kgym-box` (src/box/), which
// drops every capability, switches to an unprivileged uid when kgym runs as
// root, sets no_new_privs and a seccomp filter against namespaces, mounts,
// chroot and tracing. Optionally the box's output reaches its log through a
// relay outside the box, so the boxed program holds no descriptor of the log.
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

// The unprivileged uid (and gid) boxes run as when kgym runs as root:
// nobody / nogroup on Debian.
inline constexpr uid_t kBoxUid = 65534;

// The uid a box switches to: kBoxUid when kgym runs as root, `drop_privileges`
// holds and there is a box (mode is not none); nullopt otherwise.
std::optional<uid_t> box_uid(bool drop_privileges, SandboxMode mode);

// Hands the tree at `dir` to `uid` (lchown, never following a link); the
// first failure is returned naming the path.
std::expected<void, std::string> hand_over(const std::filesystem::path& dir, uid_t uid);

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
  std::optional<uid_t> run_as;  // switch to this uid/gid (kgym-box) when started as root
  SandboxLimits limits;
  // stdout+stderr go through a pipe to a relay outside the box (and outside
  // the limits), which appends at most this many bytes to the log: the boxed
  // program cannot truncate or rewrite what it printed. 0 = no relay.
  std::uint64_t relay_output_bytes = 0;
};

// The kgym-box launcher: $KGYM_BOX, else `kgym-box` beside this program, else
// the one of the build tree kgym was built in; an error names what is missing.
std::expected<std::filesystem::path, std::string> box_launcher();

// Under bubblewrap with `run_as`: every directory the uid may not enter on
// the way to what the policy gives the box (writable, read-only, the files
// over them) is added to `hidden` — an empty tmpfs in the box — so that what
// lies below it is reached through the binds made again after it.
void cover_unreachable(SandboxPolicy& policy);

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

// One line for run headers: "bwrap (read-only root, private /tmp, pid
// namespace, no network), uid 65534, no capabilities, seccomp".
std::string describe_sandbox(SandboxMode mode, bool network, std::optional<uid_t> run_as = std::nullopt);

// Whether `uid` may reach `path`: every directory above it searchable (and
// `path` itself readable when `need_read`). Returns the first directory or
// file that stops it, or nullopt. kgym as root judges by the mode bits.
std::optional<std::filesystem::path> unreachable_for(uid_t uid, const std::filesystem::path& path,
                                                     bool need_read = false);

}  // namespace kgym::util
