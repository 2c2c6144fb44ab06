#include "worker/candidate_sandbox.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>

#include <fmt/format.h>

#include "util/fs.h"
#include "worker/compile_cache.h"

namespace kgym::worker {
namespace {

namespace fs = std::filesystem;

constexpr uid_t kUnprivilegedUid = util::kBoxUid;
const fs::path kScratchInside = "/tmp/kgym";
const fs::path kCacheInside = "/tmp/kgym-ccache";
const fs::path kWorkerInside = "/tmp/kgym-worker";

std::optional<std::uint64_t> megabytes(long long mb) {
  if (mb <= 0) return std::nullopt;
  return static_cast<std::uint64_t>(mb) * 1024 * 1024;
}

std::optional<std::uint64_t> positive(long long n) {
  if (n <= 0) return std::nullopt;
  return static_cast<std::uint64_t>(n);
}

// Hands `dir` (not what is above it) to the unprivileged uid.
std::expected<void, std::string> give_to(const fs::path& dir, uid_t uid) {
  if (::chown(dir.c_str(), uid, uid) != 0) {
    return std::unexpected(
        fmt::format("cannot hand {} to uid {}: {}", dir.string(), uid, std::strerror(errno)));
  }
  return {};
}

// The compile caches (worker/compile_cache.h) are hidden from every box: a
// box sees at most its own key's ccache directory, mounted by give_box_ccache.
std::expected<void, std::string> hide_compile_caches(util::SandboxPolicy& p) {
  for (const fs::path& dir : {build_cache_root(), ccache_cache_root()}) {
    if (auto made = util::make_dirs(dir); !made) return made;
    p.hidden.push_back(dir);
  }
  return {};
}

// The limits and the uid every candidate box shares.
util::SandboxPolicy base_policy(const SandboxConfig& config, util::SandboxMode mode) {
  util::SandboxPolicy p;
  p.mode = mode;
  p.network = false;
  p.limits = {.address_space_bytes = megabytes(config.address_space_mb),
              .cpu_seconds = positive(config.cpu_sec),
              .file_size_bytes = megabytes(config.file_size_mb),
              .processes = positive(config.processes)};
  p.run_as = candidate_uid(config, mode);
  return p;
}

}  // namespace

fs::path kgym_cache_root() {
  if (const char* dir = std::getenv("KGYM_CACHE_DIR"); dir && *dir) return dir;
  const char* home = std::getenv("HOME");
  return fs::path(home && *home ? home : "/tmp") / ".cache" / "kgym";
}

std::optional<uid_t> candidate_uid(const SandboxConfig& config, util::SandboxMode mode) {
  return util::box_uid(config.drop_privileges, mode);
}

std::expected<void, std::string> check_interpreter_reachable(const SandboxConfig& config,
                                                             util::SandboxMode mode,
                                                             const std::string& python) {
  auto uid = candidate_uid(config, mode);
  if (!uid) return {};
  auto found = util::find_executable(python);
  if (!found) return {};  // resolve_python has said so already
  fs::path path = fs::absolute(*found).lexically_normal();
  auto fix = [&](const std::string& what) {
    return fmt::format(
        "the candidate runs as uid {} and cannot use the interpreter {}: {}; put the environment where "
        "others can read it (./dev.sh torch2 makes it under /var/cache/kgym when run as root) or set "
        "sandbox.drop_privileges: false",
        *uid, path.string(), what);
  };
  // The interpreter's directories must be searchable, a venv's pyvenv.cfg readable.
  if (auto blocked = util::unreachable_for(*uid, path); blocked)
    return std::unexpected(fix(fmt::format("others may not enter {}", blocked->string())));
  fs::path venv_config = path.parent_path().parent_path() / "pyvenv.cfg";
  std::error_code ec;
  if (fs::exists(venv_config, ec) && util::unreachable_for(*uid, venv_config, /*need_read=*/true))
    return std::unexpected(fix(fmt::format("others may not read {}", venv_config.string())));
  return {};
}

std::expected<CandidateBox, std::string> make_warm_candidate_box(const SandboxConfig& config,
                                                                 util::SandboxMode mode,
                                                                 const std::vector<fs::path>& hidden,
                                                                 const fs::path& scratch_root,
                                                                 const fs::path& worker_dir) {
  CandidateBox box;
  util::SandboxPolicy& p = box.policy;
  p = base_policy(config, mode);
  bool drop = p.run_as.has_value();
  if (drop) {
    if (auto given = give_to(scratch_root, kUnprivilegedUid); !given) return std::unexpected(given.error());
    std::error_code ec;
    fs::permissions(worker_dir, fs::perms::others_exec | fs::perms::others_read, fs::perm_options::add, ec);
    fs::permissions(worker_dir.parent_path(), fs::perms::others_exec, fs::perm_options::add, ec);
  }
  if (p.mode == util::SandboxMode::kBwrap) {
    p.hidden = hidden;
    box.scratch_inside = kScratchInside;
    p.read_only_at.emplace_back(worker_dir, kWorkerInside);
    box.worker_inside = kWorkerInside;
    p.writable.emplace_back(scratch_root, kScratchInside);
    p.cwd = kScratchInside;
    if (auto caches = hide_compile_caches(p); !caches) return std::unexpected(caches.error());
  }
  // Its workers load the build stage's output and never compile: no ccache.
  box.env = ccache_env(std::nullopt);
  if (drop)
    box.env.push_back("HOME=" + (box.scratch_inside.empty() ? scratch_root : kScratchInside).string());
  box.description = fmt::format("candidate sandbox: {}{}; inherited from the device's warm zygote",
                                util::describe_sandbox(p.mode, false, p.run_as), "");
  return box;
}

fs::path CandidateBox::inside(const fs::path& host, const fs::path& scratch_dir) const {
  if (scratch_inside.empty()) return host;
  auto relative = host.lexically_relative(scratch_dir);
  if (relative.empty() || *relative.begin() == "..") return host;
  return scratch_inside / relative;
}

std::expected<CandidateBox, std::string> make_candidate_box(const SandboxConfig& config,
                                                            const std::vector<fs::path>& hidden,
                                                            const fs::path& scratch_dir) {
  auto mode = util::resolve_sandbox_mode(config.mode);
  if (!mode) return std::unexpected(mode.error());
  CandidateBox box;
  util::SandboxPolicy& p = box.policy;
  p = base_policy(config, *mode);
  bool drop = p.run_as.has_value();
  fs::path candidate_dir = scratch_dir / "candidate";
  if (drop) {
    // The unprivileged uid must be able to enter the scratch dir and list it (Python's import system reads
    // directories; mkdtemp makes it 0700).
    std::error_code ec;
    fs::permissions(
        scratch_dir,
        fs::perms::others_exec | fs::perms::others_read | fs::perms::group_exec | fs::perms::group_read,
        fs::perm_options::add, ec);
    if (ec)
      return std::unexpected(
          fmt::format("cannot open {} to uid {}: {}", scratch_dir.string(), kUnprivilegedUid, ec.message()));
    if (auto given = give_to(candidate_dir, kUnprivilegedUid); !given) return std::unexpected(given.error());
  }
  if (p.mode == util::SandboxMode::kBwrap) {
    p.hidden = hidden;
    box.scratch_inside = kScratchInside;
    p.read_only_at.emplace_back(scratch_dir, kScratchInside);
    p.writable.emplace_back(candidate_dir, kScratchInside / "candidate");
    p.cwd = kScratchInside / "candidate";
    if (auto caches = hide_compile_caches(p); !caches) return std::unexpected(caches.error());
  }
  // No ccache until give_box_ccache gives the build its key's own.
  box.env = ccache_env(std::nullopt);
  if (drop)
    box.env.push_back("HOME=" +
                      (box.scratch_inside.empty() ? candidate_dir : kScratchInside / "candidate").string());
  box.description = fmt::format("candidate sandbox: {}", util::describe_sandbox(p.mode, false, p.run_as));
  return box;
}

bool give_box_ccache(CandidateBox& box, const fs::path& dir) {
  // Only bwrap can show the one directory alone; elsewhere the box goes without.
  if (box.policy.mode != util::SandboxMode::kBwrap) return false;
  if (box.policy.run_as && !give_to(dir, *box.policy.run_as)) return false;
  box.policy.writable.emplace_back(dir, kCacheInside);
  std::erase_if(box.env, [](const std::string& entry) { return entry.starts_with("CCACHE_"); });
  auto env = ccache_env(kCacheInside);
  box.env.insert(box.env.end(), env.begin(), env.end());
  return true;
}

}  // namespace kgym::worker
