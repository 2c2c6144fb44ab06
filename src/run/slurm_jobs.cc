#include "run/slurm_jobs.h"

#include <algorithm>
#include <charconv>
#include <map>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "util/sha256.h"

namespace kgym::run {
namespace {

std::vector<std::string_view> split(std::string_view text, char sep) {
  std::vector<std::string_view> out;
  for (std::size_t start = 0;;) {
    std::size_t end = text.find(sep, start);
    out.push_back(text.substr(start, end == std::string_view::npos ? std::string_view::npos : end - start));
    if (end == std::string_view::npos) return out;
    start = end + 1;
  }
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t' || s.front() == '\r')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.remove_suffix(1);
  return s;
}

std::optional<int> number(std::string_view s) {
  int value = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), value);
  if (ec != std::errc() || end != s.data() + s.size() || s.empty()) return std::nullopt;
  return value;
}

// "CANCELLED by 0" -> "CANCELLED"; "COMPLETED+" -> "COMPLETED".
std::string base_state(std::string_view state) {
  state = trim(state);
  state = state.substr(0, state.find(' '));
  while (!state.empty() && state.back() == '+') state.remove_suffix(1);
  return std::string(state);
}

std::string node_of(std::string_view nodes) {
  nodes = trim(nodes);
  if (nodes == "(null)" || nodes == "None assigned" || nodes.starts_with("None")) return "";
  return std::string(nodes);
}

// The task part of an id or ArrayTaskId: "7", or a pending range "[3-5%2]"
// / "3-5%2" / "3,5".
void set_task(SlurmTask& task, std::string_view text) {
  if (!text.empty() && text.front() == '[') text.remove_prefix(1);
  if (!text.empty() && text.back() == ']') text.remove_suffix(1);
  if (auto n = number(text)) {
    task.task = *n;
  } else if (auto ids = parse_task_ids(text)) {
    task.pending_range = *ids;
  }
}

}  // namespace

std::vector<SlurmTask> parse_squeue(std::string_view text) {
  std::vector<SlurmTask> out;
  for (std::string_view line : split(text, '\n')) {
    if (trim(line).empty()) continue;
    auto fields = split(line, '|');
    if (fields.size() < 4) continue;
    SlurmTask task;
    task.array_job = std::string(trim(fields[0]));
    set_task(task, trim(fields[1]));
    task.state = base_state(fields[2]);
    task.node = node_of(fields[3]);
    if (fields.size() > 4) task.reason = std::string(trim(fields[4]));
    if (fields.size() > 5) task.job_name = std::string(trim(fields[5]));
    if (task.task >= 0 || !task.pending_range.empty()) out.push_back(std::move(task));
  }
  return out;
}

std::vector<SlurmTask> parse_sacct(std::string_view text) {
  std::vector<SlurmTask> out;
  for (std::string_view line : split(text, '\n')) {
    if (trim(line).empty()) continue;
    auto fields = split(line, '|');
    if (fields.size() < 2) continue;
    std::string_view id = trim(fields[0]);
    std::size_t underscore = id.find('_');
    if (underscore == std::string_view::npos || id.find('.') != std::string_view::npos) continue;
    SlurmTask task;
    task.array_job = std::string(id.substr(0, underscore));
    set_task(task, id.substr(underscore + 1));
    task.state = base_state(fields[1]);
    if (fields.size() > 2) task.node = node_of(fields[2]);
    if (fields.size() > 3) task.job_name = std::string(trim(fields[3]));
    if (task.task >= 0 || !task.pending_range.empty()) out.push_back(std::move(task));
  }
  return out;
}

std::vector<SlurmTask> parse_scontrol(std::string_view text) {
  std::vector<SlurmTask> out;
  for (std::string_view line : split(text, '\n')) {
    std::map<std::string, std::string, std::less<>> words;
    for (std::string_view word : split(trim(line), ' ')) {
      std::size_t eq = word.find('=');
      if (eq != std::string_view::npos && eq > 0)
        words.emplace(std::string(word.substr(0, eq)), std::string(word.substr(eq + 1)));
    }
    auto at = [&](std::string_view key) {
      auto it = words.find(key);
      return it == words.end() ? std::string() : it->second;
    };
    if (at("ArrayJobId").empty() || at("ArrayTaskId").empty()) continue;
    SlurmTask task;
    task.array_job = at("ArrayJobId");
    set_task(task, at("ArrayTaskId"));
    task.state = base_state(at("JobState"));
    task.node = node_of(at("NodeList"));
    task.reason = at("Reason");
    task.job_name = at("JobName");
    if (task.task >= 0 || !task.pending_range.empty()) out.push_back(std::move(task));
  }
  return out;
}

