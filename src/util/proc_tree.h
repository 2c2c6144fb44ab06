#pragma once
// CPU time of process trees as /proc shows them, for machines where no
// cpuacct cgroup can be had (util/cgroup.h): a process and every
// descendant alive at the time of reading, each counted with its reaped
// children. Clock-tick resolution (USER_HZ, usually 10 ms), and a process
// that left the tree (daemonized, or exited unreaped) is not counted.
// Knows nothing of kgym.
#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

namespace kgym::util {

struct ProcStat {
  pid_t pid = 0;
  pid_t ppid = 0;
  // utime + stime + cutime + cstime: all threads of the process, live and
  // exited, and the children it has reaped.
  std::uint64_t ticks = 0;
};

// Parses the text of /proc/<pid>/stat (the command name may hold spaces
// and parentheses); nullopt when malformed.
std::optional<ProcStat> parse_proc_stat(std::string_view text);

// Every process of the system now (those readable).
std::vector<ProcStat> read_all_proc_stats();

// `roots` and their descendants within `all` (roots not in `all` left out).
std::vector<const ProcStat*> tree_of(const std::vector<ProcStat>& all, const std::vector<pid_t>& roots);

// The summed ticks of `roots` and their descendants within `all`.
std::uint64_t tree_ticks(const std::vector<ProcStat>& all, const std::vector<pid_t>& roots);

// The pids of `roots` and their descendants alive now.
std::vector<pid_t> tree_pids(const std::vector<pid_t>& roots);

// tree_ticks over a fresh reading of /proc, in nanoseconds.
double tree_cpu_ns(const std::vector<pid_t>& roots);

}  // namespace kgym::util
