#pragma once
// The CPU lease of a verification, watched from outside the candidate's
// processes (docs/anti-cheat.md "The lease"). The kernel enforces the cores
// where it can (util/cgroup.h); this watch decides, from the CPU time the
// candidate side's processes used as the parent reads it between requests:
//
// - `runtime.lease`: over the candidate's timed batches, its processes used
//   more CPU time than the batches' wall time times the leased cores allows
//   (threads on cores it was not given);
// - `runtime.background_work`: its processes used CPU time while none of
//   them was being called (from the reply to one candidate batch to the
//   request of the next, the reference's batches included): work that
//   slows whoever is timed in turn on the shared cores.
//
// Both decisions are pure functions of the readings, so they behave the
// same whether the readings come from a cgroup's cpuacct counter (exact)
// or from /proc (clock ticks, whose rounding the allowances absorb).
#include <functional>
#include <optional>
#include <string>

#include "core/result.h"

namespace kgym::verify {

// Reads the CPU time (nanoseconds, monotone) every process of the candidate
// side has used so far; nullopt when it cannot be read.
using CpuReader = std::function<std::optional<double>()>;

struct LeaseAllowance {
  int cores = 1;               // the leased cores
  double resolution_ns = 0;    // granularity of one reading (0 for cpuacct)
  // Over the timed batches: CPU time up to cores x wall x this, plus slack.
  double cpu_share = 1.10;
  double cpu_slack_ns = 5e6;
  // Between calls: CPU time up to this, plus this share of the time spent
  // between calls (measured in docs/anti-cheat.md "The lease").
  // 100 ms: an honest kernel's first calls (lazy set-up, answering the
  // parent's output fetches) used 31 ms on a loaded machine; a burner uses
  // about half the wall time of the timing, far more.
  double background_ns = 100e6;
  // Half: honest kernels were seen using up to a third of the time between
  // their calls (their worker settling after each reply); a burner uses all of it.
  double background_share = 0.5;
};

// What the watch saw, for the log and the evidence.
struct LeaseFigures {
  int batches = 0;
  double batch_wall_ns = 0, batch_cpu_ns = 0;  // over the candidate's batches
  double idle_wall_ns = 0, idle_cpu_ns = 0;    // between them
};

class LeaseWatch {
 public:
  LeaseWatch(LeaseAllowance allowance, CpuReader candidate_cpu)
      : allowance_(allowance), read_(std::move(candidate_cpu)) {}

  // Around every request of the timing: `candidate` says whether it goes to
  // one of the candidate's workers; `now_ns` is the parent's steady clock.
  // Each returns the finding that ends the verification, if any.
  std::optional<CheatFinding> before_request(bool candidate, double now_ns);
  std::optional<CheatFinding> after_reply(bool candidate, double now_ns);
  // At the end of the timing: the time since the last candidate batch
  // counts as between calls too.
  std::optional<CheatFinding> finish(double now_ns);
  // The time since the last candidate reply is not counted as time between
  // calls: the warm-up, while a new worker (the twins start as timing
  // begins) may still be settling in, is not held against the candidate.
  void skip_idle() { idle_since_mark_ = false; }

  const LeaseFigures& figures() const { return figures_; }
  // False when a reading failed: the watch then decides nothing.
  bool readable() const { return readable_; }
  std::string describe() const;

 private:
  std::optional<CheatFinding> check_background() const;
  bool mark(double now_ns, double& cpu_delta, double& wall_delta);

  LeaseAllowance allowance_;
  CpuReader read_;
  LeaseFigures figures_;
  std::optional<double> mark_cpu_;  // the reading at the last candidate boundary
  double mark_ns_ = 0;
  bool idle_since_mark_ = false;  // the mark ended a candidate batch
  int idle_readings_ = 0;
  bool readable_ = true;
};

// The allowance between calls for `figures` under `allowance` (exposed for
// the evidence and tests).
double background_allowance_ns(const LeaseAllowance& allowance, const LeaseFigures& figures,
                               int readings);

}  // namespace kgym::verify
