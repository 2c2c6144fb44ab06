// Integration tests: the real Python worker with a tiny problem and
// pure-Python candidates (no C++ compile, so they stay fast). Skipped when
// no interpreter with torch is available.
#include "verify/verifier.h"

#include <stdlib.h>

#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "verify/repro_bundle.h"
#include "worker/child_process.h"
#include "worker/probe.h"
#include "worker/python_env.h"

namespace kgym::verify {
namespace {

namespace fs = std::filesystem;

constexpr const char* kScaledLinearProblem = R"(import torch
import torch.nn as nn

class Model(nn.Module):
    def __init__(self, scale):
        super().__init__()
        self.linear = nn.Linear(features, 4)
        self.scale = scale

    def forward(self, x):
        return self.linear(x) * self.scale

batch_size = 64
features = 7  # below kMinSizeConstant: the candidate hard-codes it

def get_inputs():
    return [torch.randn(batch_size, features)]

def get_init_inputs():
    return [2.0]
)";

// A candidate whose forward body is `body` (x is the input).
std::string candidate_with(const std::string& body) {
  return R"(import ctypes, os, signal, sys, time
import torch
import torch.nn as nn

class ModelNew(nn.Module):
    def __init__(self, scale):
        super().__init__()
        self.linear = nn.Linear(7, 4)
        self.scale = scale

    def forward(self, x):
)" + body +
         "\n";
}

class VerifierTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    auto env = worker::resolve_python(std::nullopt);
    if (env) python_ = new std::string(env->python);
  }

  void SetUp() override {
    if (!python_) GTEST_SKIP() << "no Python with torch";
    std::string pattern = (fs::temp_directory_path() / "kgym-verifier-test-XXXXXX").string();
    ASSERT_NE(::mkdtemp(pattern.data()), nullptr);
    dir_ = pattern;
    std::ofstream(dir_ / "problem.py") << kScaledLinearProblem;
  }

  void TearDown() override {
    std::error_code ec;
    if (!dir_.empty() && !HasFailure()) fs::remove_all(dir_, ec);
  }

  // Verifies in correctness mode unless `config` says otherwise.
  CaseResult verify(const std::string& candidate_source, VerifierConfig config = correctness_config()) {
    std::ofstream(dir_ / "model_new.py") << candidate_source;
    VerifyRequest req;
    req.case_id = "test/1_Tiny";
    req.problem = dir_ / "problem.py";
    req.candidate = dir_ / "model_new.py";
    req.scratch_dir = dir_ / "scratch";
    req.python = *python_;
    req.config = config;
    req.overrides = {{"batch_size", 16}};
    req.device = "all";
    req.run_seed = 42;
    req.static_checks = false;  // these candidates test the workers and have no kernel on purpose
    req.op_trace = op_trace_;
    return verify_candidate(req);
  }

  static VerifierConfig correctness_config() {
    VerifierConfig config;
    config.mode = "correctness";
    return config;
  }

  static std::string* python_;
  fs::path dir_;
  bool op_trace_ = false;
};

std::string* VerifierTest::python_ = nullptr;

TEST_F(VerifierTest, HonestCandidatePasses) {
  auto r = verify(
      candidate_with("        return torch.nn.functional.linear(x, self.linear.weight, self.linear.bias) "
                     "* self.scale"));
  EXPECT_EQ(r.verdict, Verdict::kPass) << r.reason;
  // Three trials on get_inputs(), two with signed normal inputs, one at
  // the held-out shape.
  EXPECT_EQ(r.correctness.trials, 6);
  EXPECT_EQ(r.correctness.trials_passed, 6);
  EXPECT_EQ(r.correctness.seeds.size(), 6u);
  EXPECT_EQ(r.correctness.distributions,
            (std::vector<std::string>{"given", "given", "given", "normal", "normal", "given"}));
  EXPECT_FALSE(r.correctness.degenerate);
  ASSERT_TRUE(r.runtime);
  EXPECT_FALSE(r.runtime->available);  // op trace off in this fixture
  ASSERT_EQ(r.correctness.shapes.size(), 2u);
  EXPECT_EQ(r.correctness.shapes[0], "[16, 7]");  // the override reached get_inputs
  EXPECT_TRUE(r.correctness.shapes[1].find("(held_out: batch_size=") != std::string::npos)
      << r.correctness.shapes[1];
  EXPECT_TRUE(r.timings.verify_s);
  EXPECT_TRUE(r.timings.compile_s);
  EXPECT_FALSE(r.performance);
}

