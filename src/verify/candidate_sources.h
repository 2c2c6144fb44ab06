#pragma once
// The files a candidate runs with: the candidate file and the sources beside
// it (a bridge file that defines ModelNew imports its helpers from its own
// directory, `import kernel_impl` or `from .kernel_impl import f`). They are
// copied into the candidate worker's scratch dir, importable as siblings,
// and every Python file among them goes through the static gate.
#include <cstdint>
#include <expected>
#include <filesystem>
#include <string>
#include <vector>

namespace kgym::verify {

struct SourceLimits {
  std::size_t max_files = 64;                // the candidate included
  std::uintmax_t max_file_bytes = 1 << 20;   // 1 MiB per file
  std::uintmax_t max_total_bytes = 8 << 20;  // 8 MiB together
};

// The sources beside `candidate`: regular files directly in its directory
// ending in .py, .c, .cc, .cpp, .cxx, .cu, .cuh, .h, .hpp (links skipped),
// in name order. The problem file is never among them, even when it lies
// beside the candidate (the same file, or its bytes under another name: a
// copy of task_desc.py), so the candidate's box never holds the reference.
// An error (one line naming the directory or file, the limit and the fix)
// when the candidate and its siblings break a limit.
std::expected<std::vector<std::filesystem::path>, std::string> candidate_siblings(
    const std::filesystem::path& candidate, const std::filesystem::path& problem,
    const SourceLimits& limits = {});

// Copies the candidate file or one of its sources to `to`: a regular file
// (not a link, nor a FIFO or a device) of at most limits.max_file_bytes,
// checked before any byte is copied (util/beneath.h). An error names the
// file and what was wrong.
std::expected<void, std::string> copy_candidate_source(const std::filesystem::path& file,
                                                       const std::filesystem::path& to,
                                                       const SourceLimits& limits = {});

}  // namespace kgym::verify
