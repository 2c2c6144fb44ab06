#pragma once
// The reproduction bundle of one verified case (docs/repro.md): a gzip'd
// ustar archive holding the problem file as verified, the candidate and its
// sibling sources, the verification request (seeds, sizes, tolerances,
// timing, backend, execution, threads), the recorded result.json and where
// it came from (kgym's version and commit, torch, the machine), with a
// manifest.json listing every file's SHA-256.
//
// `kgym repro` and `kgym run` (output.bundles) write one; `kgym verify
// --bundle` opens one. A bundle is data nobody vouches for: opening it checks
// the archive (util/tar.h: plain relative paths, regular files and
// directories only, limits), the manifest (format, every file listed and
// its hash matching) and the request before anything is extracted, and
// extracts only into a fresh private directory.
#include <cstdint>
#include <expected>
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/result.h"
#include "util/tar.h"
#include "util/temp_dir.h"
#include "verify/verifier.h"

namespace kgym::verify {

inline constexpr std::string_view kBundleFormat = "kgym-repro";
inline constexpr int kBundleFormatVersion = 1;

// The files at a bundle's root; the problem lies in problem/, the
// candidate's sources in candidate/.
struct BundleFiles {
  static constexpr std::string_view kManifest = "manifest.json";
  static constexpr std::string_view kRequest = "request.json";
  static constexpr std::string_view kResult = "result.json";
  static constexpr std::string_view kProvenance = "provenance.json";
  static constexpr std::string_view kProblemDir = "problem";
  static constexpr std::string_view kCandidateDir = "candidate";
};

// Writes the bundle of the case in `case_dir` (a case's or a sample's
// directory of a run) to `out`, atomically. The verification it holds is the
// one the run made: verify_request.json of the case, of its chosen sample
// for a case run with samples, else build_request.json for a case whose
// build failed. An error (one line naming the file and the fix) when the
// case was never verified or a file is missing or unreadable.
std::expected<void, std::string> write_case_bundle(const std::filesystem::path& case_dir,
                                                   const std::filesystem::path& out);

// The request file of the verification the result of the case in
// `case_dir` reports, as write_case_bundle looks for it; nullopt when the
// case ended before any (an agent that failed, a broken reference).
std::optional<std::filesystem::path> case_request_file(const std::filesystem::path& case_dir,
                                                       const CaseResult& result);

struct BundleLimits {
  util::TarLimits tar;                              // 4096 entries, 64 MiB a file, 256 MiB together
  std::uintmax_t max_archive_bytes = 256ULL << 20;  // the .tar.gz file itself
};

// A bundle checked and extracted.
struct OpenedBundle {
  std::unique_ptr<util::TempDir> dir;  // the extracted files; removed with this object
  // The request to verify: bundle_request() of the recorded one, with the
  // problem and candidate paths into `dir`.
  VerifyRequest request;
  CaseResult recorded;             // result.json
  nlohmann::json provenance;       // provenance.json
  std::vector<std::string> notes;  // what was changed for this machine
};

// Opens `file`; the request is bundle_request(request.json, `base`).
// Errors name the rule and, where there is one, the entry:
// "entry 3 'candidate/../x': '..' component", "manifest.json: sha256 of
// 'candidate/model_new.py' does not match its contents", ...
std::expected<OpenedBundle, std::string> open_bundle(const std::filesystem::path& file,
                                                     const VerifyRequest& base = {},
                                                     const BundleLimits& limits = {});

// A bundle is data, never a say in how it is checked (docs/repro.md "What
// a bundle may ask for"). The request to verify: `base` (the verifier's
// own: kgym's defaults, or --config's verifier and sandbox, the device,
// the interpreter) with ONLY these fields of the recorded request.json
// copied in: case_id, problem, candidate (bundle-relative; open_bundle
// checks them), run_seed, overrides (Python names), sizes, precision, and
// config.backend, config.execution, config.mode (an existing backend and
// execution; correctness or performance). Whatever `base` says, the
// candidate is the candidate (candidate_is_reference off), every static
// check and the op trace run, and nothing of a build, a warm worker or a
// scratch dir is carried. Each other field of `recorded` that asks for a
// value other than the one used adds a line to `notes` ("request.json's
// sandbox.drop_privileges false is ignored; this verification uses true").
// An error names the field when an allowed one is malformed.
std::expected<VerifyRequest, std::string> bundle_request(const nlohmann::json& recorded,
                                                         const VerifyRequest& base,
                                                         std::vector<std::string>& notes);

// Clears what a request says of the machine that made it (scratch dir,
// interpreter, warm workers, prebuilt extensions, precompiled headers,
// hidden trees, the build stage): what a bundle never carries or trusts.
void forget_machine(VerifyRequest& req);

// The manifest of `files` (paths with their bytes, sizes and SHA-256), as
// written into a bundle; exposed for tests that build hostile bundles.
nlohmann::json bundle_manifest(const std::string& case_id, const std::vector<util::TarEntry>& files);

}  // namespace kgym::verify
