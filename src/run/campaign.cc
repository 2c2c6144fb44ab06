#include "run/campaign.h"

#include <unistd.h>

#include <random>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "agent/agent.h"
#include "core/backend.h"
#include "core/case_paths.h"
#include "core/case_set.h"
#include "core/config_record.h"
#include "core/record_files.h"
#include "report/load_results.h"
#include "report/summary.h"
#include "run/campaign_setup.h"
#include "run/machine_info.h"
#include "run/resume_check.h"
#include "run/scheduler.h"
#include "run/slurm_coordinator.h"
#include "run/state_store.h"
#include "util/clock.h"
#include "util/file_lock.h"
#include "util/fs.h"
#include "util/json_text.h"
#include "util/posix_process_runner.h"
#include "util/sandbox.h"
#include "verify/roofline.h"
#include "worker/candidate_sandbox.h"
#include "worker/child_process.h"
#include "worker/compile_cache.h"
#include "worker/probe.h"
#include "worker/python_env.h"

namespace kgym::run {
namespace {

std::string timestamp_name() {
  std::string iso = util::iso8601_utc(util::unix_now());  // 2026-11-29T18:15:46Z
  std::string name;
  for (char ch : iso) {
    if (ch != '-' && ch != ':' && ch != 'Z') name += ch == 'T' ? '-' : ch;
  }
  return name;  // 20261129-181546
}

std::uint64_t fresh_seed() {
  std::random_device rd;
  return (static_cast<std::uint64_t>(rd()) << 32) ^ rd();
}

struct RunRecord {
  std::filesystem::path dir;
  std::uint64_t seed = 0;
  double started_at = 0;
  nlohmann::json machine;  // as found at the start
  // RUN_DIR/.kgym/lock, held for the whole run: taken before run.json is
  // rewritten, so a second run refused on the lock has changed nothing.
  std::optional<util::FileLock> lock;
};

// Creates (or, for --resume, reopens) the run directory and writes run.json.
std::expected<RunRecord, std::string> open_run_dir(const Config& config, const CampaignOptions& options,
                                                   const std::vector<Case>& cases,
                                                   const worker::PythonEnv& env) {
  const std::string& torch_version = env.torch_version;
  RunRecord record;
  record.started_at = util::unix_now();
  nlohmann::json previous;
  if (options.resume_dir) {
    record.dir = std::filesystem::absolute(*options.resume_dir);
    auto recorded = read_run_record(record.dir);
    if (!recorded) return std::unexpected(recorded.error());
    previous = std::move(*recorded);
    record.seed = previous.value("run_seed", std::uint64_t{0});
    if (previous.contains("config")) {
      auto differences = config_differences(previous["config"], config_record(config));
      if (!differences.empty() && !options.force) {
        return std::unexpected(fmt::format(
            "the configuration differs from the one recorded in {}/run.json:\n  {}\nresume with the "
            "recorded configuration (drop the --set/--config that changed it), or add --force to resume "
            "with this one (unfinished cases are then regenerated)",
            record.dir.string(), fmt::join(differences, "\n  ")));
      }
    }
  } else {
    record.dir = config.output_root / config.run_name.value_or(timestamp_name());
    if (std::filesystem::exists(RunPaths{record.dir}.run_record())) {
      return std::unexpected(
          fmt::format("run directory {} already holds a run; resume it with --resume {} or choose "
                      "another output.run_name",
                      record.dir.string(), record.dir.string()));
    }
    record.seed = fresh_seed();
  }
  if (auto ok = util::make_dirs(record.dir / ".kgym"); !ok) return std::unexpected(ok.error());
  auto lock = util::FileLock::acquire(record.dir / ".kgym" / "lock");
  if (!lock) return std::unexpected(lock.error());
  record.lock = std::move(*lock);
  nlohmann::json run;
  run["schema_version"] = kRunRecordSchemaVersion;
  run["run_dir"] = record.dir.string();
  run["started_at"] =
      previous.is_object() ? previous.value("started_at", record.started_at) : record.started_at;
  if (previous.is_object()) run["resumed_at"] = record.started_at;
  run["config_path"] = config.source.string();
  run["config_file"] = options.source.file
                           ? nlohmann::json(std::filesystem::absolute(*options.source.file).string())
                           : nlohmann::json(nullptr);
  run["sets"] = options.source.sets;
  run["overrides"] = options.source.overrides;
  run["run_seed"] = record.seed;
  run["config"] = config_record(config);
  if (options.force) run["forced_at"] = record.started_at;
  run["backend"] = config.verifier.backend;
  run["mode"] = config.verifier.mode;
  run["python"] = env.python;
  run["torch_version"] = torch_version;
  run["torch_build"] = env.torch_build;
  record.machine = machine_info(config, torch_version);
  run["machine"] = record.machine;
  // The roofs of each device the timing runs on (docs/roofline.md): a cpu
  // device's cores, measured once per machine and core set, then cached.
  // Not under Slurm: this is the login node, not the nodes the cases run on.
  const Backend& backend = backend_of(config.verifier);
  if (backend.devices_are_cores && backend.measures_speed && !backend.host_interpreter() &&
      config.verifier.mode == "performance" && config.executor.kind == "local") {
    nlohmann::json roofs = nlohmann::json::array();
    for (const std::string& device : config.devices) {
      auto measured = verify::cpu_device_roofs(device, worker::kgym_cache_root(), false);
      roofs.push_back(measured ? verify::roofs_json(*measured)
                               : nlohmann::json{{"device", device}, {"missing", measured.error()}});
    }
    run["roofs"] = std::move(roofs);
  }
  std::vector<std::string> ids;
  for (const Case& c : cases) ids.push_back(c.id());
  run["cases"] = ids;
  if (auto ok = util::write_file_atomic(RunPaths{record.dir}.run_record(), util::json_text(run, 2) + "\n");
      !ok) {
    return std::unexpected(ok.error());
  }
  return record;
}

// The first line `<binary> --version` prints, for provenance; nullopt when
// it does not answer within 30 s or fails.
std::optional<std::string> agent_version(const std::string& binary) {
  auto run =
      worker::run_captured({binary, "--version"}, worker::Clock::now() + std::chrono::seconds(30), 4096);
  if (!run || run->exit.signaled || run->exit.code != 0) return std::nullopt;
  std::string out = run->output;
  std::size_t start = out.find_first_not_of(" \t\r\n");
  if (start == std::string::npos) return std::nullopt;
  std::size_t end = out.find_first_of("\r\n", start);
  return out.substr(start, end == std::string::npos ? std::string::npos : end - start);
}

report::RunInfo run_info(const Config& config, const RunRecord& record, const std::vector<Case>& cases,
                         bool interrupted) {
  report::RunInfo info;
  info.run_dir = record.dir.string();
  info.started_at_iso = util::iso8601_utc(record.started_at);
  info.finished_at_iso = util::iso8601_utc(util::unix_now());
  info.config_path = config.source.string();
  info.backend = config.verifier.backend;
  info.mode = config.verifier.mode;
  info.status = interrupted ? "interrupted" : "finished";
  for (const Case& c : cases) info.selected_case_ids.push_back(c.id());
  info.machine = record.machine;
  info.machine["load_average_start"] = record.machine.value("load_average", nlohmann::json(nullptr));
  info.machine["load_average_end"] = load_average();
  info.machine.erase("load_average");
  return info;
}

// What the agent must not see: the dataset (with any stored solutions), the
// runs (its own case dir holds the verifier's files), the replay solutions
// and the kgym tree and binary (the harness and its tests).
std::vector<std::filesystem::path> hidden_from_agent(const Config& config,
                                                     const std::vector<std::string>& kgym_argv0) {
  std::vector<std::filesystem::path> hidden{config.bench_dir, config.output_root};
  if (!config.agent.replay_dir.empty()) hidden.push_back(config.agent.replay_dir);
  hidden.push_back(bundled_default_config().parent_path().parent_path());
  if (!kgym_argv0.empty()) {
    std::error_code ec;
    auto binary = std::filesystem::canonical(kgym_argv0.front(), ec);
    if (!ec) hidden.push_back(binary.parent_path());
  }
  // Other candidates' builds and compiler caches (docs/build.md).
  hidden.push_back(worker::build_cache_root());
  hidden.push_back(worker::ccache_cache_root());
  return hidden;
}

std::string limits_line(const SandboxConfig& s) {
  auto value = [](long long v, std::string_view unit) {
    return v > 0 ? fmt::format("{}{}", v, unit) : std::string("unlimited");
  };
  return fmt::format("; candidate limits: address space {}, CPU {}, file size {}, processes {}",
                     value(s.address_space_mb, " MB"), value(s.cpu_sec, " s"), value(s.file_size_mb, " MB"),
                     value(s.processes, ""));
}

}  // namespace

std::expected<ConfigSource, std::string> recorded_config_source(const std::filesystem::path& run_dir) {
  auto recorded = read_run_record(run_dir);
  if (!recorded) return std::unexpected(recorded.error());
  const nlohmann::json& run = *recorded;
  ConfigSource source;
  if (run.contains("config_file") && run["config_file"].is_string())
    source.file = run["config_file"].get<std::string>();
  source.sets = run.value("sets", std::vector<std::string>{});
  source.overrides = run.value("overrides", std::vector<std::string>{});
  return source;
}

std::expected<Preflight, std::string> preflight(const Config& config, bool check_backend) {
  Preflight out;
  auto cases = select_cases(config.bench_dir, config.level, config.cases);
  if (!cases)
    return std::unexpected(fmt::format("{}: key 'cases': {}", config.source.string(), cases.error().message));
  if (cases->empty()) {
    return std::unexpected(fmt::format("{}: the selection '{}' matches no case in {}", config.source.string(),
                                       config.cases, config.bench_dir.string()));
  }
  out.cases = std::move(*cases);
  auto python = worker::resolve_python(config.verifier.python);
  if (!python) return std::unexpected(python.error());
  out.python = std::move(*python);
  // A backend the interpreter cannot use would fail every case after its
  // agent ran; say so before any work. (On a cluster the login node may
  // have no device: the task checks on its node.)
  out.execution = config.verifier.execution;
  if (check_backend) {
    auto resolved = worker::resolve_execution(out.python.python, config.verifier);
    if (!resolved)
      return std::unexpected(
          fmt::format("{}: key 'verifier.backend': {}", config.source.string(), resolved.error()));
    out.execution = resolved->execution;
    out.execution_note = resolved->note;
  }
  auto sandbox = util::resolve_sandbox_mode(config.sandbox.mode);
  if (!sandbox)
    return std::unexpected(
        fmt::format("{}: key 'sandbox.mode': {}", config.source.string(), sandbox.error()));
  out.sandbox = *sandbox;
  if (auto reachable = worker::check_interpreter_reachable(config.sandbox, *sandbox, out.python.python);
      !reachable) {
    return std::unexpected(
        fmt::format("{}: key 'verifier.python': {}", config.source.string(), reachable.error()));
  }
  // Without bubblewrap the boxes see the host's directories as they are: as
  // an unprivileged uid they must be able to reach the run's.
  if (auto uid = util::box_uid(config.sandbox.drop_privileges, *sandbox);
      uid && *sandbox == util::SandboxMode::kUnshare) {
    if (auto blocked = util::unreachable_for(*uid, config.output_root)) {
      return std::unexpected(fmt::format(
          "{}: key 'output.root_dir': bubblewrap cannot run here, so the boxes (sandbox: unshare) run as uid "
          "{} "
          "and see the host's directories, and uid {} cannot enter {}; choose a root_dir others may enter "
          "(e.g. --set output.root_dir=/var/tmp/kgym-runs), make {} searchable (chmod o+x), or install "
          "bubblewrap where its namespaces are allowed",
          config.source.string(), *uid, *uid, blocked->string(), blocked->string()));
    }
  }
  return out;
}

SchedulerOptions scheduler_options(const Config& config, const Preflight& pre,
                                   const std::filesystem::path& run_dir, std::uint64_t run_seed,
                                   const std::vector<std::string>& kgym_argv0,
                                   const std::filesystem::path& worker, Printer& printer) {
  SchedulerOptions sched;
  sched.run_dir = run_dir;
  sched.kgym_argv0 = kgym_argv0;
  sched.worker_script = worker;
  sched.pch_root = worker::kgym_cache_root() / "pch";
  if (config.build.precompiled_header) {
    auto found = verify::precompiled_headers(pre.python.python, worker, sched.pch_root, {},
                                             std::chrono::steady_clock::now() + std::chrono::seconds(120));
    if (found) sched.pch_dir = found->dir;
    if (!found)
      printer.error(fmt::format("kgym: warning: no precompiled header for the builds: {}", found.error()));
  }
  sched.python = pre.python.python;
  sched.torch_version = pre.python.torch_version;
  sched.torch_build = pre.python.torch_build;
  sched.run_seed = run_seed;
  sched.sandbox_mode = pre.sandbox;
  sched.candidate_hidden = {config.bench_dir, config.output_root, run_dir};
  sched.agent_hidden = hidden_from_agent(config, kgym_argv0);
  return sched;
}

namespace {

// executor.kind local: this machine's scheduler runs every case.
RunOutcome run_local(const Config& config, const CampaignOptions& options, const Preflight& pre,
                     const RunRecord& record, const std::filesystem::path& worker, StateStore& store,
                     Printer& printer) {
  util::SteadyClock clock;
  util::PosixProcessRunner runner(clock);
  auto agent = agent::make_agent(config.agent);
  SchedulerOptions sched =
      scheduler_options(config, pre, record.dir, record.seed, options.kgym_argv0, worker, printer);
  sched.interrupt_fd = options.interrupt_fd;
  if (auto binary = agent->binary()) {
    sched.agent_version = agent_version(*binary);
    printer.line(fmt::format("  agent:   {} ({})", *binary, sched.agent_version.value_or("version unknown")));
  }
  sched.regenerate = options.force;
  std::unique_ptr<worker::WarmPool> warm_pool;
  if (worker::warm_workers_enabled(config.verifier)) {
    auto pool = worker::WarmPool::create({.python = pre.python.python,
                                          .backend = config.verifier.backend,
                                          .sandbox = config.sandbox,
                                          .sandbox_mode = pre.sandbox,
                                          .hidden = sched.candidate_hidden,
                                          .log_dir = record.dir / ".kgym",
                                          .devices = config.devices});
    if (pool) {
      warm_pool = std::move(*pool);
      sched.warm_pool = warm_pool.get();
      // Start every device's zygotes now: torch imports while the first
      // cases probe and generate.
      for (std::size_t device = 0; device < config.devices.size(); ++device)
        (void)warm_pool->endpoints(device);
    } else {
      printer.error(fmt::format("kgym: warning: no warm workers ({}); every case starts its workers cold",
                                pool.error()));
    }
  }
  Scheduler scheduler(config, sched, pre.cases, runner, clock, *agent, printer, store);
  return scheduler.run();
}

// executor.kind slurm: every case-sample a task of a job array.
RunOutcome run_slurm(const Config& config, const CampaignOptions& options, const Preflight& pre,
                     const RunRecord& record, StateStore& store, Printer& printer) {
  auto client = command_slurm_client();
  CoordinatorOptions coordinator;
  coordinator.run_dir = record.dir;
  coordinator.kgym_argv0 = options.kgym_argv0;
  coordinator.interrupt_fd = options.interrupt_fd;
  if (options.force) {
    // A forced resume regenerates every unfinished case-sample: its tasks
    // start from scratch (docs/cluster.md).
    printer.line("  --force: unfinished case-samples are generated again on their nodes");
  }
  SlurmCoordinator slurm(config, coordinator, pre.cases, *client, printer, store);
  return slurm.run();
}

}  // namespace

CampaignStatus run_campaign(const Config& given, const CampaignOptions& options, Printer& printer) {
  bool on_cluster = given.executor.kind == "slurm";
  auto pre = preflight(given, /*check_backend=*/!on_cluster);
  if (!pre) {
    printer.error(fmt::format("kgym: {}", pre.error()));
    return CampaignStatus::kUsageError;
  }
  // The run goes on with verifier.execution resolved (execution: auto).
  Config config = given;
  config.verifier.execution = pre->execution;
  if (!pre->execution_note.empty()) printer.line(fmt::format("kgym run: {}", pre->execution_note));
  if (auto ok = util::make_dirs(config.output_root); !ok) {
    printer.error(fmt::format("kgym: key 'output.root_dir': {}", ok.error()));
    return CampaignStatus::kUsageError;
  }
  // A resume refuses before any work (run.json is not even rewritten) when
  // a record it would trust cannot be read.
  if (options.resume_dir) {
    if (auto ok = check_resumable(std::filesystem::absolute(*options.resume_dir), pre->cases, config.samples);
        !ok) {
      printer.error(fmt::format("kgym: {}", ok.error()));
      return CampaignStatus::kUsageError;
    }
  }
  auto record = open_run_dir(config, options, pre->cases, pre->python);
  if (!record) {
    printer.error(fmt::format("kgym: {}", record.error()));
    return CampaignStatus::kUsageError;
  }
  // A kill can cut the last append to events.jsonl short: the torn line is
  // dropped so that every line parses (docs/robustness.md).
  if (auto dropped = util::drop_torn_last_line(RunPaths{record->dir}.events()); !dropped) {
    printer.error(fmt::format("kgym: {}", dropped.error()));
    return CampaignStatus::kUsageError;
  } else if (*dropped > 0) {
    printer.line(
        fmt::format("kgym run: dropped the torn last line of {} ({} bytes an interrupted write left)",
                    RunPaths{record->dir}.events().string(), *dropped));
  }
  std::filesystem::path worker = record->dir / ".kgym" / "kgym_worker.py";
  std::filesystem::remove(worker);
  if (auto ok = worker::write_worker_script(worker); !ok) {
    printer.error(fmt::format("kgym: {}", ok.error()));
    return CampaignStatus::kUsageError;
  }

  printer.line(fmt::format("kgym run: {} case(s), backend {}, mode {}, agent {}, {}", pre->cases.size(),
                           config.verifier.backend, config.verifier.mode, config.agent.kind,
                           on_cluster ? std::string("executor slurm")
                                      : fmt::format("concurrency {}, devices [{}]", config.concurrency,
                                                    fmt::join(config.devices, ", "))));
  printer.line(fmt::format("  python:  {} (torch {}, {})", pre->python.python, pre->python.torch_version,
                           pre->python.torch_build.empty() ? "build unknown" : pre->python.torch_build));
  printer.line(fmt::format("  run dir: {}", record->dir.string()));
  printer.line(fmt::format("  monitor: kgym monitor {}", record->dir.string()));
  auto uid = util::box_uid(config.sandbox.drop_privileges, pre->sandbox);
  printer.line(fmt::format("  isolation: agent {} (its command gates the same, no network); candidate {}{}",
                           util::describe_sandbox(pre->sandbox, config.agent.network, uid),
                           util::describe_sandbox(pre->sandbox, false, uid), limits_line(config.sandbox)));

  StateStore store(record->dir);
  store.state().harness_pid = static_cast<int>(::getpid());
  store.state().started_at = record->started_at;
  store.state().monitor_poll_sec = std::chrono::duration<double>(config.monitor_poll).count();
  if (!on_cluster) store.state().devices = config.devices;  // the pool the scheduler leases from
  RunOutcome outcome = on_cluster ? run_slurm(config, options, *pre, *record, store, printer)
                                  : run_local(config, options, *pre, *record, worker, store, printer);
  printer.end_progress();

  auto summary = report::write_summary(record->dir, outcome.results,
                                       run_info(config, *record, pre->cases, outcome.interrupted));
  if (!summary) {
    printer.error(
        fmt::format("kgym: cannot write the summary: {}; the results are kept: once there is space, "
                    "`kgym report {}` writes it",
                    summary.error(), record->dir.string()));
  } else {
    printer.line("");
    printer.line(report::summary_table(*summary, 110));
    printer.line(fmt::format("summary: {}/summary.md", record->dir.string()));
    printer.line(fmt::format("report:  {}/report.html", record->dir.string()));
  }
  if (options.after_run) {
    if (std::string line = options.after_run(record->dir); !line.empty()) printer.line(line);
  }
  if (outcome.write_failure) {
    printer.error(fmt::format(
        "kgym: the run stopped because a result could not be written: {}\n"
        "The results already written are kept. Free space on the output filesystem (or raise the file size "
        "limit), then finish the run with `kgym run --resume {}`.",
        *outcome.write_failure, record->dir.string()));
    return CampaignStatus::kOutputFailed;
  }
  if (outcome.interrupted) return CampaignStatus::kInterrupted;
  if (!summary) return CampaignStatus::kOutputFailed;
  bool all_passed =
      outcome.not_run == 0 && std::all_of(outcome.results.begin(), outcome.results.end(),
                                          [](const CaseResult& r) { return r.verdict == Verdict::kPass; });
  return all_passed ? CampaignStatus::kAllPassed : CampaignStatus::kSomeFailed;
}

}  // namespace kgym::run
