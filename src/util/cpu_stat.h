#pragma once
// Per-core CPU time as the kernel counts it (/proc/stat), for telling how
// busy a set of cores was between two readings. Knows nothing of kgym.
#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

namespace kgym::util {

// Cumulative ticks (USER_HZ) of one core since boot.
struct CoreTicks {
  std::uint64_t busy = 0;   // user, nice, system, irq, softirq, steal
  std::uint64_t total = 0;  // busy plus idle and iowait
};

// One reading of every core, indexed by core number. A core that was
// offline at the time of reading has no entry (nullopt).
struct CpuStat {
  std::vector<std::optional<CoreTicks>> cores;
};

// Parses the text of /proc/stat; nullopt when no "cpuN" line is found.
std::optional<CpuStat> parse_cpu_stat(std::string_view text);

// Reads /proc/stat now; nullopt where it cannot be read (not Linux).
std::optional<CpuStat> read_cpu_stat();

// Ticks per second of /proc/stat's counters (USER_HZ).
double cpu_ticks_per_second();

// Busy seconds and elapsed core-seconds of the listed cores between two
// readings (empty list = every core present in both). Cores missing from
// either reading are left out.
struct CoreUsage {
  double busy_s = 0;
  double total_s = 0;
  int cores = 0;
};
CoreUsage usage_between(const CpuStat& before, const CpuStat& after, const std::vector<int>& cores,
                        double ticks_per_second);

// CPU time (user + system, all threads) this process has used, in seconds.
double own_cpu_seconds();

}  // namespace kgym::util
