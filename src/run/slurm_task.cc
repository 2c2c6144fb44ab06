#include "run/slurm_task.h"

#include <unistd.h>

#include <cstdlib>

#include <fmt/format.h>

#include "agent/agent.h"
#include "core/case_paths.h"
#include "run/campaign.h"
#include "run/campaign_setup.h"
#include "run/sample_flow.h"
#include "run/scheduler.h"
#include "run/state_store.h"
#include "util/cpu_set.h"
#include "util/fs.h"
#include "util/json_text.h"
#include "util/posix_process_runner.h"
#include "worker/probe.h"

namespace kgym::run {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

std::optional<std::string> getenv_text(const char* name) {
  const char* value = std::getenv(name);
  if (value == nullptr || *value == '\0') return std::nullopt;
  return std::string(value);
}

std::vector<std::string> split_commas(const std::string& text) {
  std::vector<std::string> out;
  for (std::size_t start = 0; start <= text.size();) {
    std::size_t end = text.find(',', start);
    if (end == std::string::npos) end = text.size();
    if (end > start) out.push_back(text.substr(start, end - start));
    start = end + 1;
  }
  return out;
}

// The record the coordinator falls back on where Slurm keeps none.
void write_exit_record(const CasePaths& paths, int exit_code, const std::string& note) {
  json record = {{"job", fmt::format("{}_{}", getenv_text("SLURM_ARRAY_JOB_ID").value_or("?"),
                                     getenv_text("SLURM_ARRAY_TASK_ID").value_or("?"))},
                 {"node", getenv_text("SLURMD_NODENAME").value_or("")},
                 {"exit_code", exit_code},
                 {"finished_at", util::unix_now()},
                 {"note", note}};
  if (util::make_dirs(paths.task_dir()))
    (void)util::write_file_atomic(paths.task_exit(), util::json_text(record, 2) + "\n");
}

}  // namespace

std::vector<std::string> granted_devices(const Backend& backend, const std::vector<std::string>& configured,
                                         const std::function<std::optional<std::string>(const char*)>& env) {
  if (backend.devices_are_cores) return {util::format_cpu_list(util::allowed_cpus())};
  for (std::string_view name : backend.granted_devices_env) {
    if (auto visible = env(std::string(name).c_str())) {
      std::vector<std::string> devices;
      for (std::size_t i = 0; i < split_commas(*visible).size(); ++i) devices.push_back(std::to_string(i));
      if (!devices.empty()) return devices;
    }
  }
  for (const char* name : {"SLURM_STEP_GPUS", "SLURM_JOB_GPUS"}) {
    if (auto gpus = env(name)) {
      auto devices = split_commas(*gpus);
      if (!devices.empty()) return devices;
    }
  }
  return configured;
}

