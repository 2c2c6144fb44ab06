#pragma once
// What `kgym run` and a Slurm task (run/slurm_task.h) both find on their
// machine before any work: the selected cases, the interpreter and the
// sandbox (`preflight`), and the scheduler's options from them.
#include <cstdint>
#include <expected>
#include <filesystem>
#include <string>
#include <vector>

#include "core/case_set.h"
#include "core/config.h"
#include "run/printer.h"
#include "run/scheduler.h"
#include "util/sandbox.h"
#include "worker/python_env.h"

namespace kgym::run {

struct Preflight {
  std::vector<Case> cases;
  worker::PythonEnv python;
  util::SandboxMode sandbox = util::SandboxMode::kNone;
  // verifier.execution as the run uses it (execution: auto resolved, when
  // the backend was checked), and why auto chose a host interpreter.
  std::string execution;
  std::string execution_note;
};

// The checks every run passes before any work; the error is one message
// naming the config file and key. `check_backend` asks the interpreter for
// the backend's device (not on a cluster's login node).
std::expected<Preflight, std::string> preflight(const Config& config, bool check_backend);

// The scheduler's options for a run dir on this machine (the precompiled
// header is looked up here: it takes up to two minutes the first time).
SchedulerOptions scheduler_options(const Config& config, const Preflight& pre,
                                   const std::filesystem::path& run_dir, std::uint64_t run_seed,
                                   const std::vector<std::string>& kgym_argv0,
                                   const std::filesystem::path& worker, Printer& printer);

}  // namespace kgym::run
