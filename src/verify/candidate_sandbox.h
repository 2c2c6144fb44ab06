#pragma once
// The box the candidate worker runs in (DESIGN.md "Process model"): no
// network, the whole filesystem read-only with the dataset and the run
// directories hidden, the verification's scratch dir visible read-only at
// /tmp/kgym and only its candidate/ subdir (and the compile cache) writable,
// rlimits on address space, CPU time, file size and processes, a PID
// namespace that dies with the worker, and — when kgym runs as root — an
// unprivileged uid so the process limit binds.
#include <expected>
#include <filesystem>
#include <string>
#include <vector>

#include "core/config.h"
#include "util/sandbox.h"

namespace kgym::verify {

struct CandidateBox {
  util::SandboxPolicy policy;
  std::filesystem::path scratch_inside;  // where scratch_dir appears to the worker
  std::vector<std::string> env;          // extra "NAME=VALUE" for the worker (CCACHE_DIR, HOME)
  std::string description;               // for verify.log

  // `host` (under scratch_dir) as the worker sees it.
  std::filesystem::path inside(const std::filesystem::path& host,
                               const std::filesystem::path& scratch_dir) const;
};

// Builds the box for one verification. `mode` is the resolved or requested
// sandbox mode ("auto" is resolved here). Prepares the writable dirs (and
// hands them to the unprivileged uid when it is used).
std::expected<CandidateBox, std::string> make_candidate_box(const SandboxConfig& config,
                                                            const std::vector<std::filesystem::path>& hidden,
                                                            const std::filesystem::path& scratch_dir,
                                                            bool compile_cache);

}  // namespace kgym::verify
