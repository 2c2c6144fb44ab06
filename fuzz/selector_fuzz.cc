// The case selector grammar (core/selector.cc), parsed alone and resolved
// against the bundled sample set (core/case_set.cc), as `--cases` and
// `cases:` are.
#include "core/case_set.h"
#include "core/selector.h"
#include "fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace kgym;
  const std::string selector(fuzz::as_text(data, size));
  ParsedSelector parsed = parse_selector(selector);
  for (const SelectorParseError& e : parsed.errors) {
    if (e.message.empty()) fuzz::contract_broken("a selector error without a message");
    if (e.position > selector.size() + 1) fuzz::contract_broken("a selector error past the end");
  }
  for (const SelectorGroup& g : parsed.groups) {
    for (const SelectorItem& item : g.items) {
      if (item.first > item.last) fuzz::contract_broken("a range read backwards");
    }
  }
  static const std::filesystem::path bench = std::filesystem::path(KGYM_SOURCE_DIR) / "data/sample";
  auto cases = select_cases(bench, "level1", selector);
  if (!cases && cases.error().message.empty()) fuzz::contract_broken("a SelectorError without a message");
  if (size >= 2) {
    std::size_t half = size / 2;
    (void)natural_less(selector.substr(0, half), selector.substr(half));
  }
  return 0;
}