std::optional<int> parse_max_array_size(std::string_view text) {
  for (std::string_view line : split(text, '\n')) {
    std::size_t eq = line.find('=');
    if (eq == std::string_view::npos || trim(line.substr(0, eq)) != "MaxArraySize") continue;
    return number(trim(line.substr(eq + 1)));
  }
  return std::nullopt;
}

bool slurm_state_final(std::string_view state) {
  static constexpr std::string_view kFinal[] = {"COMPLETED",     "FAILED",       "NODE_FAIL", "TIMEOUT",
                                                "OUT_OF_MEMORY", "CANCELLED",    "BOOT_FAIL", "DEADLINE",
                                                "PREEMPTED",     "SPECIAL_EXIT", "REVOKED"};
  return std::find(std::begin(kFinal), std::end(kFinal), state) != std::end(kFinal);
}

Verdict verdict_of_lost_task(std::string_view state) {
  return state == "TIMEOUT" || state == "DEADLINE" ? Verdict::kTimeout : Verdict::kHarnessError;
}

std::string array_spec(std::vector<int> ids, int max_parallel) {
  std::sort(ids.begin(), ids.end());
  ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
  std::vector<std::string> parts;
  for (std::size_t i = 0; i < ids.size();) {
    std::size_t j = i;
    while (j + 1 < ids.size() && ids[j + 1] == ids[j] + 1) ++j;
    parts.push_back(j == i ? fmt::format("{}", ids[i]) : fmt::format("{}-{}", ids[i], ids[j]));
    i = j + 1;
  }
  std::string spec = fmt::format("{}", fmt::join(parts, ","));
  if (max_parallel > 0) spec += fmt::format("%{}", max_parallel);
  return spec;
}

std::optional<std::vector<int>> parse_task_ids(std::string_view spec) {
  spec = spec.substr(0, spec.find('%'));
  if (spec.empty()) return std::nullopt;
  std::vector<int> ids;
  for (std::string_view part : split(spec, ',')) {
    std::size_t dash = part.find('-');
    auto first = number(part.substr(0, dash));
    auto last = dash == std::string_view::npos ? first : number(part.substr(dash + 1));
    // A step ("0-15:4") or anything else is not a range kgym wrote.
    if (!first || !last || *last < *first || *last - *first > 10'000'000) return std::nullopt;
    for (int id = *first; id <= *last; ++id) ids.push_back(id);
  }
  return ids;
}

std::string run_tag(const std::string& run_dir) { return util::sha256_hex(run_dir).substr(0, 10); }

namespace {

std::string shell_quote(std::string_view s) {
  std::string out = "'";
  for (char c : s) {
    if (c == '\'')
      out += "'\\''";
    else
      out += c;
  }
  return out + "'";
}

}  // namespace

std::string batch_script(const SlurmConfig& slurm, const std::vector<std::string>& kgym_argv0,
                         const std::string& run_dir, int submission) {
  std::string script = "#!/bin/bash\n# kgym: one case-sample of a run per array task (docs/cluster.md)\n";
  for (const std::string& line : slurm.setup) script += line + "\n";
  script += "exec";
  for (const std::string& word : kgym_argv0) script += " " + shell_quote(word);
  script += fmt::format(" slurm-task --run-dir {} --submission {} --index \"$SLURM_ARRAY_TASK_ID\"\n",
                        shell_quote(run_dir), submission);
  return script;
}

std::vector<std::string> sbatch_args(const SlurmConfig& slurm, const Submission& submission) {
  std::vector<std::string> args{"--parsable",
                                "--job-name=" + submission.job_name,
                                "--array=" + array_spec(submission.ids, slurm.max_parallel),
                                "--output=" + submission.log_pattern,
                                "--open-mode=append",
                                "--ntasks=1"};
  if (!slurm.partition.empty()) args.push_back("--partition=" + slurm.partition);
  if (!slurm.account.empty()) args.push_back("--account=" + slurm.account);
  if (!slurm.qos.empty()) args.push_back("--qos=" + slurm.qos);
  if (!slurm.gres_per_task.empty()) args.push_back("--gres=" + slurm.gres_per_task);
  if (slurm.cpus_per_task > 0) args.push_back(fmt::format("--cpus-per-task={}", slurm.cpus_per_task));
  if (!slurm.mem.empty()) args.push_back("--mem=" + slurm.mem);
  if (!slurm.time_limit.empty()) args.push_back("--time=" + slurm.time_limit);
  args.insert(args.end(), slurm.extra_args.begin(), slurm.extra_args.end());
  args.push_back(submission.script);
  return args;
}

}  // namespace kgym::run
