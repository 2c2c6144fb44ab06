// Reads and checks the `build:` section (docs/config.md "Build").
#include <string_view>

#include <fmt/format.h>

#include "core/config_sections.h"
#include "util/cpu_set.h"

namespace kgym::config_detail {
namespace {

constexpr std::string_view kBuildKeys[] = {"jobs", "cores", "timeout_sec", "precompiled_header"};

}  // namespace

void read_build(ConfigReader& reader, const Entry& at, BuildConfig& build) {
  Mapping fields = reader.mapping(at, kBuildKeys);
  if (auto entry = fields.get("jobs")) {
    if (auto jobs =
            reader.integer(*entry, 1, "set how many candidates build at once, at least 1, e.g. jobs: 2"))
      build.jobs = static_cast<int>(*jobs);
  }
  if (auto entry = fields.get("cores")) {
    constexpr std::string_view kFix = "give a CPU core list, e.g. cores: '4-7'";
    if (auto cores = reader.text(*entry, kFix)) {
      if (util::parse_cpu_list(*cores)) {
        build.cores = *cores;
      } else {
        reader.error(*entry, fmt::format("'{}' is not a CPU core list", *cores), kFix);
      }
    }
  }
  if (auto entry = fields.get("timeout_sec")) {
    if (auto seconds = reader.integer(
            *entry, 1, "set the seconds one candidate may take to build, e.g. timeout_sec: 900"))
      build.timeout = std::chrono::seconds(*seconds);
  }
  if (auto entry = fields.get("precompiled_header")) {
    if (auto on = reader.boolean(*entry)) build.precompiled_header = *on;
  }
}

}  // namespace kgym::config_detail
