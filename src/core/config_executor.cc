// Reads and checks the `executor:` section (docs/config.md "Executor",
// docs/cluster.md).
#include <cmath>
#include <regex>
#include <string_view>

#include <fmt/format.h>

#include "core/config_sections.h"
#include "util/fs.h"

namespace kgym::config_detail {
namespace {

constexpr std::string_view kExecutorKeys[] = {"kind", "slurm"};
constexpr std::string_view kKinds[] = {"local", "slurm"};
constexpr std::string_view kSlurmKeys[] = {"partition",     "account", "qos",        "gres_per_task",
                                           "cpus_per_task", "mem",     "time_limit", "max_parallel",
                                           "extra_args",    "setup",   "poll_sec"};
// sbatch options kgym writes itself: given again they would break the
// mapping from array task to case.
constexpr std::string_view kOwnOptions[] = {"--array", "-a",         "--output",   "-o",         "--error",
                                            "-e",      "--job-name", "-J",         "--parsable", "--wrap",
                                            "--chdir", "-D",         "--open-mode"};

std::optional<std::string> matching(ConfigReader& reader, const Entry& at, const std::regex& pattern,
                                    std::string_view what, std::string_view fix) {
  auto value = reader.text(at, fix);
  if (!value) return std::nullopt;
  if (!std::regex_match(*value, pattern)) {
    reader.error(at, fmt::format("'{}' is not {}", *value, what), fix);
    return std::nullopt;
  }
  return value;
}

// A list of strings; one string is taken as a one-item list.
std::vector<std::string> strings(ConfigReader& reader, const Entry& at, std::string_view fix) {
  std::vector<std::string> out;
  auto items = reader.list(at, true, fix);
  if (!items) return out;
  for (const Entry& item : *items) {
    if (auto text = reader.text(item, fix)) out.push_back(*text);
  }
  return out;
}

void read_slurm(ConfigReader& reader, const Entry& at, SlurmConfig& slurm) {
  Mapping fields = reader.mapping(at, kSlurmKeys);
  static const std::regex kName(R"([A-Za-z0-9_.,:+-]+)");
  for (auto [key, target] : {std::pair{"partition", &slurm.partition}, std::pair{"account", &slurm.account},
                             std::pair{"qos", &slurm.qos}}) {
    if (auto entry = fields.get(key)) {
      if (auto value = matching(reader, *entry, kName, "a Slurm name",
                                fmt::format("give the {} by name, e.g. {}: gpu", key, key)))
        *target = *value;
    }
  }
  if (auto entry = fields.get("gres_per_task")) {
    static const std::regex kGres(R"([A-Za-z0-9_]+(:[A-Za-z0-9_.-]+)*(,[A-Za-z0-9_]+(:[A-Za-z0-9_.-]+)*)*)");
    if (auto value = matching(reader, *entry, kGres, "a generic resource list",
                              "give TYPE[:MODEL]:COUNT, e.g. gres_per_task: 'gpu:1'"))
      slurm.gres_per_task = *value;
  }
  if (auto entry = fields.get("cpus_per_task")) {
    if (auto n = reader.integer(*entry, 1, "set the cores each task gets, at least 1, e.g. cpus_per_task: 8"))
      slurm.cpus_per_task = static_cast<int>(*n);
  }
  if (auto entry = fields.get("mem")) {
    static const std::regex kMem(R"([0-9]+[KMGT]?)");
    if (auto value =
            matching(reader, *entry, kMem, "a memory size", "give a size with its unit, e.g. mem: 32G"))
      slurm.mem = *value;
  }
  if (auto entry = fields.get("time_limit")) {
    static const std::regex kTime(R"(([0-9]+-)?[0-9]+(:[0-9]+){0,2}|INFINITE|UNLIMITED)");
    if (auto value = matching(reader, *entry, kTime, "a Slurm time limit",
                              "give [DAYS-]HOURS:MINUTES:SECONDS or MINUTES, e.g. time_limit: '02:00:00'"))
      slurm.time_limit = *value;
  }
  if (auto entry = fields.get("max_parallel")) {
    if (auto n =
            reader.integer(*entry, 1, "set how many tasks of the array run at once, e.g. max_parallel: 16"))
      slurm.max_parallel = static_cast<int>(*n);
  }
  if (auto entry = fields.get("extra_args")) {
    constexpr std::string_view kFix =
        "give sbatch options, one per item, e.g. extra_args: ['--constraint=a100']";
    for (std::string& arg : strings(reader, *entry, kFix)) {
      std::string option = arg.substr(0, arg.find('='));
      bool own = std::find(std::begin(kOwnOptions), std::end(kOwnOptions), option) != std::end(kOwnOptions);
      if (arg.empty() || arg[0] != '-') {
        reader.error(*entry, fmt::format("'{}' is not an sbatch option", arg), kFix);
      } else if (own) {
        reader.error(*entry, fmt::format("'{}' is set by kgym itself (it maps array tasks to cases)", option),
                     "remove it from executor.slurm.extra_args");
      } else {
        slurm.extra_args.push_back(std::move(arg));
      }
    }
  }
  if (auto entry = fields.get("setup")) {
    slurm.setup =
        strings(reader, *entry,
                "give shell lines run on the node before kgym, e.g. setup: ['module load cuda/12.4']");
  }
  if (auto entry = fields.get("poll_sec")) {
    if (auto seconds = reader.number(*entry, 0, true, "set seconds greater than 0, e.g. poll_sec: 10"))
      slurm.poll = std::chrono::milliseconds(std::max<long long>(1, std::llround(*seconds * 1000)));
  }
}

}  // namespace

void read_executor(ConfigReader& reader, const Entry& at, ExecutorConfig& executor) {
  Mapping fields = reader.mapping(at, kExecutorKeys);
  std::optional<Entry> kind_entry = fields.get("kind");
  if (kind_entry) {
    if (auto kind = reader.choice(*kind_entry, kKinds)) executor.kind = *kind;
  }
  auto slurm = fields.get("slurm");
  if (slurm && executor.kind != "slurm") {
    reader.error(*slurm, fmt::format("is set but executor.kind is {}", executor.kind),
                 "set executor.kind: slurm, or remove executor.slurm");
  }
  if (executor.kind != "slurm") return;
  if (slurm) read_slurm(reader, *slurm, executor.slurm);
  if (!util::find_executable("sbatch")) {
    reader.error(*kind_entry, "slurm needs sbatch, and sbatch is not on PATH",
                 "run kgym on the cluster's login node (where sbatch, squeue and scancel are), or set "
                 "executor.kind: local");
  }
}

}  // namespace kgym::config_detail
