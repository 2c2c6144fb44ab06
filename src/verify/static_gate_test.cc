#include "verify/static_gate.h"

#include "verify/verifier.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>

namespace kgym::verify {
namespace {

namespace fs = std::filesystem;

const fs::path kSample = fs::path(KGYM_SOURCE_DIR) / "data/sample";

class StaticGateTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = (fs::temp_directory_path() / "kgym-static-gate-test-XXXXXX").string();
    ASSERT_NE(::mkdtemp(pattern.data()), nullptr);
    dir_ = pattern;
  }
  void TearDown() override { fs::remove_all(dir_); }

  fs::path write(const std::string& name, const std::string& text) {
    std::ofstream(dir_ / name) << text;
    return dir_ / name;
  }

  fs::path dir_;
};

TEST_F(StaticGateTest, LibraryCallIsACheatWithEvidence) {
  auto gate = run_static_gate(kSample / "solutions/level1/2_LeakyReLU/model_new.py",
                              kSample / "level1/2_LeakyReLU.py", backend_named("cpu"));
  ASSERT_TRUE(gate.cheat);
  EXPECT_EQ(gate.cheat->rule, "static.no_kernel");
  EXPECT_EQ(gate.cheat->layer, "static");
  EXPECT_EQ(gate.cheat->evidence, "model_new.py:12: torch.nn.functional.leaky_relu");
  EXPECT_EQ(
      gate.reason,
      "static.no_kernel — model_new.py:12: forward calls torch.nn.functional.leaky_relu and no load_inline "
      "kernel is defined");
  ASSERT_EQ(gate.findings.size(), 1u);
  EXPECT_EQ(gate.findings[0].severity, "fatal");
}

TEST_F(StaticGateTest, HonestKernelPassesAndWarningsAreKept) {
  auto honest =
      run_static_gate(kSample / "solutions/level1/1_ReLU/model_new.py", kSample / "level1/1_ReLU.py", backend_named("cpu"));
  EXPECT_FALSE(honest.cheat);
  EXPECT_TRUE(honest.findings.empty());

  std::string text;
  {
    std::ifstream in(kSample / "solutions/level1/1_ReLU/model_new.py");
    text.assign(std::istreambuf_iterator<char>(in), {});
  }
  auto with_warning = write("model_new.py", "import os\nos.environ.setdefault('MAX_JOBS', '2')\n" + text);
  auto gate = run_static_gate(with_warning, kSample / "level1/1_ReLU.py", backend_named("cpu"));
  EXPECT_FALSE(gate.cheat);
  ASSERT_EQ(gate.findings.size(), 1u);
  EXPECT_EQ(gate.findings[0].rule, "static.env_switch");
  EXPECT_EQ(gate.findings[0].severity, "warn");
  EXPECT_EQ(gate.findings[0].evidence, "model_new.py:2: os.environ.setdefault[MAX_JOBS]");
}

TEST_F(StaticGateTest, ProblemDtypeDecidesPrecisionRule) {
  auto candidate = write("cand.py",
                         "from torch.utils.cpp_extension import load_inline\n"
                         "_ext = load_inline(name='k', cpp_sources='void f(float* x) { x[0] = 1; }')\n"
                         "class ModelNew:\n    def forward(self, x):\n        return _ext.f(x.half())\n");
  auto fp32 = write("fp32.py", "import torch\ndef get_inputs():\n    return [torch.randn(4)]\n");
  auto fp16 = write("fp16.py", "import torch\ndef get_inputs():\n    return [torch.randn(4).half()]\n");
  auto gate32 = run_static_gate(candidate, fp32, backend_named("cpu"));
  ASSERT_TRUE(gate32.cheat);
  EXPECT_EQ(gate32.cheat->rule, "static.precision_downgrade");
  EXPECT_FALSE(run_static_gate(candidate, fp16, backend_named("cpu")).cheat);
  EXPECT_TRUE(run_static_gate(candidate, dir_ / "missing_problem.py", backend_named("cpu")).cheat);  // float32 by default
}

TEST_F(StaticGateTest, UnreadableCandidateHasNoFindings) {
  auto gate = run_static_gate(dir_ / "none.py", kSample / "level1/1_ReLU.py", backend_named("cpu"));
  EXPECT_FALSE(gate.cheat);
  EXPECT_TRUE(gate.findings.empty());
}

TEST_F(StaticGateTest, VerifyStopsACheatBeforeAnyWorkerStarts) {
  VerifyRequest req;
  req.problem = kSample / "level1/2_LeakyReLU.py";
  req.candidate = kSample / "solutions/level1/2_LeakyReLU/model_new.py";
  req.scratch_dir = dir_ / "scratch";
  req.python = (dir_ / "no-such-python").string();  // a started worker would fail with another verdict
  CaseResult r = verify_candidate(req);
  EXPECT_EQ(r.verdict, Verdict::kFailCheat) << r.reason;
  ASSERT_TRUE(r.cheat);
  EXPECT_EQ(r.cheat->rule, "static.no_kernel");
  EXPECT_EQ(r.static_findings.size(), 1u);
  EXPECT_EQ(r.correctness.trials, 0);

  req.static_checks = false;
  EXPECT_NE(verify_candidate(req).verdict, Verdict::kFailCheat);
}

TEST(StaticFindingsJson, RoundTrip) {
  CaseResult r;
  r.case_id = "level1/2_LeakyReLU";
  r.verdict = Verdict::kFailCheat;
  r.cheat = CheatFinding{"static.no_kernel", "static", "model_new.py:12: torch.relu"};
  r.static_findings = {
      {"static.no_kernel", "fatal", "model_new.py:12: torch.relu", "forward calls torch.relu"},
      {"static.env_switch", "warn", "model_new.py:3: os.getenv", "reads the environment"}};
  auto j = to_json(r);
  ASSERT_TRUE(j.at("static_findings").is_array());
  EXPECT_EQ(j["static_findings"][1]["severity"], "warn");
  EXPECT_EQ(j["static_findings"][0]["evidence"], "model_new.py:12: torch.relu");
  CaseResult back = result_from_json(j);
  ASSERT_EQ(back.static_findings.size(), 2u);
  EXPECT_EQ(back.static_findings[1].message, "reads the environment");
  EXPECT_EQ(back.cheat->layer, "static");

  j.erase("static_findings");  // results written before the field existed
  EXPECT_TRUE(result_from_json(j).static_findings.empty());
}

}  // namespace
}  // namespace kgym::verify
