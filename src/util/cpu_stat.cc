#include "util/cpu_stat.h"

#include <sys/resource.h>
#include <unistd.h>

#include <charconv>
#include <string>

#include "util/fs.h"

namespace kgym::util {
namespace {

// The whitespace-separated unsigned numbers of one line, in order.
std::vector<std::uint64_t> numbers(std::string_view line) {
  std::vector<std::uint64_t> out;
  std::size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && line[i] == ' ') ++i;
    std::uint64_t value = 0;
    auto [end, ec] = std::from_chars(line.data() + i, line.data() + line.size(), value);
    if (ec != std::errc{}) break;
    out.push_back(value);
    i = static_cast<std::size_t>(end - line.data());
  }
  return out;
}

}  // namespace

std::optional<CpuStat> parse_cpu_stat(std::string_view text) {
  CpuStat stat;
  bool any = false;
  while (!text.empty()) {
    auto eol = text.find('\n');
    std::string_view line = text.substr(0, eol);
    text = eol == std::string_view::npos ? std::string_view{} : text.substr(eol + 1);
    // "cpu3 user nice system idle iowait irq softirq steal guest guest_nice";
    // the aggregate "cpu " line has no number and is skipped.
    if (line.size() < 4 || line.substr(0, 3) != "cpu" || line[3] < '0' || line[3] > '9') continue;
    int core = 0;
    auto [end, ec] = std::from_chars(line.data() + 3, line.data() + line.size(), core);
    if (ec != std::errc{} || core < 0) continue;
    auto v = numbers(line.substr(static_cast<std::size_t>(end - line.data())));
    if (v.size() < 4) continue;
    auto at = [&](std::size_t i) { return i < v.size() ? v[i] : 0; };
    CoreTicks ticks;
    ticks.busy = at(0) + at(1) + at(2) + at(5) + at(6) + at(7);
    ticks.total = ticks.busy + at(3) + at(4);
    if (stat.cores.size() <= static_cast<std::size_t>(core))
      stat.cores.resize(static_cast<std::size_t>(core) + 1);
    stat.cores[static_cast<std::size_t>(core)] = ticks;
    any = true;
  }
  if (!any) return std::nullopt;
  return stat;
}

std::optional<CpuStat> read_cpu_stat() {
  auto text = read_file("/proc/stat");
  if (!text) return std::nullopt;
  return parse_cpu_stat(*text);
}

double cpu_ticks_per_second() {
  long hz = sysconf(_SC_CLK_TCK);
  return hz > 0 ? static_cast<double>(hz) : 100.0;
}

CoreUsage usage_between(const CpuStat& before, const CpuStat& after, const std::vector<int>& cores,
                        double ticks_per_second) {
  CoreUsage usage;
  auto add = [&](std::size_t core) {
    if (core >= before.cores.size() || core >= after.cores.size()) return;
    const auto& a = before.cores[core];
    const auto& b = after.cores[core];
    if (!a || !b || b->total < a->total || b->busy < a->busy) return;
    usage.busy_s += static_cast<double>(b->busy - a->busy) / ticks_per_second;
    usage.total_s += static_cast<double>(b->total - a->total) / ticks_per_second;
    ++usage.cores;
  };
  if (cores.empty()) {
    for (std::size_t core = 0; core < before.cores.size(); ++core) add(core);
  } else {
    for (int core : cores) {
      if (core >= 0) add(static_cast<std::size_t>(core));
    }
  }
  return usage;
}

double own_cpu_seconds() {
  rusage self{};
  if (getrusage(RUSAGE_SELF, &self) != 0) return 0;
  auto seconds = [](const timeval& t) { return static_cast<double>(t.tv_sec) + t.tv_usec / 1e6; };
  return seconds(self.ru_utime) + seconds(self.ru_stime);
}

}  // namespace kgym::util
