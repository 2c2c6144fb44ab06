#include "core/case_set.h"
#include "util/temp_dir.h"

#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace kgym {
namespace {

namespace fs = std::filesystem;

// A dataset in a fresh temp dir, removed afterwards.
class CaseSetTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_FALSE(temp_.path().empty());
    root_ = temp_.path();
  }

  void touch(const std::string& relative) {
    fs::path path = root_ / relative;
    fs::create_directories(path.parent_path());
    std::ofstream(path) << "# problem\n";
  }
  void touch_level(const std::string& level, const std::vector<std::string>& stems) {
    for (const auto& stem : stems) touch(level + "/" + stem + ".py");
  }
  // The three-level set most tests use.
  void make_default_set() {
    touch_level("level1", {"1_Square_matmul", "2_Matmul", "3_Batched", "5_Conv", "19_ReLU", "20_LeakyReLU",
                           "99_TripletMarginLoss", "100_HingeLoss"});
    touch_level("level2", {"9_Matmul_Mish", "33_Gemm_Scale_BatchNorm", "39_Gemm_Scale_BatchNorm"});
    touch_level("pto_case", {"1_add", "2_mul", "4_exp", "6_log", "7_sqrt"});
  }

  std::vector<std::string> ids(const std::string& selector, const std::string& level = "level1") {
    auto cases = select_cases(root_, level, selector);
    EXPECT_TRUE(cases.has_value()) << "selector '" << selector
                                   << "': " << (cases ? "" : cases.error().message);
    std::vector<std::string> out;
    if (cases) {
      for (const Case& c : *cases) out.push_back(c.id());
    }
    return out;
  }
  std::string error(const std::string& selector, const std::string& level = "level1") {
    auto cases = select_cases(root_, level, selector);
    EXPECT_FALSE(cases.has_value()) << "selector '" << selector << "' was accepted";
    return cases ? std::string() : cases.error().message;
  }

  util::TempDir temp_{"kgym-cases"};
  fs::path root_;
};

using Ids = std::vector<std::string>;

#define EXPECT_CONTAINS(text, fragment)                          \
  EXPECT_NE(std::string(text).find(fragment), std::string::npos) \
      << "'" << (text) << "' lacks '" << (fragment) << "'"

TEST_F(CaseSetTest, CaseNamesAndAbsoluteFile) {
  make_default_set();
  auto cases = select_cases(root_, "level1", "19");
  ASSERT_TRUE(cases.has_value()) << cases.error().message;
  ASSERT_EQ(cases->size(), 1u);
  const Case& c = cases->front();
  EXPECT_EQ(c.level, "level1");
  EXPECT_EQ(c.number, 19);
  EXPECT_EQ(c.name, "ReLU");
  EXPECT_EQ(c.stem(), "19_ReLU");
  EXPECT_EQ(c.id(), "level1/19_ReLU");
  EXPECT_TRUE(c.file.is_absolute());
  EXPECT_TRUE(fs::equivalent(c.file, root_ / "level1/19_ReLU.py"));
}

TEST_F(CaseSetTest, RelativeBenchDirGivesAbsoluteFiles) {
  make_default_set();
  fs::path old = fs::current_path();
  fs::current_path(root_.parent_path());
  auto cases = select_cases(root_.filename(), "level1", "2");
  fs::current_path(old);
  ASSERT_TRUE(cases.has_value()) << cases.error().message;
  EXPECT_TRUE(cases->front().file.is_absolute());
  EXPECT_TRUE(fs::exists(cases->front().file));
}

TEST_F(CaseSetTest, ScanIgnoresFilesThatAreNotProblems) {
  touch_level("level1", {"1_A", "2_B"});
  for (const char* f : {"level1/__init__.py", "level1/README.md", "level1/3_C.pyc", "level1/_4_D.py",
                        "level1/5.py", "level1/6_.py", "level1/x7_E.py", "level1/__pycache__/8_F.py",
                        "notes/readme.txt", ".git/1_X.py", "9_Top.py"}) {
    touch(f);
  }
  EXPECT_EQ(ids(""), (Ids{"level1/1_A", "level1/2_B"}));
  EXPECT_CONTAINS(error("notes=1"), "levels there: level1");
}