TEST_F(VerifierTest, PerformanceModeTimesBothSides) {
  VerifierConfig config;
  config.mode = "performance";
  config.timing.warmup = 1;
  config.timing.max_repetitions = 6;
  // A budget no loaded machine reaches first: the stop is the repetitions'.
  config.timing.budget = std::chrono::seconds(120);
  auto r = verify(candidate_with("        return self.linear(x) * self.scale"), config);
  ASSERT_EQ(r.verdict, Verdict::kPass) << r.reason;
  ASSERT_TRUE(r.performance);
  EXPECT_GE(r.performance->reference.samples, 12);  // at least 6 calls of each side's worker and its twin
  EXPECT_GE(r.performance->candidate.samples, 12);
  EXPECT_GT(r.performance->speedup.median, 0);
  EXPECT_TRUE(r.performance->stop_reason == "max_repetitions" || r.performance->stop_reason == "target_rse")
      << r.performance->stop_reason;
}

TEST_F(VerifierTest, WrongOutputFailsCorrectness) {
  auto r = verify(candidate_with("        return self.linear(x) * self.scale + 0.1"));
  EXPECT_EQ(r.verdict, Verdict::kFailCorrectness) << r.reason;
  EXPECT_EQ(r.correctness.failed_trial, 0);
  EXPECT_EQ(r.correctness.failed_output, 0);
  ASSERT_TRUE(r.correctness.max_abs_err);
  EXPECT_NEAR(*r.correctness.max_abs_err, 0.1, 1e-3);
}

TEST_F(VerifierTest, ExceptionInForwardIsRuntimeError) {
  auto r = verify(candidate_with("        raise ValueError('kernel exploded')"));
  EXPECT_EQ(r.verdict, Verdict::kRuntimeError) << r.reason;
  EXPECT_NE(r.reason.find("ValueError: kernel exploded"), std::string::npos) << r.reason;
}

TEST_F(VerifierTest, MissingModelNewIsRuntimeError) {
  auto r = verify("import torch\nclass Model(torch.nn.Module):\n    pass\n");
  EXPECT_EQ(r.verdict, Verdict::kRuntimeError) << r.reason;
  EXPECT_NE(r.reason.find("ModelNew"), std::string::npos) << r.reason;
}

TEST_F(VerifierTest, SyntaxErrorIsCompileError) {
  auto r = verify("import torch\nclass ModelNew(:\n");
  EXPECT_EQ(r.verdict, Verdict::kCompileError) << r.reason;
  EXPECT_NE(r.reason.find("SyntaxError"), std::string::npos) << r.reason;
}

TEST_F(VerifierTest, SegfaultIsCrash) {
  auto r = verify(candidate_with("        ctypes.string_at(0)"));
  EXPECT_EQ(r.verdict, Verdict::kCrash) << r.reason;
  EXPECT_NE(r.reason.find("SIGSEGV"), std::string::npos) << r.reason;
}

// The runtime layer (docs/anti-cheat.md): each finding is fail_cheat with
// a runtime rule and evidence.
void expect_runtime_cheat(const CaseResult& r, const std::string& rule, const std::string& evidence) {
  EXPECT_EQ(r.verdict, Verdict::kFailCheat) << r.reason;
  ASSERT_TRUE(r.cheat) << r.reason;
  EXPECT_EQ(r.cheat->rule, rule) << r.reason;
  EXPECT_EQ(r.cheat->layer, "runtime");
  EXPECT_NE(r.cheat->evidence.find(evidence), std::string::npos) << r.cheat->evidence;
  EXPECT_TRUE(r.reason.starts_with(rule + " — ")) << r.reason;
}

