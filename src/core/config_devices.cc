// Reads and checks `devices:`. A device is what one case leases
// exclusively while it is verified and timed, so devices never overlap.
#include <set>

#include <fmt/format.h>

#include "core/backend.h"
#include "core/config_sections.h"
#include "util/cpu_set.h"

namespace kgym::config_detail {

void read_devices(ConfigReader& reader, const Entry& at, const Backend& backend,
                  std::vector<std::string>& devices) {
  bool cpu = backend.devices_are_cores;
  std::string fix =
      cpu ? "list one CPU core set per device, e.g. devices: ['0-3', '4-7'], or devices: [all]"
          : fmt::format("list {} device indices, e.g. devices: [0, 1], or devices: [all]", backend.name);
  auto items = reader.list(at, true, fix);
  if (!items) return;
  if (items->empty()) {
    reader.error(at, "is empty", fix);
    return;
  }
  std::vector<std::string> result;
  std::set<int> used;
  bool ok = true;
  for (const Entry& item : *items) {
    if (!item.node.IsScalar()) {
      reader.error(item, fmt::format("expected a device, found {}", describe(item.node)), fix);
      ok = false;
      continue;
    }
    const std::string& text = item.node.Scalar();
    if (text == "all") {
      if (items->size() > 1) {
        reader.error(item, "'all' is listed with other devices", "use [all] alone or list the devices");
        ok = false;
      }
      result.push_back(text);
      continue;
    }
    std::optional<std::set<int>> ids;
    if (cpu) {
      ids = util::parse_cpu_list(text);
    } else if (text.find_first_of("-,") == std::string::npos) {
      ids = util::parse_cpu_list(text);  // a device index: one number
    }
    if (!ids) {
      reader.error(item, fmt::format("'{}' is not a {}", text, cpu ? "CPU core list" : "device index"), fix);
      ok = false;
      continue;
    }
    for (int id : *ids) {
      if (!used.insert(id).second) {
        reader.error(item,
                     fmt::format("{} {} is already part of another device", cpu ? "core" : "device", id),
                     "devices are leased exclusively; make them disjoint");
        ok = false;
        break;
      }
    }
    result.push_back(text);
  }
  if (ok) devices = std::move(result);
}

}  // namespace kgym::config_detail
