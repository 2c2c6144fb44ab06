#pragma once
// What `kgym run --resume` checks before it does any work: the records it
// would trust or rewrite can be read. A resume keeps every result.json and
// runs again only the cases without one, so a result.json it cannot read
// (truncated, overwritten, another case's, a newer kgym's) would otherwise
// be silently replaced by a new run of its case; it refuses instead and
// says how to go on (docs/robustness.md). state.json is derived and simply
// rewritten, unless a newer kgym wrote it.
#include <expected>
#include <filesystem>
#include <string>
#include <vector>

#include "core/case_set.h"

namespace kgym::run {

// Every problem found, one per line, each naming its file and the fix.
// With `samples` > 1 the samples' result.json of an unfinished case are
// checked too.
std::expected<void, std::string> check_resumable(const std::filesystem::path& run_dir,
                                                 const std::vector<Case>& cases, int samples);

}  // namespace kgym::run