TEST_F(VerifierTest, RuntimeChecksCatchMutationAliasAndNondeterminism) {
  expect_runtime_cheat(verify(candidate_with("        y = self.linear(x) * self.scale\n"
                                             "        x.zero_()\n"
                                             "        return y")),
                       "runtime.input_mutation", "forward changed input 0 (float32[16, 7])");
  expect_runtime_cheat(verify(candidate_with("        return x")), "runtime.output_alias",
                       "output 0 shares memory with input 0");
  expect_runtime_cheat(
      verify(candidate_with("        return (self.linear(x) * self.scale)[:1].expand(16, 4)")),
      "runtime.output_layout", "stride 0 in dim 0");
  expect_runtime_cheat(verify(candidate_with("        return type('Lazy', (), {})()")), "runtime.output_type",
                       "output 0 is a kgym_candidate.Lazy, not a torch.Tensor");
  expect_runtime_cheat(
      verify(candidate_with("        self.calls = getattr(self, 'calls', 0) + 1\n"
                            "        return self.linear(x) * self.scale * (1 + (self.calls == 2))")),
      "runtime.nondeterministic", "the same inputs twice gave different output 0");
}

TEST_F(VerifierTest, EscapeAttemptsAreCheats) {
  expect_runtime_cheat(verify(candidate_with("        os.kill(os.getppid(), signal.SIGTERM)")),
                       "runtime.signal", "signals its parent during forward");
  expect_runtime_cheat(verify(candidate_with("        sys.exit(3)")), "runtime.process_exit",
                       "SystemExit(3)");
  expect_runtime_cheat(verify(candidate_with("        os._exit(0)")), "runtime.process_exit", "os._exit(0)");
  expect_runtime_cheat(verify(candidate_with("        try:\n"
                                             "            open('/tmp/kgym-escape-test', 'w')\n"
                                             "        except Exception:\n"
                                             "            pass\n"
                                             "        return self.linear(x) * self.scale")),
                       "runtime.write_outside", "open(/tmp/kgym-escape-test, w)");
  EXPECT_FALSE(fs::exists("/tmp/kgym-escape-test"));
  expect_runtime_cheat(verify(candidate_with("        os.fork()")), "runtime.fork", "os.fork()");
}

TEST_F(VerifierTest, HardCodedShapeFailsAtTheHeldOutShape) {
  auto r =
      verify(candidate_with("        if x.shape[0] != 16:\n"
                            "            return torch.zeros(x.shape[0], 4)\n"
                            "        return self.linear(x) * self.scale"));
  EXPECT_EQ(r.verdict, Verdict::kFailCorrectness) << r.reason;
  EXPECT_NE(r.reason.find("[shape held_out: batch_size="), std::string::npos) << r.reason;
  EXPECT_EQ(r.correctness.failed_trial, 5);
}

TEST_F(VerifierTest, OpTraceCatchesLibraryCompute) {
  op_trace_ = true;
  auto r = verify(
      candidate_with("        return torch.nn.functional.linear(x, self.linear.weight, self.linear.bias) "
                     "* self.scale"));
  expect_runtime_cheat(r, "runtime.op_trace", "aten.");
  ASSERT_TRUE(r.runtime);
  EXPECT_TRUE(r.runtime->available);
  EXPECT_FALSE(r.runtime->ops.empty());
}

TEST_F(VerifierTest, HangingForwardTimesOut) {
  VerifierConfig config = correctness_config();
  config.call_timeout = std::chrono::seconds(2);
  auto r = verify(candidate_with("        time.sleep(60)"), config);
  EXPECT_EQ(r.verdict, Verdict::kTimeout) << r.reason;
  EXPECT_LT(*r.timings.verify_s, 30);
}

