#pragma once
// The compile caches of the build stage (docs/build.md "The compile
// caches"). Both are keyed by one content key that trusted code computes
// before the candidate's box runs: every file of the candidate's directory,
// kgym's worker, the interpreter and its torch, the compilers, the build's
// environment, the backend and the init inputs. Equal keys mean the same
// code runs on the same toolchain, so what one build of a key leaves is
// only ever used by a build of exactly that code.
//
// - The build outputs (`builds/<key>/`: the build stage's manifest and
//   libraries) are written by trusted code only, after a build succeeded,
//   and copied out again for a later build of the key; no box sees them.
// - The ccache directory a box may write is its key's own
//   (`ccache-keyed/<key>/`), and ccache reads no configuration file from
//   it (CCACHE_CONFIGPATH=/dev/null): a planted ccache.conf or cache entry
//   reaches no other candidate's build.
#include <chrono>
#include <cstdint>
#include <expected>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "util/unique_fd.h"

namespace kgym::worker {

// What a build runs, as trusted code knows it before the box starts.
struct BuildInputs {
  std::filesystem::path candidate_dir;  // the candidate's copy: every file in it
  std::string candidate;                // the file of it the box imports
  std::string python;                   // the interpreter the box runs
  std::string backend;
  std::string execution;
  nlohmann::json init_inputs;    // what ModelNew is built with (null: not built)
  std::vector<std::string> env;  // "NAME=VALUE" the box gets beyond kgym's environment
};

// The key (64 hex digits) of `inputs`, or why there is none (a link or a
// special file in the candidate's directory, an interpreter that does not
// answer by `deadline`).
std::expected<std::string, std::string> build_key(const BuildInputs& inputs,
                                                  std::chrono::steady_clock::time_point deadline);

// Where each cache lives under kgym's cache root (KGYM_CACHE_DIR or
// ~/.cache/kgym).
std::filesystem::path build_cache_root();   // <root>/builds
std::filesystem::path ccache_cache_root();  // <root>/ccache-keyed

// Bounds (docs/build.md): the build outputs keep at most this many
// entries and bytes, the newest used first; the ccache directories at most
// this many (each ccache's own max_size below), where one older than an
// hour goes first.
constexpr std::size_t kBuildCacheMaxEntries = 256;
constexpr std::uintmax_t kBuildCacheMaxBytes = std::uintmax_t{2} << 30;
constexpr std::size_t kCcacheMaxDirs = 16;
constexpr std::string_view kCcacheMaxSize = "256M";

// Copies a build stage's output directory (manifest.json and one level of
// subdirectories of regular files; never a link, never deeper) to `to`,
// replacing what is there.
std::expected<void, std::string> copy_build_dir(const std::filesystem::path& from,
                                                const std::filesystem::path& to);

// The build of `key` copied to `to` (true), or false when the cache holds
// none (or it could not be read: the caller builds). Marks the entry used.
bool restore_build(const std::filesystem::path& root, const std::string& key,
                   const std::filesystem::path& to);

// Keeps `from` (a build's output, out of every box's reach) as the build of
// `key`: copied to a private name, renamed into place, the oldest entries
// beyond the bounds removed. An entry already there is kept.
std::expected<void, std::string> store_build(const std::filesystem::path& root, const std::string& key,
                                             const std::filesystem::path& from);

// The ccache directory of one build of a key, held while the build uses it
// (a shared flock on the directory): two builds of the same sources at once
// (two cases, two samples, two runs) share it, and neither removes it from
// under the other.
class CcacheDir {
 public:
  const std::filesystem::path& path() const { return path_; }

 private:
  friend std::expected<CcacheDir, std::string> keyed_ccache_dir(const std::filesystem::path& root,
                                                                const std::string& key);
  CcacheDir(std::filesystem::path path, util::UniqueFd held)
      : path_(std::move(path)), held_(std::move(held)) {}
  std::filesystem::path path_;
  util::UniqueFd held_;
};

// The ccache directory of `key`, made (or marked used) and held, after
// older ones beyond kCcacheMaxDirs that no build holds are removed. Fails
// when another process keeps it locked for removal past a few seconds.
std::expected<CcacheDir, std::string> keyed_ccache_dir(const std::filesystem::path& root,
                                                       const std::string& key);

// Removes the ccache directory of `key` (its build is in the build cache),
// unless a build holds it: the caller lets go of its own first.
void remove_ccache_dir(const std::filesystem::path& root, const std::string& key);

// The environment ("NAME=VALUE") that points a box's ccache at `dir` as
// the box sees it, with no configuration file read and at most
// kCcacheMaxSize; without a dir, ccache is switched off (torch 2 puts it
// before the compiler by itself when it is on PATH).
std::vector<std::string> ccache_env(const std::optional<std::filesystem::path>& dir);

}  // namespace kgym::worker
