// `kgym run`: load and validate the config, then run the campaign.
#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <climits>
#include <cstdio>
#include <memory>

#include <fmt/format.h>

#include "app/command.h"
#include "core/case_paths.h"
#include "history/index.h"
#include "run/campaign.h"
#include "run/slurm_task.h"
#include "util/fs.h"

namespace kgym::app {
namespace {

int g_interrupt_write_fd = -1;

void on_interrupt(int) {
  char byte = 1;
  [[maybe_unused]] ssize_t n = ::write(g_interrupt_write_fd, &byte, 1);
}

// A self-pipe: SIGINT/SIGTERM write a byte that wakes the scheduler's poll.
int install_interrupt_pipe() {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC | O_NONBLOCK) != 0) return -1;
  g_interrupt_write_fd = fds[1];
  struct sigaction sa {};
  sa.sa_handler = on_interrupt;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
  signal(SIGPIPE, SIG_IGN);
  return fds[0];
}

std::string self_exe() {
  char buf[PATH_MAX];
  ssize_t n = ::readlink("/proc/self/exe", buf, sizeof buf - 1);
  return n > 0 ? std::string(buf, static_cast<size_t>(n)) : std::string("kgym");
}

}  // namespace

Command add_run_command(CLI::App& root) {
  struct Args {
    std::string config;
    std::string resume;
    std::vector<std::string> sets;
    std::vector<std::string> overrides;
    std::string size;
    std::string precision;
    bool force = false;
    bool json = false;
  };
  auto args = std::make_shared<Args>();
  CLI::App* app =
      root.add_subcommand("run", "Run the benchmark: generate, verify and report every selected case");
  app->add_option("--config,-c", args->config,
                  "YAML config file (default: the bundled configs/default.yaml)");
  app->add_option("--resume", args->resume, "Finish an earlier run in RUN_DIR (finished cases are kept)");
  app->add_flag("--force", args->force,
                "With --resume: accept a config that differs from the recorded one and regenerate the "
                "unfinished cases");
  app->add_option("--set", args->sets, "Set a config key by its dotted path, e.g. --set concurrency=2")
      ->type_name("KEY=VALUE");
  app->add_option("--override", args->overrides,
                  "Problem size override, short for --set problem.overrides.NAME=VALUE")
      ->type_name("NAME=VALUE");
  app->add_option(
      "--size", args->size,
      "Problem sizes, short for --set problem.size=VALUE: auto (the cpu default), as_written, or a "
      "budget '{max_bytes: N, max_forward_ms: MS}'");
  app->add_option("--precision", args->precision,
                  "Short for --set problem.precision=VALUE: as_written, float32, float16 or bfloat16");
  app->add_flag("--json", args->json,
                "At the end print the run's summary object (summary.json, docs/results.md) on stdout; the "
                "progress goes to stderr");

  return {app, [args]() -> int {
            if (args->force && args->resume.empty()) {
              fmt::print(stderr, "kgym: --force applies only with --resume RUN_DIR\n");
              return kExitUsage;
            }
            ConfigSource source;
            if (!args->config.empty()) {
              source.file = args->config;
            } else if (!args->resume.empty()) {
              auto recorded = run::recorded_config_source(args->resume);
              if (!recorded) {
                fmt::print(stderr, "kgym: {}\n", recorded.error());
                return kExitUsage;
              }
              source = *recorded;
            }
            source.sets.insert(source.sets.end(), args->sets.begin(), args->sets.end());
            if (!args->size.empty()) source.sets.push_back("problem.size=" + args->size);
            if (!args->precision.empty()) source.sets.push_back("problem.precision=" + args->precision);
            source.overrides.insert(source.overrides.end(), args->overrides.begin(), args->overrides.end());
            auto config = load_config(source);
            if (!config) {
              fmt::print(stderr, "kgym: invalid configuration:\n{}\n", config.error().message);
              return kExitUsage;
            }
            run::CampaignOptions options;
            options.source = source;
            if (!args->resume.empty()) options.resume_dir = args->resume;
            options.force = args->force;
            if (config->history_db) {
              std::filesystem::path db = *config->history_db;
              options.after_run = [db](const std::filesystem::path& run_dir) {
                return history::index_after_run(db, run_dir);
              };
            }
            auto ran_in = std::make_shared<std::filesystem::path>();
            options.after_run = [ran_in, then = options.after_run](const std::filesystem::path& run_dir) {
              *ran_in = run_dir;
              return then ? then(run_dir) : std::string();
            };
            options.kgym_argv0 = {self_exe()};
            int fd = install_interrupt_pipe();
            if (fd >= 0) options.interrupt_fd = fd;
            run::Printer printer(args->json ? stderr : stdout);
            int code = kExitUsage;
            switch (run::run_campaign(*config, options, printer)) {
              case run::CampaignStatus::kAllPassed: code = kExitOk; break;
              case run::CampaignStatus::kSomeFailed: code = kExitNotAllPassed; break;
              case run::CampaignStatus::kUsageError: code = kExitUsage; break;
              case run::CampaignStatus::kInterrupted: code = kExitInterrupted; break;
              case run::CampaignStatus::kOutputFailed: code = kExitOutputFailed; break;
            }
            if (args->json && !ran_in->empty()) {
              // The summary as written, so that stdout and the file never differ.
              auto summary = util::read_file(RunPaths{*ran_in}.summary_json());
              if (!summary) {
                fmt::print(stderr, "kgym: --json: {}\n", summary.error());
                return code == kExitOk ? kExitOutputFailed : code;
              }
              std::fputs(summary->c_str(), stdout);
            }
            return code;
          }};
}

// Hidden: one array task of a run on a Slurm cluster (docs/cluster.md).
Command add_slurm_task_command(CLI::App& root) {
  auto options = std::make_shared<run::SlurmTaskOptions>();
  auto run_dir = std::make_shared<std::string>();
  CLI::App* app = root.add_subcommand("slurm-task", "run one case-sample of a run as a Slurm array task");
  app->group("");
  app->add_option("--run-dir", *run_dir, "the run directory (shared with the coordinator)")->required();
  app->add_option("--submission", options->submission, "the submission number")->required();
  app->add_option("--index", options->index, "the array task id")->required();
  return {app, [options, run_dir]() -> int {
            options->run_dir = *run_dir;
            options->kgym_argv0 = {self_exe()};
            int fd = install_interrupt_pipe();
            if (fd >= 0) options->interrupt_fd = fd;
            run::Printer printer;
            int code = run::run_slurm_task(*options, printer);
            return code == 2 ? kExitUsage : code;
          }};
}

}  // namespace kgym::app
