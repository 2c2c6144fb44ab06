#pragma once
// Internal to run/: what the scheduler keeps per sample and per case,
// shared by its translation units (scheduler.cc: the event loop and the
// sample lifecycle; scheduler_agent.cc: the agent's sandbox and the workflow
// stages; scheduler_samples.cc: cases, their samples and device leases).
//
// A sample is one generation of a case and its verification. A run with
// `samples: 1` has one sample per case, living in the case's own directory;
// with K > 1 sample k lives in cases/<level>/<stem>/samples/<k>/.
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "run/gates.h"
#include "run/scheduler.h"

namespace kgym::run {

struct Scheduler::CaseRun {
  Case c;
  std::size_t case_index = 0;       // into cases_ and the state's case rows
  int sample = 0;                   // from 1 when the case has several samples; 0 when it has one
  std::uint64_t seed = 0;           // of its probe and verification (run/samples.h)
  std::filesystem::path dir;        // the sample's directory (the case's own with one sample)
  std::filesystem::path work;       // the agent's work dir
  std::filesystem::path candidate;  // candidate file once collected
  std::string phase = "pending";    // as on the case row when this sample is shown there
  Child child = Child::kNone;
  std::optional<util::SteadyTime> deadline;  // of the running child
  bool deadline_hit = false;
  std::optional<std::size_t>
      device;  // leased for verification, or from before generation (agent.needs_device)
  Generation generation;
  std::size_t workflow_stage = 0;  // workflow: the stage being run
  int attempt = 0;                 // and its attempt, from 1
  std::optional<StageChecks> checks;  // of the attempt just run, while its gates are checked
  std::optional<double> generate_s;
  util::SteadyTime started{};  // the sample left pending
  util::SteadyTime generation_started{};
  std::optional<CaseResult> result;
  enum class Stage { kPending, kActive, kWaitingDevice, kDone } stage = Stage::kPending;
};

// A case: its samples (indices into runs_) and, once every one has ended,
// its own result.
struct Scheduler::CaseEntry {
  std::string id;
  std::filesystem::path dir;  // RUN_DIR/cases/<level>/<stem>
  std::vector<std::size_t> samples;
  std::optional<CaseResult> result;
};

}  // namespace kgym::run
