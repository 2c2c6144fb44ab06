#pragma once
// The pure side of pass@k runs (config `samples` > 1): the seed each sample
// gets, which sample a case reports, and what its samples add up to. The
// scheduler's bookkeeping around them is in scheduler_samples.cc.
#include <cstdint>
#include <string>
#include <vector>

#include "core/result.h"

namespace kgym::run {

// The seed of sample `sample` (from 1) of `case_id`: a mix of the three, so
// samples of one case and equal samples of two cases draw different inputs.
// A run with one sample per case uses the run seed itself (sample 0).
std::uint64_t sample_seed(std::uint64_t run_seed, const std::string& case_id, int sample);

// Index into `results` (the samples of one case, in sample order, not
// empty) of the one the case reports:
// - a passing sample with the highest median speedup (a passing sample
//   without a measured speedup ranks below every measured one); ties go to
//   the lower sample;
// - else a sample that cheated (a cheat is never hidden behind a milder
//   failure);
// - else the failure that got furthest: fail_correctness, runtime_error,
//   compile_error, timeout, crash, generation_failed, reference_error,
//   harness_error; ties go to the lower sample.
std::size_t chosen_sample(const std::vector<CaseResult>& results);

// The case's record: the chosen sample's result with a `samples` block
// (n, passed, pass@k for k = 1..n, best speedup, every sample's verdict).
CaseResult case_result_of_samples(const std::vector<CaseResult>& results);

}  // namespace kgym::run
