// Reads and checks the `sandbox:` section.
#include <string_view>

#include "core/config_sections.h"

namespace kgym::config_detail {
namespace {

constexpr std::string_view kSandboxKeys[] = {"mode", "drop_privileges", "agent_read_only", "agent_writable",
                                             "limits"};
constexpr std::string_view kLimitKeys[] = {"address_space_mb", "cpu_sec", "file_size_mb", "processes"};
constexpr std::string_view kSandboxModes[] = {"auto", "bwrap", "unshare", "none"};

void read_paths(ConfigReader& reader, const Entry& at, std::vector<std::filesystem::path>& out) {
  constexpr std::string_view kFix = "list absolute or config-relative paths, e.g. [~/.config/my-agent]";
  auto items = reader.list(at, true, kFix);
  if (!items) return;
  for (const Entry& item : *items) {
    if (auto path = reader.path(item, kFix)) out.push_back(*path);
  }
}

void read_limits(ConfigReader& reader, const Entry& at, SandboxConfig& sandbox) {
  Mapping limits = reader.mapping(at, kLimitKeys);
  auto limit = [&](std::string_view key, long long& value, std::string_view fix) {
    if (auto entry = limits.get(std::string(key))) {
      if (auto read = reader.integer(*entry, 0, fix)) value = *read;
    }
  };
  limit("address_space_mb", sandbox.address_space_mb,
        "set megabytes of address space per candidate process, 0 for no limit, e.g. address_space_mb: 16384");
  limit("cpu_sec", sandbox.cpu_sec,
        "set CPU seconds per candidate process, 0 for no limit, e.g. cpu_sec: 3600");
  limit("file_size_mb", sandbox.file_size_mb,
        "set the largest file a candidate may write in megabytes, 0 for no limit, e.g. file_size_mb: 1024");
  limit("processes", sandbox.processes,
        "set how many processes/threads the candidate's user may have, 0 for no limit, e.g. processes: 512");
}

}  // namespace

void read_sandbox(ConfigReader& reader, const Entry& at, SandboxConfig& sandbox) {
  Mapping fields = reader.mapping(at, kSandboxKeys);
  if (auto entry = fields.get("mode")) {
    if (auto mode = reader.choice(*entry, kSandboxModes)) sandbox.mode = *mode;
  }
  if (auto entry = fields.get("drop_privileges")) {
    if (auto drop = reader.boolean(*entry)) sandbox.drop_privileges = *drop;
  }
  if (auto entry = fields.get("agent_read_only")) read_paths(reader, *entry, sandbox.agent_read_only);
  if (auto entry = fields.get("agent_writable")) read_paths(reader, *entry, sandbox.agent_writable);
  if (auto entry = fields.get("limits")) read_limits(reader, *entry, sandbox);
}

}  // namespace kgym::config_detail
