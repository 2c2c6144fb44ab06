#include "worker/compile_cache.h"

#include <fcntl.h>
#include <sys/file.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <thread>

#include <fmt/format.h>

#include "util/fs.h"
#include "util/temp_dir.h"
#include "util/unique_fd.h"

namespace kgym::worker {
namespace {

namespace fs = std::filesystem;

void write(const fs::path& path, const std::string& text) {
  fs::create_directories(path.parent_path());
  std::ofstream(path) << text;
}

std::chrono::steady_clock::time_point soon() {
  return std::chrono::steady_clock::now() + std::chrono::seconds(60);
}

BuildInputs inputs_in(const fs::path& candidate_dir) {
  return {.candidate_dir = candidate_dir,
          .candidate = "model_new.py",
          .python = "/usr/bin/python3",
          .backend = "cpu",
          .execution = "device",
          .init_inputs = nullptr,
          .env = {}};
}

// A build stage's output: its manifest and one library.
void make_build(const fs::path& dir, const std::string& library) {
  write(dir / "manifest.json", R"({"extensions": []})");
  write(dir / "e0" / "ext.so", library);
}

TEST(BuildKey, CoversEveryCandidateFileAndWhatTheBuildRunsWith) {
  util::TempDir temp("kgym-key");
  write(temp.path() / "c" / "model_new.py", "import torch\n");
  write(temp.path() / "c" / "kernel.cpp", "int f() { return 1; }\n");
  auto key = build_key(inputs_in(temp.path() / "c"), soon());
  ASSERT_TRUE(key) << key.error();
  EXPECT_EQ(key->size(), 64u);
  EXPECT_EQ(build_key(inputs_in(temp.path() / "c"), soon()), key) << "the same inputs give the same key";

  write(temp.path() / "c" / "kernel.cpp", "int f() { return 2; }\n");
  auto changed_file = build_key(inputs_in(temp.path() / "c"), soon());
  EXPECT_NE(changed_file, key) << "a sibling source's contents are part of the key";
  write(temp.path() / "c" / "extra.h", "");
  auto added_file = build_key(inputs_in(temp.path() / "c"), soon());
  EXPECT_NE(added_file, changed_file) << "so is a file's presence";

  BuildInputs other = inputs_in(temp.path() / "c");
  other.candidate = "kernel.cpp";
  EXPECT_NE(build_key(other, soon()), added_file) << "which file of the directory is imported";
  other = inputs_in(temp.path() / "c");
  other.init_inputs = nlohmann::json::array({64});
  EXPECT_NE(build_key(other, soon()), added_file);
  other = inputs_in(temp.path() / "c");
  other.env = {"TORCH_CUDA_ARCH_LIST=9.0"};
  EXPECT_NE(build_key(other, soon()), added_file);
  other = inputs_in(temp.path() / "c");
  other.backend = "cuda";
  EXPECT_NE(build_key(other, soon()), added_file);
}

TEST(BuildKey, ALinkInTheCandidatesDirectoryGivesNoKey) {
  util::TempDir temp("kgym-key");
  write(temp.path() / "c" / "model_new.py", "import torch\n");
  fs::create_symlink("/etc/passwd", temp.path() / "c" / "elsewhere.py");
  auto key = build_key(inputs_in(temp.path() / "c"), soon());
  ASSERT_FALSE(key);
  EXPECT_NE(key.error().find("is a link"), std::string::npos) << key.error();
}

TEST(BuildCache, AStoredBuildIsRestoredForItsKeyOnly) {
  util::TempDir temp("kgym-builds");
  fs::path root = temp.path() / "builds";
  make_build(temp.path() / "built", "library of A");
  EXPECT_FALSE(restore_build(root, "keyA", temp.path() / "out"));
  ASSERT_TRUE(store_build(root, "keyA", temp.path() / "built"));
  EXPECT_EQ(fs::status(root).permissions() & fs::perms::all, fs::perms::owner_all);
  EXPECT_FALSE(restore_build(root, "keyB", temp.path() / "out"));
  ASSERT_TRUE(restore_build(root, "keyA", temp.path() / "out"));
  EXPECT_EQ(util::read_file(temp.path() / "out" / "e0" / "ext.so"), "library of A");
  // A second store of the key keeps the first.
  make_build(temp.path() / "again", "library of A, built again");
  ASSERT_TRUE(store_build(root, "keyA", temp.path() / "again"));
  ASSERT_TRUE(restore_build(root, "keyA", temp.path() / "out"));
  EXPECT_EQ(util::read_file(temp.path() / "out" / "e0" / "ext.so"), "library of A");
}

TEST(BuildCache, AnOutputWithALinkOrWithoutAManifestIsNotKept) {
  util::TempDir temp("kgym-builds");
  make_build(temp.path() / "linked", "x");
  fs::create_symlink("/etc/passwd", temp.path() / "linked" / "e0" / "passwd");
  EXPECT_FALSE(store_build(temp.path() / "builds", "k1", temp.path() / "linked"));
  write(temp.path() / "bare" / "e0" / "ext.so", "x");
  EXPECT_FALSE(store_build(temp.path() / "builds", "k2", temp.path() / "bare"));
  EXPECT_FALSE(restore_build(temp.path() / "builds", "k1", temp.path() / "out"));
  EXPECT_FALSE(restore_build(temp.path() / "builds", "k2", temp.path() / "out"));
}

TEST(BuildCache, AStoreRemovesTheLeastRecentlyUsedBeyondTheBound) {
  util::TempDir temp("kgym-builds");
  fs::path root = temp.path() / "builds";
  make_build(temp.path() / "built", "x");
  auto old = fs::file_time_type::clock::now() - std::chrono::hours(2);
  for (std::size_t i = 0; i < kBuildCacheMaxEntries; ++i) {
    make_build(root / fmt::format("old{}", i), "x");
    fs::last_write_time(root / fmt::format("old{}", i), old + std::chrono::seconds(i));
  }
  ASSERT_TRUE(store_build(root, "new", temp.path() / "built"));
  EXPECT_TRUE(fs::exists(root / "new"));
  EXPECT_FALSE(fs::exists(root / "old0")) << "the least recently used went";
  EXPECT_TRUE(fs::exists(root / "old1"));
}

// Directories old0 .. old<n-1> under `root`, last used two hours ago, old0 first.
void make_old_dirs(const fs::path& root, std::size_t n) {
  auto old = fs::file_time_type::clock::now() - std::chrono::hours(2);
  for (std::size_t i = 0; i < n; ++i) {
    fs::create_directories(root / fmt::format("old{}", i));
    fs::last_write_time(root / fmt::format("old{}", i), old + std::chrono::seconds(i));
  }
}

TEST(CcacheDirs, EachKeyHasItsOwnAndOldOnesArePruned) {
  util::TempDir temp("kgym-ccache");
  fs::path root = temp.path() / "ccache-keyed";
  make_old_dirs(root, kCcacheMaxDirs + 4);
  fs::create_directories(root / "recent");
  auto dir = keyed_ccache_dir(root, "mine");
  ASSERT_TRUE(dir) << dir.error();
  EXPECT_EQ(dir->path(), root / "mine");
  std::size_t left = std::distance(fs::directory_iterator(root), fs::directory_iterator());
  EXPECT_EQ(left, kCcacheMaxDirs) << "the oldest went, the key's own and the recent one stayed";
  EXPECT_TRUE(fs::exists(root / "recent"));
  dir = std::unexpected("let go");
  remove_ccache_dir(root, "mine");
  EXPECT_FALSE(fs::exists(root / "mine"));
}

// Two builds of the same sources at once share their key's ccache: the one
// that ends first must not remove it from under the other (whose compiler
// would then fail), and the last one out removes it.
TEST(CcacheDirs, ABuildStillUsingTheDirectoryKeepsIt) {
  util::TempDir temp("kgym-ccache");
  fs::path root = temp.path() / "ccache-keyed";
  auto first = keyed_ccache_dir(root, "same");
  auto second = keyed_ccache_dir(root, "same");
  ASSERT_TRUE(first && second);
  EXPECT_EQ(first->path(), second->path());
  std::ofstream(second->path() / "object") << "compiled";
  first = std::unexpected("ended");
  remove_ccache_dir(root, "same");
  EXPECT_TRUE(fs::exists(root / "same" / "object")) << "the second build still holds it";
  second = std::unexpected("ended");
  remove_ccache_dir(root, "same");
  EXPECT_FALSE(fs::exists(root / "same"));
}

TEST(CcacheDirs, PruningPassesOverAHeldDirectory) {
  util::TempDir temp("kgym-ccache");
  fs::path root = temp.path() / "ccache-keyed";
  auto held = keyed_ccache_dir(root, "held");
  ASSERT_TRUE(held) << held.error();
  make_old_dirs(root, kCcacheMaxDirs + 2);
  fs::last_write_time(root / "held", fs::file_time_type::clock::now() - std::chrono::hours(3));
  ASSERT_TRUE(keyed_ccache_dir(root, "new"));
  EXPECT_TRUE(fs::exists(root / "held")) << "the oldest, but a build holds it";
  EXPECT_FALSE(fs::exists(root / "old0"));
}

// A directory a remover has locked and is removing is not handed out: the
// maker waits for the remover, then makes it again.
TEST(CcacheDirs, ADirectoryBeingRemovedIsMadeAgain) {
  util::TempDir temp("kgym-ccache");
  fs::path root = temp.path() / "ccache-keyed";
  fs::create_directories(root / "key");
  util::UniqueFd remover(::open((root / "key").c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  ASSERT_TRUE(remover);
  ASSERT_EQ(::flock(remover.get(), LOCK_EX), 0);
  std::thread removing([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    fs::remove_all(root / "key");
    remover.reset();
  });
  auto dir = keyed_ccache_dir(root, "key");
  removing.join();
  ASSERT_TRUE(dir) << dir.error();
  EXPECT_TRUE(fs::is_directory(root / "key")) << "made again";
  util::UniqueFd probe(::open((root / "key").c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  ASSERT_TRUE(probe);
  EXPECT_NE(::flock(probe.get(), LOCK_EX | LOCK_NB), 0) << "and held by the build";
}

TEST(CcacheDirs, TheEnvironmentReadsNoConfigFileAndIsOffWithoutADirectory) {
  auto off = ccache_env(std::nullopt);
  EXPECT_EQ(off, (std::vector<std::string>{"CCACHE_CONFIGPATH=/dev/null", "CCACHE_DISABLE=1"}));
  auto on = ccache_env(fs::path("/tmp/kgym-ccache"));
  EXPECT_NE(std::ranges::find(on, "CCACHE_CONFIGPATH=/dev/null"), on.end());
  EXPECT_NE(std::ranges::find(on, "CCACHE_DIR=/tmp/kgym-ccache"), on.end());
  EXPECT_EQ(std::ranges::find(on, "CCACHE_DISABLE=1"), on.end());
}

}  // namespace
}  // namespace kgym::worker