TEST_F(VerifierTest, ProbeReportsShapesAfterOverrides) {
  ASSERT_TRUE(worker::write_worker_script(dir_ / "kgym_worker.py"));
  worker::ProbeRequest req{.python = *python_, .problem = dir_ / "problem.py", .overrides = {{"batch_size", 5}}};
  auto run = worker::run_captured(worker::probe_command(req, dir_ / "kgym_worker.py", dir_ / "probe.json"),
                          worker::Clock::now() + std::chrono::seconds(120));
  ASSERT_TRUE(run) << run.error();
  auto probe = worker::read_probe(dir_ / "probe.json");
  ASSERT_TRUE(probe) << probe.error() << run->output;
  ASSERT_EQ(probe->inputs.size(), 1u);
  EXPECT_EQ(probe->inputs[0].shape, (std::vector<long long>{5, 7}));
  EXPECT_EQ(probe->outputs[0].dtype, "float32");
  EXPECT_EQ(probe->constants.at("batch_size"), 5);
  EXPECT_EQ(probe->parameters.size(), 2u);

  // One set of overrides serves a whole dataset: a name this problem does
  // not assign is skipped, and the worker log says so.
  req.overrides = {{"no_such_constant", 1}};
  auto skipped = worker::run_captured(worker::probe_command(req, dir_ / "kgym_worker.py", dir_ / "probe.json"),
                              worker::Clock::now() + std::chrono::seconds(120));
  ASSERT_TRUE(skipped) << skipped.error();
  auto unchanged = worker::read_probe(dir_ / "probe.json");
  ASSERT_TRUE(unchanged) << unchanged.error();
  EXPECT_EQ(unchanged->constants.count("no_such_constant"), 0u);
  EXPECT_NE(skipped->output.find("no_such_constant"), std::string::npos) << skipped->output;
}

TEST(VerifyRequestJson, RoundTrips) {
  VerifyRequest req;
  req.case_id = "level1/19_ReLU";
  req.problem = "/p/19_ReLU.py";
  req.candidate = "/c/model_new.py";
  req.scratch_dir = "/s";
  req.python = "/usr/bin/python3";
  req.config.mode = "correctness";
  req.config.trials = 5;
  req.config.call_timeout = std::chrono::seconds(7);
  req.config.tolerances["float32"] = {1e-4, 1e-3};
  req.config.timing.budget = std::chrono::milliseconds(1234);
  req.config.compile_cache = false;
  req.overrides = {{"batch_size", 8}};
  req.device = "0-1";
  req.run_seed = 0xfedcba9876543210ULL;
  auto back = verify_request_from_json(nlohmann::json::parse(to_json(req).dump()));
  EXPECT_EQ(to_json(back), to_json(req));
  EXPECT_EQ(back.run_seed, req.run_seed);
  EXPECT_EQ(back.config.call_timeout, std::chrono::seconds(7));
}

TEST(VerifyRequestJson, TheStageRoundTripsAndAnUnknownOneIsRefused) {
  VerifyRequest build;
  build.problem = "/p.py";
  build.candidate = "/c.py";
  build.stage = VerifyStage::kBuild;
  EXPECT_EQ(verify_request_from_json(to_json(build)).stage, VerifyStage::kBuild);
  VerifyRequest prebuilt = build;
  prebuilt.stage = VerifyStage::kVerifyPrebuilt;
  prebuilt.prebuilt = "/runs/r/cases/x/build/prebuilt";
  auto back = verify_request_from_json(to_json(prebuilt));
  EXPECT_EQ(back.stage, VerifyStage::kVerifyPrebuilt);
  EXPECT_EQ(back.prebuilt, prebuilt.prebuilt);
  // `kgym verify`'s own finding that there is no device is not written:
  // whoever reads the request decides that again.
  VerifyRequest no_device = build;
  no_device.stage = VerifyStage::kBuildWithoutDevice;
  no_device.no_device = "no GPU";
  EXPECT_EQ(verify_request_from_json(to_json(no_device)).stage, VerifyStage::kBuildThenVerify);
  auto bad = to_json(build);
  bad["stage"] = "compile";
  EXPECT_THROW(verify_request_from_json(bad), nlohmann::json::exception);
}

// kgym-check's request (agent.self_check) says so; a bundle never makes a
// verification a self check, whatever its request.json says.
TEST(VerifyRequestJson, ASelfCheckRoundTripsAndABundleNeverAsksForOne) {
  VerifyRequest check;
  check.problem = "/p.py";
  check.candidate = "model_new.py";
  EXPECT_FALSE(to_json(check).contains("self_check"));
  check.self_check = true;
  EXPECT_TRUE(verify_request_from_json(to_json(check)).self_check);
  std::vector<std::string> notes;
  VerifyRequest base;
  base.self_check = true;
  auto from_bundle = bundle_request(to_json(check), base, notes);
  ASSERT_TRUE(from_bundle) << from_bundle.error();
  EXPECT_FALSE(from_bundle->self_check);
}

}  // namespace
}  // namespace kgym::verify
