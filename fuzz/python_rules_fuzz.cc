// The Python tokenizer and every static rule (static_check/): a candidate's
// model_new.py, or a candidate of several files (parts after the first are
// its sibling modules), on each backend and execution. The problem-file
// reader that picks the dtypes the rules check against runs on it too.
#include "fuzz/fuzz_util.h"
#include "static_check/python_tokenizer.h"
#include "static_check/rules.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace kgym::static_check;
  std::string_view text = kgym::fuzz::as_text(data, size);
  std::vector<std::string_view> parts = kgym::fuzz::split_parts(text);

  TokenStream tokens = tokenize_python(parts[0]);
  (void)with_fstring_expressions(tokens.tokens);
  (void)problem_dtypes(parts[0]);

  // The backend and execution come from the input's length, so every rule
  // set is reached without a byte of the source spent on choosing it.
  static const CheckOptions kOptions[] = {
      {"cpu", "device", {"float32"}, {"float32"}},
      {"cuda", "device", {"float16"}, {"float16"}},
      {"cuda", "host_interpreter", {"float32"}, {"float32"}},
      {"npu", "host_interpreter", {"bfloat16"}, {"float32"}},
  };
  const CheckOptions& options = kOptions[size % std::size(kOptions)];
  std::vector<Finding> findings;
  if (parts.size() == 1) {
    findings = check_candidate(parts[0], "model_new.py", options);
  } else {
    std::vector<SourceFile> files;
    for (std::size_t i = 0; i < parts.size(); ++i)
      files.push_back(
          {i == 0 ? "model_new.py" : "sibling" + std::to_string(i) + ".py", std::string(parts[i])});
    findings = check_candidate_files(files, options);
  }
  for (const Finding& f : findings) {
    if (f.rule.empty() || f.message.empty())
      kgym::fuzz::contract_broken("a finding without its rule or message");
    if (f.severity != kFatal && f.severity != kWarn)
      kgym::fuzz::contract_broken("a finding of no known severity");
  }
  return 0;
}
