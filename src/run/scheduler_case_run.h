#pragma once
// Internal to run/: what the scheduler keeps per case, shared by its
// translation units (scheduler.cc: the event loop and the case lifecycle;
// scheduler_agent.cc: the agent's sandbox and the workflow stages).
#include <cstddef>
#include <filesystem>
#include <optional>

#include "run/scheduler.h"

namespace kgym::run {

struct Scheduler::CaseRun {
  Case c;
  std::filesystem::path dir;        // RUN_DIR/cases/<level>/<stem>
  std::filesystem::path work;       // the agent's work dir
  std::filesystem::path candidate;  // candidate file once collected
  Child child = Child::kNone;
  std::optional<util::SteadyTime> deadline;  // of the running child
  bool deadline_hit = false;
  std::optional<std::size_t> device;
  Generation generation;
  std::size_t workflow_stage = 0;  // workflow: the stage being run
  int attempt = 0;                 // and its attempt, from 1
  std::optional<double> generate_s;
  util::SteadyTime started{};  // the case left pending
  util::SteadyTime generation_started{};
  std::optional<CaseResult> result;
  enum class Stage { kPending, kActive, kWaitingDevice, kDone } stage = Stage::kPending;
};

}  // namespace kgym::run
