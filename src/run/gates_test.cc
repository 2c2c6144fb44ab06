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
                        &backend_named("cpu"),
                        {{"case_id", "level1/1_ReLU"}}};
    return check_file_gate(gate, context);
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

// Issue 33: a gate reads the agent's file, never what a link it made
// points to (a hidden file quoted back in a re-prompt), at any depth.
TEST_F(GatesTest, FileGatesNeverFollowALinkTheAgentMade) {
  util::TempDir hidden("kgym-gates-hidden");
  ASSERT_TRUE(util::write_file_atomic(hidden.path() / "secret.md", "# SECRET-TOKEN\n## SECRET-TOKEN\n"));
  std::filesystem::create_symlink(hidden.path() / "secret.md", dir_.path() / "PLAN.md");
  std::filesystem::create_directory_symlink(hidden.path(), dir_.path() / "docs");
  for (const GateConfig& g :
       {gate("headings", "PLAN.md", {"Plan"}), gate("forbidden_words", "PLAN.md", {"x"}),
        gate("sections", "docs/secret.md"), gate("headings", "docs/secret.md", {"Plan"}),
        gate("non_empty", "docs/secret.md"), gate("static_check", "PLAN.md")}) {
    GateResult r = check(g);
    EXPECT_FALSE(r.ok) << gate_name(g);
    EXPECT_EQ(r.detail.find("SECRET-TOKEN"), std::string::npos) << r.detail;
  }
  EXPECT_NE(check(gate("non_empty", "PLAN.md")).detail.find("symbolic link"), std::string::npos);
  EXPECT_EQ(check(gate("non_empty", "docs/secret.md")).detail, "docs/secret.md does not exist");
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

TEST_F(GatesTest, CommandIsAChildSpecRunInTheWorkDir) {
  GateConfig g;
  g.kind = "command";
  g.argv = {"sh", "check.sh", "{case_id}"};
  g.timeout = std::chrono::seconds(7);
  GateContext context{dir_.path(), {}, &backend_named("cpu"), {{"case_id", "level1/1_ReLU"}}};
  GateCommand command = gate_command(g, context, dir_.path() / "gate.log");
  EXPECT_EQ(command.spec.argv, (std::vector<std::string>{"sh", "check.sh", "level1/1_ReLU"}));
  EXPECT_EQ(command.spec.cwd, dir_.path());
  EXPECT_EQ(command.spec.log_file, dir_.path() / "gate.log");
  EXPECT_EQ(command.timeout, std::chrono::seconds(7));
  EXPECT_FALSE(check(g).ok) << "a command gate never runs in-process";
}

TEST_F(GatesTest, CommandMustExitZeroAndPrintTheMarker) {
  GateConfig g;
  g.kind = "command";
  g.argv = {"sh", "check.sh"};
  g.marker = "GOLDEN_OK";
  g.timeout = std::chrono::seconds(5);
  util::ProcessExit ok{};
  EXPECT_TRUE(command_gate_result(g, ok, false, "checking\nGOLDEN_OK\n").ok);
  GateResult missing = command_gate_result(g, ok, false, "checking\nall fine\n");
  EXPECT_EQ(missing.detail, "did not print 'GOLDEN_OK' (last line: all fine)");
  EXPECT_EQ(missing.gate, "command sh check.sh");
  GateResult failed = command_gate_result(g, {util::ProcessExit::Kind::kExited, 3}, false,
                                          "GOLDEN_OK\nbroken for level1/1_ReLU\n");
  EXPECT_FALSE(failed.ok);
  EXPECT_EQ(failed.detail, "ended with exit code 3: broken for level1/1_ReLU");
  GateResult late = command_gate_result(g, {util::ProcessExit::Kind::kSignaled, 15}, true, "GOLDEN_OK\n");
  EXPECT_EQ(late.detail, "timed out after 5 s");
}

// The stepper stops at each command gate and resumes with its exit; the
// marker is read from the log the child wrote, a fresh one per command.
TEST_F(GatesTest, StageChecksStopAtEachCommandAndReadItsLog) {
  write("PLAN.md", "# Plan\n## Goal\n");
  StageConfig stage;
  stage.name = "plan";
  stage.artifacts = {"PLAN.md"};
  GateConfig first;
  first.kind = "command";
  first.argv = {"first"};
  first.marker = "FIRST_OK";
  GateConfig second = first;
  second.argv = {"second"};
  second.marker = "SECOND_OK";
  stage.gates = {gate("headings", "PLAN.md", {"Goal"}), first, second};
  std::filesystem::path logs = dir_.path() / "logs";
  std::filesystem::create_directories(logs);
  ASSERT_TRUE(util::write_file_atomic(logs / "gate3.log", "FIRST_OK from a run before\n"));
  StageChecks checks(stage, {dir_.path(), {}, &backend_named("cpu"), {}}, logs);
  auto command = checks.next();
  ASSERT_TRUE(command);
  EXPECT_EQ(command->spec.argv.front(), "first");
  EXPECT_EQ(checks.results().size(), 2u);  // the artifact and the headings, checked in-process
  EXPECT_FALSE(std::filesystem::exists(command->spec.log_file)) << "a stale log could carry a marker";
  ASSERT_TRUE(util::write_file_atomic(command->spec.log_file, "FIRST_OK\n"));
  checks.command_ended({}, false);
  command = checks.next();
  ASSERT_TRUE(command);
  EXPECT_EQ(command->spec.argv.front(), "second");
  ASSERT_TRUE(util::write_file_atomic(command->spec.log_file, "no marker\n"));
  checks.command_ended({}, false);
  EXPECT_FALSE(checks.next());
  ASSERT_EQ(checks.results().size(), 4u);
  EXPECT_TRUE(checks.results()[2].ok) << checks.results()[2].detail;
  EXPECT_EQ(checks.results()[3].detail, "did not print 'SECOND_OK' (last line: no marker)");
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
  StageChecks checks(stage, {dir_.path(), {}, &backend_named("cpu"), {}}, dir_.path() / "logs");
  EXPECT_FALSE(checks.next());
  const std::vector<GateResult>& results = checks.results();
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
