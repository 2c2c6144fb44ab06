#pragma once
// The static anti-cheat rules (ARCHITECTURE.md "Trust model" 5 and 7): checks run
// on a candidate's source before any of its code runs. Every finding has a
// stable rule id (docs/anti-cheat.md), a severity and file:line evidence.
// A fatal finding decides the verdict fail_cheat; a warning is recorded.
//
// Rules read tokens (python_tokenizer.h), so a comment or a docstring never
// triggers a rule, and C++ only as far as it is handed to load_inline
// (cpp_scan.h). The runtime op trace is the second line of defence; these
// rules aim at zero false positives on honest kernels first.
#include <string>
#include <string_view>
#include <vector>

namespace kgym::static_check {

inline constexpr std::string_view kFatal = "fatal";
inline constexpr std::string_view kWarn = "warn";

struct Finding {
  std::string rule;      // e.g. "static.no_kernel"
  std::string severity;  // "fatal" | "warn"
  std::string file;      // file name as given to check_candidate
  int line = 0;          // 1-based; 0 when the finding is about the whole file
  std::string token;     // what was found: "torch.nn.functional.leaky_relu", "at::matmul"
  std::string message;   // one line a human understands

  std::string evidence() const;  // "model_new.py:14: torch.relu"
  bool fatal() const { return severity == kFatal; }
};

struct CheckOptions {
  std::string backend = "cpu";                          // cpu | cuda | npu
  std::string execution = "device";                     // verifier.execution
  std::vector<std::string> input_dtypes = {"float32"};  // the problem's floating dtypes
  std::vector<std::string> output_dtypes = {"float32"};
};

// Every finding on the candidate, fatal ones first, each group in line
// order. Never throws.
std::vector<Finding> check_candidate(std::string_view source, std::string_view file_name,
                                     const CheckOptions& options);

// One Python file of a candidate, as the checks see it.
struct SourceFile {
  std::string name;  // file name for evidence ("kernel_impl.py")
  std::string source;
};

// Every finding on a candidate made of several Python files (rules_files.cc):
// `files[0]` defines ModelNew, the others are the sibling modules it may
// import. Every rule runs on every file, so an exploit in a sibling is
// found exactly as in the candidate; ModelNew is looked up in files[0]
// only, and a kernel built in a sibling the candidate imports counts as the
// candidate's own (a forward that calls the library op is still caught).
// Fatal findings first, then by file and line. Never throws.
std::vector<Finding> check_candidate_files(const std::vector<SourceFile>& files, const CheckOptions& options);

// The floating dtypes a problem file names in its code (float16, bfloat16,
// float64, ...), read from tokens without running it; {"float32"} when it
// names none (torch's default).
std::vector<std::string> problem_dtypes(std::string_view problem_source);

// The first fatal finding, if any.
const Finding* first_fatal(const std::vector<Finding>& findings);

}  // namespace kgym::static_check
