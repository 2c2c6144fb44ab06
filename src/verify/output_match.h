#pragma once
// The one place that decides whether a call's outputs match another's:
// the correctness trials (candidate against reference), the determinism
// check (the candidate against itself), the reference's self-consistency,
// and the timed calls' outputs of the timing (candidate against reference,
// on the same input set). Pure: the callers hand it decoded bytes.
#include <cstddef>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "core/backend.h"
#include "core/config.h"
#include "verify/tensor_compare.h"

namespace kgym::verify {

// How outputs are compared.
struct OutputRules {
  const std::map<std::string, Tolerance>* configured = nullptr;  // verifier.tolerances; null: defaults
  const Backend* backend = nullptr;                                // its default tolerances; null: cpu's
  // The configured atol capped at 1 % of the scaling output's RMS
  // (runtime_checks.h scaled_tolerance), so that an all-zero answer to a
  // problem whose outputs are all tiny fails. Off: the configured
  // tolerance as it is (the reference against itself).
  bool scaled = true;
  // The correctness phase found the reference constant or ~zero on its
  // inputs ("zero", "constant"): each output is then also held to a
  // relative L2 error within rtol.
  std::optional<std::string> degenerate;
};

struct OutputMatch {
  bool ok = true;
  std::string problem;                      // one line, "" when ok: "output 1: ..." or a count mismatch
  std::optional<std::size_t> failed_output;  // the output that failed; nullopt when ok or the counts differ
  std::optional<double> max_abs_err;        // over the outputs compared
  std::optional<double> max_rel_err;
  std::vector<Tolerance> tolerances;  // per output, as applied
};

// `got` against `want`, output by output, with the tolerance of `want`'s
// dtype (scaled by `scale_by`'s output of the same index, `want` when
// empty). The counts must be equal. Stops at the first output that fails.
OutputMatch match_outputs(std::span<const TensorBytes> got, std::span<const TensorBytes> want,
                          const OutputRules& rules, std::span<const TensorBytes> scale_by = {});

}  // namespace kgym::verify
