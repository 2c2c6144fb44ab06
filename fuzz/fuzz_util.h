#pragma once
// What the fuzz targets share (docs/fuzzing.md): each target is one
// LLVMFuzzerTestOneInput over a reader of untrusted input. A crash, a
// sanitizer report, an exception the reader's callers do not expect, or a
// hang is a finding; a clear error is the expected answer to garbage.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include <unistd.h>

namespace kgym::fuzz {

inline std::string_view as_text(const std::uint8_t* data, std::size_t size) {
  return {reinterpret_cast<const char*>(data), size};
}

// The parts of an input cut at each line "%%" (the seeds of the targets
// that read several files at once are such concatenations).
inline std::vector<std::string_view> split_parts(std::string_view text) {
  std::vector<std::string_view> parts;
  constexpr std::string_view kSeparator = "\n%%\n";
  while (true) {
    std::size_t at = text.find(kSeparator);
    if (at == std::string_view::npos) break;
    parts.push_back(text.substr(0, at));
    text.remove_prefix(at + kSeparator.size());
  }
  parts.push_back(text);
  return parts;
}

// A directory of this process's own, made once, under $TMPDIR (a tmpfs
// keeps the targets that write files fast).
inline const std::filesystem::path& scratch_dir() {
  static const std::filesystem::path dir = [] {
    const char* tmp = std::getenv("TMPDIR");
    std::filesystem::path d =
        std::filesystem::path(tmp && *tmp ? tmp : "/tmp") / ("kgym-fuzz-" + std::to_string(::getpid()));
    std::filesystem::create_directories(d);
    return d;
  }();
  return dir;
}

// A finding the sanitizers would not see: a reader broke its own contract.
[[noreturn]] inline void contract_broken(const char* what) {
  std::fprintf(stderr, "contract broken: %s\n", what);
  std::abort();
}

}  // namespace kgym::fuzz
