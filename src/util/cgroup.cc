#include "util/cgroup.h"

#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <chrono>
#include <fstream>
#include <sstream>
#include <thread>

#include <fmt/format.h>

#include "util/fs.h"

namespace kgym::util {
namespace {

namespace fs = std::filesystem;

constexpr std::string_view kRoot = "kgym";
// How long removing a group waits for its killed processes to leave it.
constexpr auto kDrainWait = std::chrono::seconds(3);

std::string trimmed(std::string text) {
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
  return text;
}

std::expected<void, std::string> write_text(const fs::path& file, std::string_view text) {
  std::ofstream out(file);
  out << text;
  out.flush();
  if (!out) return std::unexpected(fmt::format("cannot write '{}' to {}", text, file.string()));
  return {};
}

std::vector<pid_t> pids_in(const fs::path& dir) {
  std::vector<pid_t> pids;
  std::ifstream in(dir / "cgroup.procs");
  for (pid_t pid = 0; in >> pid;) pids.push_back(pid);
  return pids;
}

// Kills every process of the group at `dir` and removes it, waiting a
// little for the processes to leave. False when it could not be removed.
bool drain_and_remove(const fs::path& dir) {
  std::error_code ec;
  if (!fs::exists(dir, ec)) return true;
  auto until = std::chrono::steady_clock::now() + kDrainWait;
  for (;;) {
    auto pids = pids_in(dir);
    for (pid_t pid : pids) ::kill(pid, SIGKILL);
    if (pids.empty() && ::rmdir(dir.c_str()) == 0) return true;
    if (std::chrono::steady_clock::now() > until) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

bool owner_gone(std::string_view name) {
  pid_t pid = 0;
  auto [end, ec] = std::from_chars(name.data(), name.data() + name.size(), pid);
  if (ec != std::errc{} || end == name.data() || pid <= 0 || *end != '-') return false;
  return ::kill(pid, 0) != 0 && errno == ESRCH;
}

// <hierarchy>/kgym, made once; a cpuset parent needs cores and memory nodes
// before a child can hold any (copied from the hierarchy's root).
std::expected<fs::path, std::string> kgym_root(const fs::path& hierarchy, bool cpuset) {
  fs::path root = hierarchy / kRoot;
  std::error_code ec;
  fs::create_directory(root, ec);
  if (ec) return std::unexpected(fmt::format("cannot make {}: {}", root.string(), ec.message()));
  if (cpuset) {
    for (const char* file : {"cpuset.cpus", "cpuset.mems"}) {
      auto value = read_file(hierarchy / file);
      if (!value) return std::unexpected(value.error());
      if (trimmed(read_file(root / file).value_or("")).empty()) {
        if (auto ok = write_text(root / file, trimmed(*value)); !ok) return std::unexpected(ok.error());
      }
    }
  }
  return root;
}

}  // namespace

std::expected<CgroupMounts, std::string> parse_cgroup_mounts(std::string_view mounts_text) {
  CgroupMounts found;
  std::istringstream lines{std::string(mounts_text)};
  for (std::string line; std::getline(lines, line);) {
    std::istringstream fields(line);
    std::string device, dir, type, options;
    if (!(fields >> device >> dir >> type >> options) || type != "cgroup") continue;
    std::istringstream opts(options);
    for (std::string opt; std::getline(opts, opt, ',');) {
      if (opt == "cpuset" && found.cpuset.empty()) found.cpuset = dir;
      if (opt == "cpuacct" && found.cpuacct.empty()) found.cpuacct = dir;
    }
  }
  if (found.cpuset.empty() || found.cpuacct.empty()) {
    return std::unexpected(fmt::format("no cgroup v1 {} hierarchy is mounted",
                                       found.cpuset.empty() ? "cpuset" : "cpuacct"));
  }
  return found;
}

std::expected<CgroupMounts, std::string> usable_cgroup_mounts() {
  auto text = read_file("/proc/self/mounts");
  if (!text) return std::unexpected(text.error());
  auto mounts = parse_cgroup_mounts(*text);
  if (!mounts) return mounts;
  for (const fs::path& dir : {mounts->cpuset, mounts->cpuacct}) {
    if (::access(dir.c_str(), W_OK) != 0)
      return std::unexpected(fmt::format("{} is not writable by uid {}", dir.string(), ::geteuid()));
  }
  return mounts;
}

std::expected<CpuCgroup, std::string> CpuCgroup::create(const CgroupMounts& mounts, std::string_view purpose,
                                                        std::string_view cores) {
  sweep_stale_cgroups(mounts);
  auto cpuset_root = kgym_root(mounts.cpuset, true);
  if (!cpuset_root) return std::unexpected(cpuset_root.error());
  auto cpuacct_root = kgym_root(mounts.cpuacct, false);
  if (!cpuacct_root) return std::unexpected(cpuacct_root.error());
  std::string name = fmt::format("{}-{}", ::getpid(), purpose);
  std::string core_list(cores);
  if (core_list.empty() || core_list == "all") core_list = trimmed(read_file(*cpuset_root / "cpuset.cpus").value_or(""));
  CpuCgroup group(*cpuset_root / name, *cpuacct_root / name, core_list);
  for (const fs::path& dir : {group.cpuset_dir_, group.cpuacct_dir_}) {
    // Left by an earlier process that had this pid.
    drain_and_remove(dir);
    std::error_code ec;
    fs::create_directory(dir, ec);
    if (ec) return std::unexpected(fmt::format("cannot make {}: {}", dir.string(), ec.message()));
  }
  if (auto ok = write_text(group.cpuset_dir_ / "cpuset.cpus", core_list); !ok)
    return std::unexpected(ok.error() + " (a core the machine does not have?)");
  auto mems = read_file(*cpuset_root / "cpuset.mems");
  if (!mems) return std::unexpected(mems.error());
  if (auto ok = write_text(group.cpuset_dir_ / "cpuset.mems", trimmed(*mems)); !ok)
    return std::unexpected(ok.error());
  if (!read_cgroup_usage_ns(group.usage_file_))
    return std::unexpected(fmt::format("cannot read {}", group.usage_file_.string()));
  return group;
}

CpuCgroup::CpuCgroup(fs::path cpuset_dir, fs::path cpuacct_dir, std::string cores)
    : cpuset_dir_(std::move(cpuset_dir)),
      cpuacct_dir_(std::move(cpuacct_dir)),
      usage_file_(cpuacct_dir_ / "cpuacct.usage"),
      cores_(std::move(cores)) {}

CpuCgroup::CpuCgroup(CpuCgroup&& other) noexcept
    : cpuset_dir_(std::move(other.cpuset_dir_)),
      cpuacct_dir_(std::move(other.cpuacct_dir_)),
      usage_file_(std::move(other.usage_file_)),
      cores_(std::move(other.cores_)) {
  other.cpuset_dir_.clear();
  other.cpuacct_dir_.clear();
}

CpuCgroup& CpuCgroup::operator=(CpuCgroup&& other) noexcept {
  if (this != &other) {
    remove();
    cpuset_dir_ = std::move(other.cpuset_dir_);
    cpuacct_dir_ = std::move(other.cpuacct_dir_);
    usage_file_ = std::move(other.usage_file_);
    cores_ = std::move(other.cores_);
    other.cpuset_dir_.clear();
    other.cpuacct_dir_.clear();
  }
  return *this;
}

CpuCgroup::~CpuCgroup() { remove(); }

void CpuCgroup::remove() {
  for (auto* dir : {&cpuset_dir_, &cpuacct_dir_}) {
    if (!dir->empty()) drain_and_remove(*dir);
    dir->clear();
  }
}

std::vector<std::string> CpuCgroup::entering(const std::vector<std::string>& argv) const {
  // "0" written to cgroup.procs moves the writer itself; exec keeps the pid.
  std::vector<std::string> out{"/bin/sh", "-c", R"(echo 0 > "$1" && echo 0 > "$2" && shift 2 && exec "$@")",
                               "kgym-lease", (cpuset_dir_ / "cgroup.procs").string(),
                               (cpuacct_dir_ / "cgroup.procs").string()};
  out.insert(out.end(), argv.begin(), argv.end());
  return out;
}

std::optional<std::uint64_t> read_cgroup_usage_ns(const fs::path& usage_file) {
  std::ifstream in(usage_file);
  std::uint64_t ns = 0;
  if (!(in >> ns)) return std::nullopt;
  return ns;
}

int sweep_stale_cgroups(const CgroupMounts& mounts) {
  int removed = 0;
  for (const fs::path& hierarchy : {mounts.cpuset, mounts.cpuacct}) {
    std::error_code ec;
    for (const auto& entry : fs::directory_iterator(hierarchy / kRoot, ec)) {
      if (!entry.is_directory(ec) || !owner_gone(entry.path().filename().string())) continue;
      if (drain_and_remove(entry.path())) ++removed;
    }
  }
  return removed;
}

}  // namespace kgym::util
