// The C++ scanner (static_check/cpp_scan.cc): source a candidate hands to
// load_inline, read for library calls, reduced precision, introspection
// and side streams. The stripped text keeps the source's line count, which
// the findings' line numbers rely on.
#include <algorithm>

#include "fuzz/fuzz_util.h"
#include "static_check/cpp_scan.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace kgym::static_check;
  std::string_view source = kgym::fuzz::as_text(data, size);
  std::string stripped = strip_cpp_comments_and_strings(source);
  if (std::count(stripped.begin(), stripped.end(), '\n') != std::count(source.begin(), source.end(), '\n'))
    kgym::fuzz::contract_broken("stripping changed the line count");
  CppScan scan = scan_cpp(source);
  const int lines = static_cast<int>(std::count(source.begin(), source.end(), '\n')) + 1;
  for (const auto* hits :
       {&scan.library_calls, &scan.reduced_precision, &scan.introspection, &scan.side_streams}) {
    for (const CppHit& hit : *hits) {
      if (hit.name.empty() || hit.line < 1 || hit.line > lines)
        kgym::fuzz::contract_broken("a hit off the source");
    }
  }
  return 0;
}
