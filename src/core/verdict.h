#pragma once
// The closed set of case outcomes (docs/results.md). A verdict is data,
// never an exception.
#include <optional>
#include <string_view>

namespace kgym {

enum class Verdict {
  kPass,
  kFailCorrectness,
  kFailCheat,
  kCompileError,
  kRuntimeError,
  kTimeout,
  kCrash,
  kGenerationFailed,
  kReferenceError,
  kDeviceUnavailable,  // built, but no device here to run it on
  kHarnessError,
};

inline constexpr Verdict kAllVerdicts[] = {
    Verdict::kPass,           Verdict::kFailCorrectness,   Verdict::kFailCheat,    Verdict::kCompileError,
    Verdict::kRuntimeError,   Verdict::kTimeout,           Verdict::kCrash,        Verdict::kGenerationFailed,
    Verdict::kReferenceError, Verdict::kDeviceUnavailable, Verdict::kHarnessError,
};

// Stable snake_case name used in JSON and reports ("fail_correctness").
std::string_view to_string(Verdict v);
std::optional<Verdict> parse_verdict(std::string_view name);

}  // namespace kgym
