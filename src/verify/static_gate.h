#pragma once
// The static anti-cheat gate of a verification (ARCHITECTURE.md "Trust model" 7):
// the candidate's source is checked before any worker starts; a fatal
// finding ends the verification with fail_cheat, warnings are recorded.
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "core/backend.h"
#include "core/result.h"

namespace kgym::verify {

struct StaticGateResult {
  std::vector<StaticFinding> findings;  // every finding, fatal ones first
  std::optional<CheatFinding> cheat;    // set when a finding is fatal
  std::string reason;                   // "static.no_kernel — model_new.py:12: forward calls ..."
};

// Reads `candidate` and `problem` (the problem only for its dtypes, from its
// tokens: nothing runs). An unreadable candidate yields no findings; the
// verification reports that file problem itself.
StaticGateResult run_static_gate(const std::filesystem::path& candidate, const std::filesystem::path& problem,
                                 const Backend& backend);

// The same for a candidate already read (`name`: its file name, for the
// evidence), so that a caller which read it safely (util/beneath.h) never
// has the path opened again.
StaticGateResult run_static_gate_on_source(const std::string& name, std::string source,
                                           const std::filesystem::path& problem, const Backend& backend);

// The same for a candidate of several files: `files[0]` defines ModelNew,
// the other `.py` files are sibling modules it may import and get every
// rule as well (static_check::check_candidate_files); files of other kinds
// are skipped here (C++ is checked where Python hands it to load_inline).
StaticGateResult run_static_gate(const std::vector<std::filesystem::path>& files,
                                 const std::filesystem::path& problem, const Backend& backend);

}  // namespace kgym::verify
