#pragma once
// How long a Python worker took to become ready, split at the instant its
// process began. The worker's hello carries `started_ns` (its interpreter's
// first module import, or the zygote's fork) and `ready_ns` (the hello
// itself), both CLOCK_MONOTONIC nanoseconds (docs/worker-protocol.md); the
// parent supplies when it asked for the worker, on its steady_clock, which
// is CLOCK_MONOTONIC on Linux. These are diagnostics (verify.log,
// result.json timings), never an input to a verdict.
#include <optional>

#include <nlohmann/json.hpp>

#include "worker/child_process.h"

namespace kgym::worker {

struct WorkerStartup {
  double launch_s = 0;  // asked for -> the worker process began (spawn + interpreter, or fork)
  double init_s = 0;    // began -> ready (imports, pinning, compile environment, audit hook)
  double total_s() const { return launch_s + init_s; }
};

// nullopt when the hello lacks the stamps or they are out of order
// (a worker older than the stamps, or another clock).
std::optional<WorkerStartup> worker_startup(const nlohmann::json& hello, Clock::time_point requested);

// `t` as CLOCK_MONOTONIC nanoseconds, the unit of the hello's stamps.
long long monotonic_ns(Clock::time_point t);

}  // namespace kgym::worker
