#pragma once
// The box the candidate worker runs in (ARCHITECTURE.md "Process model of kgym run"): no
// network, the whole filesystem read-only with the dataset and the run
// directories hidden, the verification's scratch dir visible read-only at
// /tmp/kgym and only its candidate/ subdir (and a build's own ccache) writable,
// rlimits on address space, CPU time, file size and processes, a PID
// namespace that dies with the worker, and — when kgym runs as root — an
// unprivileged uid so the process limit binds.
#include <expected>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "core/config.h"
#include "util/sandbox.h"

namespace kgym::worker {

struct CandidateBox {
  util::SandboxPolicy policy;
  std::filesystem::path scratch_inside;  // where scratch_dir appears to the worker
  std::vector<std::string> env;          // extra "NAME=VALUE" for the worker (CCACHE_*, HOME)
  std::string description;               // for verify.log
  std::filesystem::path worker_inside;   // warm box: where the worker script's dir appears

  // `host` (under scratch_dir) as the worker sees it.
  std::filesystem::path inside(const std::filesystem::path& host,
                               const std::filesystem::path& scratch_dir) const;
};

// Where kgym keeps its caches: $KGYM_CACHE_DIR, else ~/.cache/kgym.
std::filesystem::path kgym_cache_root();

// Builds the box for one verification. `mode` is the resolved or requested
// sandbox mode ("auto" is resolved here). Prepares the writable dirs (and
// hands them to the unprivileged uid when it is used). The compile caches
// are hidden (bwrap) and ccache is off (worker/compile_cache.h).
std::expected<CandidateBox, std::string> make_candidate_box(const SandboxConfig& config,
                                                            const std::vector<std::filesystem::path>& hidden,
                                                            const std::filesystem::path& scratch_dir);

// Gives a build's box `dir` (its key's ccache directory, worker/compile_cache.h)
// writable at /tmp/kgym-ccache with ccache pointed there; only under bwrap,
// which can show that one directory alone (false: the box goes without).
bool give_box_ccache(CandidateBox& box, const std::filesystem::path& dir);

// The uid candidate code runs as: the unprivileged uid when kgym runs as root
// with sandbox.drop_privileges and a sandbox mode other than none.
std::optional<uid_t> candidate_uid(const SandboxConfig& config, util::SandboxMode mode);

// Whether the candidate's uid (when it is not kgym's) can reach `python`
// and its environment: every directory on the interpreter's path (as given,
// links kept: a venv's bin/python is one) must let others enter, and a
// venv's pyvenv.cfg let them read. A venv under root's 0700 home fails
// here, with the directory and the fix, instead of as a candidate that
// cannot import torch, or imports the machine's instead.
std::expected<void, std::string> check_interpreter_reachable(const SandboxConfig& config, util::SandboxMode mode,
                                                             const std::string& python);

// The box of a warm candidate zygote (worker/zygote.h), started once per
// device: the same limits, namespaces, hidden directories and uid as
// make_candidate_box, with `worker_dir` (the worker's script) read-only and
// `scratch_root` writable at /tmp/kgym. Each candidate it forks gets a fresh
// subdirectory of `scratch_root`; only one runs per device at a time. No
// ccache: its workers load the build stage's output and never compile.
std::expected<CandidateBox, std::string> make_warm_candidate_box(
    const SandboxConfig& config, util::SandboxMode mode, const std::vector<std::filesystem::path>& hidden,
    const std::filesystem::path& scratch_root, const std::filesystem::path& worker_dir);

}  // namespace kgym::worker
