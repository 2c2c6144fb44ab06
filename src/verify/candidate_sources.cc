#include "verify/candidate_sources.h"

#include <algorithm>
#include <array>

#include <fmt/format.h>

#include "util/beneath.h"
#include "util/fs.h"

namespace kgym::verify {
namespace fs = std::filesystem;
namespace {

bool is_source(const fs::path& file) {
  static constexpr std::array<std::string_view, 9> kExtensions = {".py", ".c",   ".cc", ".cpp", ".cxx",
                                                                  ".cu", ".cuh", ".h",  ".hpp"};
  std::string ext = file.extension().string();
  return std::ranges::find(kExtensions, ext) != kExtensions.end();
}

// The problem itself, or a copy of its bytes under another name (read
// only when the sizes match, and never through a link).
bool is_problem(const fs::path& file, const fs::path& problem, const std::string& problem_bytes) {
  std::error_code ec;
  if (fs::equivalent(file, problem, ec)) return true;
  if (problem_bytes.empty() || fs::file_size(file, ec) != problem_bytes.size()) return false;
  auto bytes = util::read_file_beneath(file.parent_path(), file.filename(), problem_bytes.size());
  return bytes && *bytes == problem_bytes;
}

}  // namespace

std::expected<std::vector<fs::path>, std::string> candidate_siblings(const fs::path& candidate,
                                                                     const fs::path& problem,
                                                                     const SourceLimits& limits) {
  fs::path dir = candidate.parent_path().empty() ? fs::path(".") : candidate.parent_path();
  std::string problem_bytes = util::read_file(problem).value_or("");
  std::vector<fs::path> siblings;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    const fs::path& file = entry.path();
    if (file.filename() == candidate.filename() || !is_source(file)) continue;
    if (entry.is_symlink(ec) || !entry.is_regular_file(ec)) continue;
    if (is_problem(file, problem, problem_bytes)) continue;
    siblings.push_back(file);
  }
  if (ec) return std::unexpected(fmt::format("cannot list {}: {}", dir.string(), ec.message()));
  std::ranges::sort(siblings);
  if (siblings.size() + 1 > limits.max_files) {
    return std::unexpected(fmt::format(
        "{} holds {} source files beside the candidate (at most {} are taken along); keep only the "
        "candidate's own sources in its directory",
        dir.string(), siblings.size(), limits.max_files - 1));
  }
  std::uintmax_t total = 0;
  std::vector<fs::path> files{candidate};
  files.insert(files.end(), siblings.begin(), siblings.end());
  for (const fs::path& file : files) {
    std::uintmax_t size =
        fs::file_size(file, ec);  // the siblings are no links; copy_candidate_source checks again
    if (!ec && size > limits.max_file_bytes) {
      return std::unexpected(fmt::format("{} has {} bytes; a candidate source may have at most {}",
                                         file.string(), size, limits.max_file_bytes));
    }
    total += ec ? 0 : size;
    if (total > limits.max_total_bytes) {
      return std::unexpected(
          fmt::format("the sources in {} exceed {} bytes together; keep only the "
                      "candidate's own sources in its directory",
                      dir.string(), limits.max_total_bytes));
    }
  }
  return siblings;
}

std::expected<void, std::string> copy_candidate_source(const fs::path& file, const fs::path& to,
                                                       const SourceLimits& limits) {
  fs::path dir = file.parent_path().empty() ? fs::path(".") : file.parent_path();
  return util::copy_file_beneath(dir, file.filename(), to, limits.max_file_bytes);
}

}  // namespace kgym::verify
