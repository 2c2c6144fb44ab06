#pragma once
// Problem lint (docs/anti-cheat.md "Problem lint"): the reference alone, in
// a Python worker (`kgym_worker.py lint`), run a few times to find problems
// that a kernel can pass without computing (constant or ~zero outputs,
// outputs independent of the inputs, a reference that is the identity on
// the given inputs) or that no kernel can pass (a reference that does not
// match itself, one that fails), with its time and memory.
#include <chrono>
#include <expected>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/config.h"
#include "core/result.h"

namespace kgym::verify {

struct LintFinding {
  // zero_output | constant_output | input_independent |
  // identity_on_given_inputs | not_self_consistent | non_finite_output |
  // reference_fails
  std::string kind;
  std::string evidence;
  // What verification already catches (an identity on get_inputs() only,
  // which its signed-normal trials expose): printed, never a finding that
  // makes `kgym lint` exit 1.
  bool note = false;
};

struct LintReport {
  std::vector<LintFinding> findings;
  std::optional<double> forward_ms;   // one reference forward at the configured sizes
  std::optional<double> peak_rss_mb;  // the worker's peak resident memory
  std::optional<ProblemSizes> sizes;  // what problem.size: auto chose (the lint ran at those sizes)
};

struct LintRequest {
  std::string python;
  std::filesystem::path problem;
  std::filesystem::path worker_script;  // written by write_worker_script()
  std::filesystem::path out_json;       // scratch file for the worker's answer
  std::map<std::string, long long> overrides;
  Tolerance tolerance{1e-4, 1e-3};  // float32 by default
  unsigned long long seed = 0;
  int threads = 1;
  std::chrono::seconds timeout{300};
  std::optional<ProblemSize> size;  // set: solve the sizes for this budget first
  long long address_space_mb = 0;   // the worker's RLIMIT_AS (0: none), for a death's reason
  std::string precision = "as_written";
};

// Runs the worker; an error only when the worker could not be run or gave
// no document (a failing reference is a finding, not an error).
std::expected<LintReport, std::string> lint_problem(const LintRequest& req);

// True for findings that make the problem unusable (no candidate can pass).
bool is_reference_error(const LintFinding& finding);

}  // namespace kgym::verify