TEST_F(CaseSetTest, NumberAndFullNameSelectTheSameCase) {
  make_default_set();
  EXPECT_EQ(ids("19"), (Ids{"level1/19_ReLU"}));
  EXPECT_EQ(ids("19_ReLU"), (Ids{"level1/19_ReLU"}));
  EXPECT_EQ(ids("level2=33_Gemm_Scale_BatchNorm"), (Ids{"level2/33_Gemm_Scale_BatchNorm"}));
  EXPECT_EQ(ids("level2=39"), (Ids{"level2/39_Gemm_Scale_BatchNorm"}));
}

TEST_F(CaseSetTest, FullNameMustMatchExactly) {
  make_default_set();
  std::string message = error("19_Relu");
  EXPECT_CONTAINS(message, "no case 19_Relu in level1; did you mean 19_ReLU?");
  EXPECT_CONTAINS(message, "at position 1");
  EXPECT_CONTAINS(error("19_ReLU.py"), "did you mean 19_ReLU?");
  EXPECT_CONTAINS(error("19_ReLUU"), "did you mean 19_ReLU?");
  EXPECT_CONTAINS(error("7_HingeLos"), "did you mean 100_HingeLoss?");
  EXPECT_CONTAINS(error("20_ReLU"), "did you mean 19_ReLU or 20_LeakyReLU?");
  // Same name under another number: the number decides.
  message = error("level2=34_Gemm_Scale_BatchNorm");
  EXPECT_CONTAINS(message, "33_Gemm_Scale_BatchNorm");
  EXPECT_CONTAINS(message, "39_Gemm_Scale_BatchNorm");
  EXPECT_CONTAINS(error("level2=50_Unrelated"), "ids in level2 run 9..39");
}

TEST_F(CaseSetTest, MissingNumberListsNearbyIds) {
  make_default_set();
  EXPECT_CONTAINS(error("101"),
                  "no case 101 in level1; nearby: 20_LeakyReLU, 99_TripletMarginLoss, 100_HingeLoss");
  EXPECT_CONTAINS(error("4"), "nearby: 2_Matmul, 3_Batched, 5_Conv");
  EXPECT_CONTAINS(error("0"), "no case 0 in level1");
}

TEST_F(CaseSetTest, RangesSkipMissingIds) {
  make_default_set();
  EXPECT_EQ(ids("1:5"),
            (Ids{"level1/1_Square_matmul", "level1/2_Matmul", "level1/3_Batched", "level1/5_Conv"}));
  EXPECT_EQ(ids("3:4,19:19"), (Ids{"level1/3_Batched", "level1/19_ReLU"}));
}

TEST_F(CaseSetTest, RangeThatMatchesNothingIsAnError) {
  make_default_set();
  std::string message = error("1,200:300");
  EXPECT_CONTAINS(message,
                  "at position 3: range 200:300 matches no problem in level1; ids in level1 run 1..100");
  EXPECT_CONTAINS(error("level2=10:20"), "range 10:20 matches no problem in level2");
}

TEST_F(CaseSetTest, PerLevelSelection) {
  make_default_set();
  EXPECT_EQ(ids("level1=1,3;level2=9;pto_case=1:6"),
            (Ids{"level1/1_Square_matmul", "level1/3_Batched", "level2/9_Matmul_Mish", "pto_case/1_add",
                 "pto_case/2_mul", "pto_case/4_exp", "pto_case/6_log"}));
}

TEST_F(CaseSetTest, WholeLevelsAndEmptySelector) {
  make_default_set();
  EXPECT_EQ(ids("").size(), 8u);
  EXPECT_EQ(ids("  ", "pto_case").size(), 5u);
  EXPECT_EQ(ids("level2="), (Ids{"level2/9_Matmul_Mish", "level2/33_Gemm_Scale_BatchNorm",
                                 "level2/39_Gemm_Scale_BatchNorm"}));
  auto both = ids("level1=;level2=33");
  ASSERT_EQ(both.size(), 9u);
  EXPECT_EQ(both.back(), "level2/33_Gemm_Scale_BatchNorm");
}

TEST_F(CaseSetTest, DuplicatesAcrossFormsAreRemoved) {
  make_default_set();
  EXPECT_EQ(ids("19, 19_ReLU, 18:20; level1=19 ; level1=20;20"),
            (Ids{"level1/19_ReLU", "level1/20_LeakyReLU"}));
  EXPECT_EQ(ids("level1=;1:3").size(), 8u);
}

