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
// Work between calls is judged against the CPU time the reference's side
// used over the same windows, where that can be read: on the shared cores
// the two are what the kernel's scheduler divided between them, so the
// candidate's share of it does not move with the machine's other load
// (a burner on one core takes about half, an honest worker, blocked on its
// pipe, none). Without the reference's reading it is judged against the
// windows' wall time, which other load shrinks.
//
// Both decisions are pure functions of the readings, so they behave the
// same whether the readings come from a cgroup's cpuacct counter (exact)
// or from /proc (clock ticks, whose rounding the allowances absorb).
#include <functional>
#include <optional>
#include <string>

#include "core/result.h"

namespace kgym::verify {

// Reads the CPU time (nanoseconds, monotone) every process of one side has
// used so far; nullopt when it cannot be read.
using CpuReader = std::function<std::optional<double>()>;

struct LeaseAllowance {
  int cores = 1;             // the leased cores
  double resolution_ns = 0;  // granularity of one reading (0 for cpuacct)
  // Over the timed batches: CPU time up to cores x wall x this, plus slack.
  double cpu_share = 1.10;
  double cpu_slack_ns = 5e6;
  // Between calls, always allowed: an honest worker's lazy set-up after its
  // first calls (seen up to 31 ms on a loaded machine).
  double background_ns = 40e6;
  // Between calls, with the reference's reading: the candidate's share of
  // the CPU time both sides used over those windows. An honest worker
  // blocked on its pipe takes none; a burner thread on one leased core
  // about half (docs/anti-cheat.md "The lease" has the measurements).
  double contested_share = 0.15;
  // Between calls, without the reference's reading: this share of the
  // windows' wall time.
  double wall_share = 0.5;
};

// What the watch saw, for the log and the evidence.
struct LeaseFigures {
  int batches = 0;
  double batch_wall_ns = 0, batch_cpu_ns = 0;  // over the candidate's batches
  double idle_wall_ns = 0, idle_cpu_ns = 0;    // between them
  // The reference side's CPU time over the same windows between the
  // candidate's batches; nullopt when it cannot be read.
  std::optional<double> idle_reference_cpu_ns;
  int idle_readings = 0;
};

class LeaseWatch {
 public:
  // `reference_cpu` may be empty: the work between calls is then judged
  // by wall time.
  LeaseWatch(LeaseAllowance allowance, CpuReader candidate_cpu, CpuReader reference_cpu = {});

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
  // False when the candidate's reading failed: the watch then decides nothing.
  bool readable() const { return readable_; }
  std::string describe() const;

 private:
  struct Deltas {
    double cpu = 0, wall = 0;
    std::optional<double> reference_cpu;
  };
  std::optional<CheatFinding> check_background() const;
  // Reads the counters; false when there was no earlier mark to measure from.
  bool mark(double now_ns, Deltas& deltas);
  void add_idle(const Deltas& deltas);

  LeaseAllowance allowance_;
  CpuReader read_, read_reference_;
  LeaseFigures figures_;
  std::optional<double> mark_cpu_;            // the readings at the last candidate boundary
  std::optional<double> mark_reference_cpu_;  // (the reference's: nullopt once unreadable)
  double mark_ns_ = 0;
  bool idle_since_mark_ = false;  // the mark ended a candidate batch
  bool readable_ = true;
};

// The CPU time between calls that `figures` allow under `allowance`
// (exposed for the evidence and tests).
double background_allowance_ns(const LeaseAllowance& allowance, const LeaseFigures& figures);

}  // namespace kgym::verify
