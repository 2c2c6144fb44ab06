#pragma once
// A verdict a verification reached before its end (internal to verify/).
#include <optional>
#include <string>
#include <string_view>

#include <fmt/format.h>

#include "core/result.h"

namespace kgym::verify::detail {

struct Failure {
  Verdict verdict;
  std::string reason;
  std::optional<CheatFinding> cheat;  // for runtime fail_cheat verdicts
  bool worker_answered = false;       // an error reply, not a dead or silent worker
};

// A runtime finding as the Failure it is; its reason "rule — where: evidence".
inline Failure runtime_cheat_failure(CheatFinding finding, std::string_view where) {
  std::string reason = fmt::format("{} — {}: {}", finding.rule, where, finding.evidence);
  return Failure{Verdict::kFailCheat, std::move(reason), std::move(finding)};
}

}  // namespace kgym::verify::detail