TEST_F(CaseSetTest, OrderIsNaturalLevelOrderThenId) {
  touch_level("level10", {"1_X"});
  touch_level("level2", {"10_Y", "9_Z"});
  touch_level("level1", {"2_W"});
  EXPECT_EQ(ids("level10=1;level2=;level1=2"),
            (Ids{"level1/2_W", "level2/9_Z", "level2/10_Y", "level10/1_X"}));
}

TEST_F(CaseSetTest, UnknownLevelListsTheLevelsPresent) {
  make_default_set();
  touch_level("level10", {"1_X"});
  std::string message = error("level1=1;level9=1");
  EXPECT_CONTAINS(message, "at position 10: no level 'level9' in ");
  EXPECT_CONTAINS(message, "levels there: level1, level2, level10, pto_case");
  EXPECT_CONTAINS(error("", "level3"), "default level 'level3' not found");
}

TEST_F(CaseSetTest, DuplicateNumberIsAnErrorNamingBothFiles) {
  touch_level("level1", {"1_A"});
  touch_level("level3", {"33_A", "33_B", "34_C"});
  std::string message = error("level3=34");
  EXPECT_CONTAINS(message, "level3 has two problems numbered 33");
  EXPECT_CONTAINS(message, "33_A.py");
  EXPECT_CONTAINS(message, "33_B.py");
  EXPECT_EQ(ids("1"), Ids{"level1/1_A"}) << "a level that is not selected is not checked";
}

TEST_F(CaseSetTest, EveryErrorOfOneSelectorIsReported) {
  make_default_set();
  std::string message = error("19_Relu,500;level9=1;level2=1:5");
  EXPECT_EQ(std::count(message.begin(), message.end(), '\n'), 3) << message;
  EXPECT_CONTAINS(message, "19_Relu");
  EXPECT_CONTAINS(message, "no case 500");
  EXPECT_CONTAINS(message, "level9");
  EXPECT_CONTAINS(message, "range 1:5");

  // Syntax errors do not hide the other problems; lines follow the selector.
  message = error("19_Relu,1:2!,101");
  EXPECT_EQ(std::count(message.begin(), message.end(), '\n'), 2) << message;
  EXPECT_LT(message.find("19_Relu in level1"), message.find("unexpected '!'"));
  EXPECT_LT(message.find("unexpected '!'"), message.find("no case 101"));
}

TEST_F(CaseSetTest, ParseErrorsCarryPositionAndSelector) {
  make_default_set();
  EXPECT_CONTAINS(error("1,2!"), "cases '1,2!' at position 4: unexpected '!'");
  EXPECT_CONTAINS(error("-1"), "negative");
  EXPECT_CONTAINS(error("99999999999"), "too large");
  EXPECT_CONTAINS(error("1:"), "has no end");
  EXPECT_CONTAINS(error(":3"), "has no start");
}

TEST_F(CaseSetTest, MissingDatasetIsAnError) {
  EXPECT_CONTAINS(error(""), "default level 'level1' not found");  // empty dir: no levels
  fs::path missing = root_ / "nope";
  auto cases = select_cases(missing, "level1", "1,2!");
  ASSERT_FALSE(cases.has_value());
  EXPECT_CONTAINS(cases.error().message, "does not exist; set bench_dir");
  EXPECT_CONTAINS(cases.error().message, "unexpected '!'");
}

fs::path kernel_bench_dir() {
  for (fs::path dir :
       {fs::path("/work/shared/KernelBench"), fs::path(KGYM_SOURCE_DIR) / "../shared/KernelBench"}) {
    if (fs::is_directory(dir / "level1")) return dir;
  }
  return {};
}

TEST(KernelBench, SelectsAcrossLevels) {
  fs::path dir = kernel_bench_dir();
  if (dir.empty()) GTEST_SKIP() << "KernelBench not found beside the source tree";
  auto cases = select_cases(dir, "level1", "level1=1:3;level2=9");
  ASSERT_TRUE(cases.has_value()) << cases.error().message;
  ASSERT_EQ(cases->size(), 4u);
  EXPECT_EQ((*cases)[0].id(), "level1/1_Square_matrix_multiplication_");
  EXPECT_EQ((*cases)[3].level, "level2");
  EXPECT_EQ((*cases)[3].number, 9);
  for (const Case& c : *cases) EXPECT_TRUE(fs::is_regular_file(c.file)) << c.file;
}

}  // namespace
}  // namespace kgym
