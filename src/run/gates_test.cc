#include "run/gates.h"

#include <gtest/gtest.h>

#include "util/fs.h"
#include "util/temp_dir.h"

namespace kgym::run {
namespace {

class GatesTest : public ::testing::Test {
 protected:
  void write(const std::string& name, const std::string& text) {
    ASSERT_TRUE(util::write_file_atomic(dir_.path() / name, text));
  }
  GateResult check(GateConfig gate) {
    GateContext context{dir_.path(),
                        std::filesystem::path(KGYM_SOURCE_DIR) / "data/sample/level1/1_ReLU.py",
                        "cpu",
                        {{"case_id", "level1/1_ReLU"}}};
    return check_gate(gate, context);
  }
  static GateConfig gate(std::string kind, std::string file, std::vector<std::string> items = {}) {
    GateConfig g;
    g.kind = std::move(kind);
    g.file = std::move(file);
    g.items = std::move(items);
    return g;
  }
  util::TempDir dir_{"kgym-gates"};
};

TEST_F(GatesTest, NonEmptyNeedsAFileWithText) {
  EXPECT_EQ(check(gate("non_empty", "PLAN.md")).detail, "PLAN.md does not exist");
  write("PLAN.md", " \n\n");
  EXPECT_EQ(check(gate("non_empty", "PLAN.md")).detail, "PLAN.md is empty");
  write("PLAN.md", "# Plan\n");
  EXPECT_TRUE(check(gate("non_empty", "PLAN.md")).ok);
}

TEST_F(GatesTest, HeadingsMatchExactlyOrByTitle) {
  write("PLAN.md", "# Plan\n\n## Goal\ntext\n```\n## Steps (inside a code fence)\n```\n### risks  \n");
  EXPECT_TRUE(check(gate("headings", "PLAN.md", {"## Goal", "Risks", "plan"})).ok);
  GateResult r = check(gate("headings", "PLAN.md", {"## Goal", "## Steps", "Testing"}));
  EXPECT_FALSE(r.ok);
  EXPECT_EQ(r.detail, "PLAN.md lacks heading '## Steps', 'Testing'");
  EXPECT_EQ(r.gate, "headings PLAN.md");
}

TEST_F(GatesTest, SectionsCountsLevelTwoHeadings) {
  write("DESIGN.md", "# Design\n## One\n## Two\n### Not counted\n");
  GateConfig g = gate("sections", "DESIGN.md");
  g.min_count = 3;
  EXPECT_EQ(check(g).detail, "DESIGN.md has 2 '## ' section(s), needs at least 3");
  g.min_count = 2;
  EXPECT_TRUE(check(g).ok);
}

TEST_F(GatesTest, ForbiddenWordsNameTheLine) {
  write("PLAN.md", "# Plan\nok\nthe tiling is tbd\n步骤：待定\n");
  GateResult r = check(gate("forbidden_words", "PLAN.md", {"TBD", "待定", "TODO"}));
  EXPECT_FALSE(r.ok);
  EXPECT_EQ(r.detail, "PLAN.md contains 'TBD' (line 3), '待定' (line 4)");
  write("PLAN.md", "# Plan\nall decided\n");
  EXPECT_TRUE(check(gate("forbidden_words", "PLAN.md", {"TBD", "待定"})).ok);
}

TEST_F(GatesTest, PythonSymbolsAreTopLevelDefinitions) {
  write("golden.py",
        "import torch\nfrom x import helper as ModelRef\n\nclass ModelNew(torch.nn.Module):\n"
        "    def forward(self, x):\n        inner = 1\n        return x\n\n"
        "async def run():\n    pass\nBATCH = 4\ns = '''\ndef fake(): pass\n'''\n");
  EXPECT_TRUE(check(gate("python_symbols", "golden.py", {"ModelNew", "run", "BATCH", "ModelRef"})).ok);
  GateResult r = check(gate("python_symbols", "golden.py", {"forward", "inner", "fake", "ModelNew"}));
  EXPECT_EQ(r.detail, "golden.py does not define forward, inner, fake");
}

TEST_F(GatesTest, CommandMustExitZeroAndPrintTheMarker) {
  write("check.sh", "echo checking $1\necho GOLDEN_OK\n");
  GateConfig g;
  g.kind = "command";
  g.argv = {"sh", "check.sh", "{case_id}"};
  g.marker = "GOLDEN_OK";
  EXPECT_TRUE(check(g).ok) << check(g).detail;
  g.marker = "MISSING";
  EXPECT_EQ(check(g).detail, "did not print 'MISSING' (last line: GOLDEN_OK)");
  write("fail.sh", "echo broken for $1; exit 3\n");
  g.argv = {"sh", "fail.sh", "{case_id}"};
  GateResult r = check(g);
  EXPECT_FALSE(r.ok);
  EXPECT_NE(r.detail.find("broken for level1/1_ReLU"), std::string::npos) << r.detail;
}

TEST_F(GatesTest, StaticCheckRunsKgymsOwnRules) {
  write("model_new.py",
        "import torch\nclass ModelNew(torch.nn.Module):\n    def forward(self, x):\n"
        "        return torch.relu(x)\n");
  GateResult r = check(gate("static_check", "model_new.py"));
  EXPECT_FALSE(r.ok);
  EXPECT_NE(r.detail.find("static."), std::string::npos) << r.detail;
  auto honest = util::read_file(std::filesystem::path(KGYM_SOURCE_DIR) /
                                "data/sample/solutions/level1/1_ReLU/model_new.py");
  ASSERT_TRUE(honest);
  write("model_new.py", *honest);
  EXPECT_TRUE(check(gate("static_check", "model_new.py")).ok)
      << check(gate("static_check", "model_new.py")).detail;
}

TEST_F(GatesTest, StageChecksArtifactsFirstAndRepromptListsFailures) {
  StageConfig stage;
  stage.name = "plan";
  stage.artifacts = {"PLAN.md"};
  stage.gates = {gate("headings", "PLAN.md", {"Goal"})};
  auto results = check_stage(stage, {dir_.path(), {}, "cpu", {}});
  ASSERT_EQ(results.size(), 2u);
  EXPECT_EQ(results[0].gate, "non_empty PLAN.md");
  std::string text = reprompt_text("Write PLAN.md.", results, 2, 3);
  EXPECT_NE(text.find("Write PLAN.md.\n\n## Checks that failed"), std::string::npos) << text;
  EXPECT_NE(text.find("attempt 2 of 3"), std::string::npos);
  EXPECT_NE(text.find("- non_empty PLAN.md: PLAN.md does not exist\n"), std::string::npos) << text;
  EXPECT_NE(text.find("- headings PLAN.md: PLAN.md does not exist\n"), std::string::npos) << text;
}

}  // namespace
}  // namespace kgym::run
