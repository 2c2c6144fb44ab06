#pragma once
// CPU core lists as Linux writes them ("0-3,5"), and the cores a process
// may run on. Knows nothing of kgym.
#include <optional>
#include <set>
#include <string>
#include <string_view>

namespace kgym::util {

// "0-3,5" -> {0,1,2,3,5}; nullopt when malformed.
std::optional<std::set<int>> parse_cpu_list(std::string_view text);

// {0,1,2,3,5} -> "0-3,5".
std::string format_cpu_list(const std::set<int>& cores);

// The cores this process may run on (its affinity).
std::set<int> allowed_cpus();

// Sets this process's affinity; false when the kernel refused.
bool set_allowed_cpus(const std::set<int>& cores);

}  // namespace kgym::util
