#include "run/resume_check.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/case_paths.h"
#include "core/record_files.h"
#include "core/run_state.h"
#include "run/sample_flow.h"
#include "util/fs.h"

namespace kgym::run {

std::expected<void, std::string> check_resumable(const std::filesystem::path& run_dir,
                                                 const std::vector<Case>& cases, int samples) {
  std::vector<std::string> problems;
  if (auto text = util::read_file(RunPaths{run_dir}.state())) {
    auto state = nlohmann::json::parse(*text, nullptr, /*allow_exceptions=*/false);
    std::string newer = newer_schema_message(RunPaths{run_dir}.state(), state, kStateSchemaVersion);
    if (!newer.empty()) problems.push_back(std::move(newer));
  }
  for (const Case& c : cases) {
    CasePaths paths = CasePaths::of(run_dir, c.level, c.stem());
    auto result = read_result(paths, c.id());
    if (!result) problems.push_back(result.error());
    if (!result || *result || samples <= 1) continue;
    for (int k = 1; k <= samples; ++k) {
      if (auto sample = read_result(paths.sample(k), c.id()); !sample) problems.push_back(sample.error());
    }
  }
  if (problems.empty()) return {};
  return std::unexpected(fmt::format("cannot resume {}: {} record(s) cannot be read:\n  {}", run_dir.string(),
                                     problems.size(), fmt::join(problems, "\n  ")));
}

}  // namespace kgym::run
