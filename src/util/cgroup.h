#pragma once
// A CPU lease the kernel enforces: a cgroup v1 `cpuset` group (the cores its
// processes may run on, whatever affinity they ask for: the kernel
// intersects every sched_setaffinity with the group's cores) paired with a
// `cpuacct` group (the CPU time of every thread and process that was ever in
// it, exited ones included, in nanoseconds). Knows nothing of kgym.
//
// Groups live under <hierarchy>/kgym/<owner pid>-<purpose>. A group whose
// owner has ended (a run killed with -9) is stale: the next create() kills
// what is left in it and removes it, so a crash never blocks a later run.
#include <sys/types.h>

#include <cstdint>
#include <expected>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace kgym::util {

// Where the v1 cpuset and cpuacct hierarchies are mounted.
struct CgroupMounts {
  std::filesystem::path cpuset;
  std::filesystem::path cpuacct;
};

// Reads a mount table (the text of /proc/self/mounts) for the two v1
// hierarchies; an error names what is missing.
std::expected<CgroupMounts, std::string> parse_cgroup_mounts(std::string_view mounts_text);

// The hierarchies of this machine, usable by this process: mounted, and
// writable (root). An error says why not, for the fallback's note.
std::expected<CgroupMounts, std::string> usable_cgroup_mounts();

class CpuCgroup {
 public:
  // Makes the group `<owner>-<purpose>` (owner = this process) in both
  // hierarchies, restricted to `cores` ("0", "0-3,8"; "all" or "" = every
  // core the parent group has), after sweeping stale groups.
  static std::expected<CpuCgroup, std::string> create(const CgroupMounts& mounts, std::string_view purpose,
                                                      std::string_view cores);

  CpuCgroup(CpuCgroup&& other) noexcept;
  CpuCgroup& operator=(CpuCgroup&& other) noexcept;
  CpuCgroup(const CpuCgroup&) = delete;
  CpuCgroup& operator=(const CpuCgroup&) = delete;
  // Kills every process still in the group, then removes both directories.
  ~CpuCgroup();

  // `argv` prefixed so that the started process joins the group before it
  // runs anything else (a shell writes itself into both groups, then execs
  // argv): every process it later starts is born inside.
  std::vector<std::string> entering(const std::vector<std::string>& argv) const;
  // The cpuacct counter this group's processes have used, in nanoseconds.
  const std::filesystem::path& usage_file() const { return usage_file_; }
  const std::filesystem::path& cpuset_dir() const { return cpuset_dir_; }
  const std::string& cores() const { return cores_; }

 private:
  CpuCgroup(std::filesystem::path cpuset_dir, std::filesystem::path cpuacct_dir, std::string cores);
  void remove();

  std::filesystem::path cpuset_dir_;
  std::filesystem::path cpuacct_dir_;
  std::filesystem::path usage_file_;
  std::string cores_;
};

// Reads a cpuacct.usage file: nanoseconds, or nullopt when unreadable.
std::optional<std::uint64_t> read_cgroup_usage_ns(const std::filesystem::path& usage_file);

// Removes the groups under <hierarchy>/kgym whose owner process has ended,
// killing what is left in them; returns how many it removed.
int sweep_stale_cgroups(const CgroupMounts& mounts);

}  // namespace kgym::util
