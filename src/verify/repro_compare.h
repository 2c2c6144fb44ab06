#pragma once
// A reproduction's result against the one its bundle recorded
// (`kgym verify --bundle`, docs/repro.md): the same verdict or not, the new
// median speedup inside or outside the recorded 95% interval, and warnings
// when the machine or the torch differ. Pure functions of the records.
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/result.h"

namespace kgym::verify {

struct ReproComparison {
  Verdict recorded_verdict = Verdict::kHarnessError;
  Verdict verdict = Verdict::kHarnessError;
  // kNotRecorded: the recorded result has no speedup interval (correctness
  // mode, a case that failed before timing); kNotMeasured: it has one, the
  // reproduction measured no speedup.
  enum class Speedup { kNotRecorded, kNotMeasured, kInside, kOutside };
  Speedup speedup = Speedup::kNotRecorded;
  std::optional<SpeedupEstimate> recorded_speedup;
  std::optional<SpeedupEstimate> new_speedup;
  std::vector<std::string> warnings;  // another machine, another torch: one line each

  bool verdict_same() const { return verdict == recorded_verdict; }
  // The same verdict, and the speedup inside the recorded interval where one was recorded.
  bool agrees() const {
    return verdict_same() && (speedup == Speedup::kNotRecorded || speedup == Speedup::kInside);
  }
};

// `recorded_machine` and `machine` are run.json's `machine` objects (null
// when unknown): their CPU model, online CPUs and host name are compared.
ReproComparison compare_reproduction(const CaseResult& recorded, const nlohmann::json& recorded_machine,
                                     const CaseResult& reproduced, const nlohmann::json& machine);

// The comparison as lines for the terminal, each starting "repro: ": the
// verdicts, the speedups, each warning, and the conclusion last.
std::vector<std::string> comparison_lines(const ReproComparison& c);

}  // namespace kgym::verify