int run_slurm_task(const SlurmTaskOptions& options, Printer& printer) {
  fs::path file =
      RunPaths{options.run_dir}.slurm_dir() / fmt::format("submission-{}.json", options.submission);
  auto text = util::read_file(file);
  json doc = text ? json::parse(*text, nullptr, false) : json();
  if (!doc.is_object() || !doc.contains("units") || !doc["units"].is_array() || options.index < 0 ||
      static_cast<std::size_t>(options.index) >= doc["units"].size()) {
    printer.error(
        fmt::format("kgym slurm-task: {} names no case-sample at index {}", file.string(), options.index));
    return 2;
  }
  const json& unit = doc["units"][options.index];
  std::string case_id = unit.value("case", "");
  int sample = unit.value("sample", 0);

  auto source = recorded_config_source(options.run_dir);
  if (!source) {
    printer.error(fmt::format("kgym slurm-task: {}", source.error()));
    return 2;
  }
  auto config = load_config(*source);
  if (!config) {
    printer.error(fmt::format("kgym slurm-task: the run's config: {}", config.error().message));
    return 1;
  }
  config->executor.kind = "local";
  config->concurrency = 1;
  // The node's own device decides execution: auto.
  auto pre = preflight(*config, /*check_backend=*/true);
  if (!pre) {
    printer.error(fmt::format("kgym slurm-task: {}", pre.error()));
    return 1;
  }
  config->verifier.execution = pre->execution;
  if (!pre->execution_note.empty()) printer.line(fmt::format("kgym slurm-task: {}", pre->execution_note));
  const Backend& backend = backend_of(config->verifier);
  config->devices = granted_devices(backend, config->devices, getenv_text);
  if (auto granted = getenv_text("SLURM_CPUS_PER_TASK"); granted && backend.devices_are_cores) {
    std::size_t cores = util::allowed_cpus().size();
    if (std::to_string(cores) != *granted && std::atoi(granted->c_str()) < static_cast<int>(cores)) {
      printer.error(fmt::format(
          "kgym slurm-task: warning: Slurm granted {} CPU(s) but this task may run on {} cores: the cluster "
          "does not bind tasks to cores (TaskPlugin=task/none), so tasks on one node share cores and their "
          "timings interfere; use task/affinity or task/cgroup (docs/cluster.md)",
          *granted, cores));
    }
  }
  auto chosen = std::ranges::find_if(pre->cases, [&](const Case& c) { return c.id() == case_id; });
  if (chosen == pre->cases.end()) {
    printer.error(fmt::format("kgym slurm-task: the run's selection has no case {}", case_id));
    return 2;
  }
  CasePaths case_paths = CasePaths::of(options.run_dir, chosen->level, chosen->stem());
  CasePaths paths = sample > 0 ? case_paths.sample(sample) : case_paths;
  printer.line(fmt::format("kgym slurm-task: {}{} on {} (devices [{}]), job {}_{}", case_id,
                           sample > 0 ? fmt::format(" sample {}", sample) : "",
                           getenv_text("SLURMD_NODENAME").value_or("this node"),
                           fmt::join(config->devices, ", "), getenv_text("SLURM_ARRAY_JOB_ID").value_or("?"),
                           getenv_text("SLURM_ARRAY_TASK_ID").value_or("?")));
  // A requeued task whose first run already wrote the result counts once.
  if (load_result(paths, case_id)) {
    write_exit_record(paths, 0, "the result was already there");
    return 0;
  }
  if (auto ok = util::make_dirs(paths.task_dir()); !ok) {
    printer.error(fmt::format("kgym slurm-task: {}", ok.error()));
    return 1;
  }
  fs::path worker = paths.task_dir() / "kgym_worker.py";
  fs::remove(worker);
  if (auto ok = worker::write_worker_script(worker); !ok) {
    printer.error(fmt::format("kgym slurm-task: {}", ok.error()));
    return 1;
  }
  auto run = util::read_file(RunPaths{options.run_dir}.run_record());
  json record = run ? json::parse(*run, nullptr, false) : json();
  std::uint64_t seed = record.is_object() ? record.value("run_seed", std::uint64_t{0}) : 0;

  util::SteadyClock clock;
  util::PosixProcessRunner runner(clock);
  auto agent = agent::make_agent(config->agent);
  SchedulerOptions sched =
      scheduler_options(*config, *pre, options.run_dir, seed, options.kgym_argv0, worker, printer);
  sched.interrupt_fd = options.interrupt_fd;
  if (sample > 0) sched.only_sample = sample;
  StateStore store(options.run_dir, paths.task_dir());
  store.state().harness_pid = static_cast<int>(::getpid());
  store.state().started_at = util::unix_now();
  store.state().devices = config->devices;
  Scheduler scheduler(*config, sched, {*chosen}, runner, clock, *agent, printer, store);
  RunOutcome outcome = scheduler.run();
  bool has_result = load_result(paths, case_id).has_value();
  int code = has_result ? 0 : 1;
  write_exit_record(paths, code, outcome.interrupted ? "interrupted" : "");
  return code;
}

}  // namespace kgym::run
