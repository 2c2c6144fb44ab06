#include "core/verdict.h"

namespace kgym {

std::string_view to_string(Verdict v) {
  switch (v) {
    case Verdict::kPass: return "pass";
    case Verdict::kFailCorrectness: return "fail_correctness";
    case Verdict::kFailCheat: return "fail_cheat";
    case Verdict::kCompileError: return "compile_error";
    case Verdict::kRuntimeError: return "runtime_error";
    case Verdict::kTimeout: return "timeout";
    case Verdict::kCrash: return "crash";
    case Verdict::kGenerationFailed: return "generation_failed";
    case Verdict::kReferenceError: return "reference_error";
    case Verdict::kDeviceUnavailable: return "device_unavailable";
    case Verdict::kHarnessError: return "harness_error";
  }
  return "harness_error";
}

std::optional<Verdict> parse_verdict(std::string_view name) {
  for (Verdict v : kAllVerdicts) {
    if (to_string(v) == name) return v;
  }
  return std::nullopt;
}

}  // namespace kgym
