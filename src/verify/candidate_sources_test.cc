#include "verify/candidate_sources.h"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>

namespace kgym::verify {
namespace {

namespace fs = std::filesystem;

class CandidateSourcesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = (fs::temp_directory_path() / "kgym-candidate-sources-test-XXXXXX").string();
    ASSERT_NE(::mkdtemp(pattern.data()), nullptr);
    dir_ = pattern;
    fs::create_directories(dir_ / "op");
    fs::create_directories(dir_ / "bench");
    problem_ = write("bench/1_ReLU.py", "class Model: pass\n");
  }
  void TearDown() override { fs::remove_all(dir_); }

  fs::path write(const std::string& name, const std::string& text) {
    std::ofstream(dir_ / name) << text;
    return dir_ / name;
  }

  fs::path dir_, problem_;
};

TEST_F(CandidateSourcesTest, SourcesBesideTheCandidateComeInNameOrder) {
  fs::path bridge = write("op/bridge.py", "from .kernel_impl import f\n");
  write("op/kernel_impl.py", "def f(x): return x\n");
  write("op/kernel.cpp", "int f();\n");
  write("op/notes.txt", "not a source\n");
  fs::create_directories(dir_ / "op" / "sub");
  write("op/sub/deeper.py", "x = 1\n");
  auto siblings = candidate_siblings(bridge, problem_);
  ASSERT_TRUE(siblings) << siblings.error();
  EXPECT_EQ(*siblings, (std::vector<fs::path>{dir_ / "op/kernel.cpp", dir_ / "op/kernel_impl.py"}));
}

TEST_F(CandidateSourcesTest, TheProblemAndCopiesOfItAreNeverTaken) {
  fs::path candidate = write("bench/model_new.py", "class ModelNew: pass\n");
  write("bench/task_desc.py", "class Model: pass\n");  // the problem's bytes under another name
  write("bench/helper.py", "y = 2\n");
  auto siblings = candidate_siblings(candidate, problem_);
  ASSERT_TRUE(siblings) << siblings.error();
  EXPECT_EQ(*siblings, std::vector<fs::path>{dir_ / "bench/helper.py"});
}

TEST_F(CandidateSourcesTest, LinksAreSkipped) {
  fs::path bridge = write("op/bridge.py", "import kernel_impl\n");
  fs::create_symlink(problem_, dir_ / "op" / "kernel_impl.py");
  auto siblings = candidate_siblings(bridge, problem_);
  ASSERT_TRUE(siblings) << siblings.error();
  EXPECT_TRUE(siblings->empty());
}

TEST_F(CandidateSourcesTest, LimitsAreErrorsThatNameTheFix) {
  fs::path bridge = write("op/bridge.py", "import a\n");
  write("op/a.py", std::string(100, 'x'));
  write("op/b.py", "b = 1\n");
  auto too_many = candidate_siblings(bridge, problem_, {.max_files = 2});
  ASSERT_FALSE(too_many);
  EXPECT_NE(too_many.error().find("holds 2 source files beside the candidate (at most 1"), std::string::npos);
  auto too_big = candidate_siblings(bridge, problem_, {.max_file_bytes = 50});
  ASSERT_FALSE(too_big);
  EXPECT_NE(too_big.error().find("a.py has 100 bytes; a candidate source may have at most 50"),
            std::string::npos);
  auto too_much = candidate_siblings(bridge, problem_, {.max_total_bytes = 110});
  ASSERT_FALSE(too_much);
  EXPECT_NE(too_much.error().find("exceed 110 bytes together"), std::string::npos);
}

// Issue 33: the candidate and its sources are copied only as regular
// files, sized before a byte is copied, never through a link.
TEST_F(CandidateSourcesTest, CopiesOnlyRegularFilesWithinTheLimit) {
  fs::path bridge = write("op/bridge.py", "class ModelNew: pass\n");
  fs::path to = dir_ / "copy.py";
  ASSERT_TRUE(copy_candidate_source(bridge, to));
  EXPECT_TRUE(fs::file_size(to) > 0);

  fs::create_symlink(problem_, dir_ / "op" / "linked.py");
  EXPECT_FALSE(copy_candidate_source(dir_ / "op" / "linked.py", dir_ / "copy2.py"));
  ASSERT_EQ(::mkfifo((dir_ / "op" / "fifo.py").c_str(), 0600), 0);
  auto fifo = copy_candidate_source(dir_ / "op" / "fifo.py", dir_ / "copy3.py");
  ASSERT_FALSE(fifo);
  EXPECT_NE(fifo.error().find("FIFO"), std::string::npos) << fifo.error();

  fs::resize_file(write("op/sparse.py", ""), 1100ULL << 20);  // 1.1 GB of holes
  auto sparse = copy_candidate_source(dir_ / "op" / "sparse.py", dir_ / "copy4.py");
  ASSERT_FALSE(sparse);
  EXPECT_NE(sparse.error().find("more than the 1048576 allowed"), std::string::npos) << sparse.error();
  EXPECT_FALSE(fs::exists(dir_ / "copy4.py"));
}

}  // namespace
}  // namespace kgym::verify
