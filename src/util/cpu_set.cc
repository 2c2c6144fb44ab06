#include "util/cpu_set.h"

#include <sched.h>

#include <charconv>
#include <thread>

#include <fmt/format.h>

namespace kgym::util {
namespace {

std::optional<int> parse_index(std::string_view text) {
  int value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size() || value < 0) return std::nullopt;
  return value;
}

}  // namespace

std::optional<std::set<int>> parse_cpu_list(std::string_view text) {
  std::set<int> cores;
  while (true) {
    size_t comma = text.find(',');
    std::string_view part = text.substr(0, comma);
    size_t dash = part.find('-');
    auto first = parse_index(part.substr(0, dash));
    auto last = dash == std::string_view::npos ? first : parse_index(part.substr(dash + 1));
    if (!first || !last || *first > *last) return std::nullopt;
    for (int core = *first; core <= *last; ++core) cores.insert(core);
    if (comma == std::string_view::npos) return cores;
    text.remove_prefix(comma + 1);
  }
}

std::string format_cpu_list(const std::set<int>& cores) {
  std::string out;
  for (auto it = cores.begin(); it != cores.end();) {
    int first = *it, last = *it;
    for (++it; it != cores.end() && *it == last + 1; ++it) last = *it;
    if (!out.empty()) out += ',';
    out += first == last ? fmt::format("{}", first) : fmt::format("{}-{}", first, last);
  }
  return out;
}

std::set<int> allowed_cpus() {
  std::set<int> cores;
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) == 0) {
    for (int core = 0; core < CPU_SETSIZE; ++core) {
      if (CPU_ISSET(core, &set)) cores.insert(core);
    }
  }
  if (cores.empty()) {
    for (unsigned core = 0; core < std::max(1u, std::thread::hardware_concurrency()); ++core)
      cores.insert(static_cast<int>(core));
  }
  return cores;
}

bool set_allowed_cpus(const std::set<int>& cores) {
  cpu_set_t set;
  CPU_ZERO(&set);
  for (int core : cores) {
    if (core >= 0 && core < CPU_SETSIZE) CPU_SET(core, &set);
  }
  return sched_setaffinity(0, sizeof set, &set) == 0;
}

}  // namespace kgym::util
