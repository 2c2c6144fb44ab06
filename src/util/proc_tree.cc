#include "util/proc_tree.h"

#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <filesystem>
#include <map>

#include "util/cpu_stat.h"
#include "util/fs.h"

namespace kgym::util {

std::optional<ProcStat> parse_proc_stat(std::string_view text) {
  // "pid (comm) state ppid pgrp session tty tpgid flags minflt cminflt
  //  majflt cmajflt utime stime cutime cstime ..."
  auto close = text.rfind(')');
  if (close == std::string_view::npos) return std::nullopt;
  ProcStat stat;
  auto [pid_end, pid_ec] = std::from_chars(text.data(), text.data() + text.size(), stat.pid);
  if (pid_ec != std::errc{}) return std::nullopt;
  std::vector<long long> fields;  // from ppid (field 4) on; tpgid may be -1
  std::size_t i = close + 1;
  int index = 3;  // the state letter is field 3
  while (i < text.size() && fields.size() < 14) {
    while (i < text.size() && text[i] == ' ') ++i;
    std::size_t end = text.find(' ', i);
    if (end == std::string_view::npos) end = text.size();
    if (index >= 4) {
      long long value = 0;
      auto [p, ec] = std::from_chars(text.data() + i, text.data() + end, value);
      if (ec != std::errc{}) return std::nullopt;
      fields.push_back(value);
    }
    ++index;
    i = end;
  }
  if (fields.size() < 14) return std::nullopt;
  stat.ppid = static_cast<pid_t>(fields[0]);
  // utime, stime, cutime, cstime are fields 14-17: offsets 10-13 from ppid.
  for (std::size_t f = 10; f < 14; ++f) stat.ticks += static_cast<std::uint64_t>(std::max(0LL, fields[f]));
  return stat;
}

std::vector<ProcStat> read_all_proc_stats() {
  std::vector<ProcStat> all;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator("/proc", ec)) {
    const std::string name = entry.path().filename().string();
    if (name.empty() || name[0] < '0' || name[0] > '9') continue;
    auto text = read_file(entry.path() / "stat");
    if (!text) continue;
    if (auto stat = parse_proc_stat(*text)) all.push_back(*stat);
  }
  return all;
}

std::vector<const ProcStat*> tree_of(const std::vector<ProcStat>& all, const std::vector<pid_t>& roots) {
  std::multimap<pid_t, const ProcStat*> children;
  std::map<pid_t, const ProcStat*> by_pid;
  for (const auto& stat : all) {
    children.emplace(stat.ppid, &stat);
    by_pid[stat.pid] = &stat;
  }
  std::vector<const ProcStat*> tree;
  std::vector<pid_t> pending;
  for (pid_t root : roots) {
    if (auto it = by_pid.find(root); it != by_pid.end()) {
      tree.push_back(it->second);
      pending.push_back(root);
    }
  }
  while (!pending.empty()) {
    pid_t parent = pending.back();
    pending.pop_back();
    auto [lo, hi] = children.equal_range(parent);
    for (auto it = lo; it != hi; ++it) {
      tree.push_back(it->second);
      pending.push_back(it->second->pid);
    }
  }
  return tree;
}

std::uint64_t tree_ticks(const std::vector<ProcStat>& all, const std::vector<pid_t>& roots) {
  std::uint64_t ticks = 0;
  for (const ProcStat* stat : tree_of(all, roots)) ticks += stat->ticks;
  return ticks;
}

std::vector<pid_t> tree_pids(const std::vector<pid_t>& roots) {
  const std::vector<ProcStat> all = read_all_proc_stats();  // tree_of points into it
  std::vector<pid_t> pids;
  for (const ProcStat* stat : tree_of(all, roots)) pids.push_back(stat->pid);
  return pids;
}

double tree_cpu_ns(const std::vector<pid_t>& roots) {
  return static_cast<double>(tree_ticks(read_all_proc_stats(), roots)) * 1e9 / cpu_ticks_per_second();
}

}  // namespace kgym::util
