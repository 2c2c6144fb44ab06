// The sample lifecycle driven by events alone: no process is started, the
// test plays the children by writing the files they would and reporting
// their exits.
#include "run/sample_flow.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <memory>

#include "run/workflow_test_util.h"
#include "util/fs.h"
#include "util/temp_dir.h"
#include "worker/probe.h"

namespace kgym::run {
namespace {

namespace fs = std::filesystem;
using util::ProcessExit;

bool has_arg(const util::ProcessSpec& spec, const std::string& arg) {
  return std::ranges::find(spec.argv, arg) != spec.argv.end();
}

std::string arg_after(const util::ProcessSpec& spec, const std::string& flag) {
  auto it = std::ranges::find(spec.argv, flag);
  return it != spec.argv.end() && it + 1 != spec.argv.end() ? *(it + 1) : "";
}

std::vector<std::string> phases_of(const std::vector<FlowNote>& notes) {
  std::vector<std::string> phases;
  for (const FlowNote& n : notes) {
    if (n.kind == FlowNote::Kind::kPhase) phases.push_back(n.name);
  }
  return phases;
}

bool has_event(const std::vector<FlowNote>& notes, const std::string& name) {
  return std::ranges::any_of(
      notes, [&](const FlowNote& n) { return n.kind == FlowNote::Kind::kEvent && n.name == name; });
}

class SampleFlowTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = temp_.path();
    fs::create_directories(root_ / "bench" / "level1");
    fs::create_directories(root_ / "solutions" / "level1" / "1_Op");
    std::ofstream(root_ / "bench" / "level1" / "1_Op.py") << "class Model: pass\n";
    std::ofstream(root_ / "solutions" / "level1" / "1_Op" / "model_new.py") << "class ModelNew: pass\n";
    config_.agent.kind = "replay";
    config_.agent.replay_dir = root_ / "solutions";
    options_.run_dir = root_ / "run";
    options_.kgym_argv0 = {"kgym"};
    options_.worker_script = root_ / "worker.py";
    EXPECT_TRUE(worker::write_worker_script(options_.worker_script));  // the probe checks it is intact
    options_.python = "python3";
  }

  SampleFlow& flow() {
    if (!flow_) {
      agent_ = agent::make_agent(config_.agent);
      Case c{"level1", 1, "Op", root_ / "bench" / "level1" / "1_Op.py"};
      CasePaths paths = CasePaths::of(options_.run_dir, c.level, c.stem());
      flow_ = std::make_unique<SampleFlow>(SampleId{c, 0, 7, paths, paths.work()}, config_, options_, *agent_,
                                           clock_);
    }
    return *flow_;
  }
  const CasePaths& paths() { return flow().id().paths; }

  // The probe child: writes its document and exits 0.
  Step probe_succeeds(const Launch& probe) {
    std::ofstream(arg_after(probe.spec, "--out"))
        << R"({"inputs": [{"kind": "tensor", "dtype": "float32", "shape": [4]}],
              "outputs": [{"kind": "tensor", "dtype": "float32", "shape": [4]}]})";
    return flow().child_exited({}, false);
  }
  // The build stage: a slot on core 1, then the `kgym build` child writes
  // its result (a pass with its compile time, or `verdict`) and exits.
  Step build_ends(const Step& asked, Verdict verdict = Verdict::kPass) {
    EXPECT_TRUE(std::holds_alternative<NeedBuildSlot>(asked));
    EXPECT_EQ(flow().phase(), Phase::kBuilding);
    Step launched = flow().build_slot_granted({"1"});
    const Launch& build = std::get<Launch>(launched);
    EXPECT_TRUE(has_arg(build.spec, "build"));
    EXPECT_EQ(build.spec.cpus, "1");
    EXPECT_EQ(build.spec.log_file, paths().build_log());
    auto request = nlohmann::json::parse(util::read_file(paths().build_request()).value_or("{}"));
    EXPECT_EQ(request.value("stage", ""), "build");
    EXPECT_EQ(request.value("device", ""), "1");
    CaseResult r;
    r.verdict = verdict;
    r.reason = verdict == Verdict::kPass ? "built" : "candidate failed to compile: error: expected ';'";
    r.timings.compile_s = 3.0;
    std::ofstream(arg_after(build.spec, "--json")) << to_json(r).dump();
    return flow().child_exited({}, false);
  }
  // The verifier child: writes a result with `verdict` and exits 0.
  Step verify_ends(const Launch& verify, Verdict verdict) {
    CaseResult r;
    r.verdict = verdict;
    r.reason = "as scripted";
    std::ofstream(arg_after(verify.spec, "--json")) << to_json(r).dump();
    return flow().child_exited({}, false);
  }

  util::TempDir temp_{"kgym-flow"};
  fs::path root_;
  Config config_;
  FlowOptions options_;
  util::FakeClock clock_;
  std::unique_ptr<agent::Agent> agent_;
  std::unique_ptr<SampleFlow> flow_;
};

TEST_F(SampleFlowTest, TheProbesSizesAreTheVerificationsAndSurviveAResume) {
  config_.overrides = {{"dim", 32}};  // the user's: they win
  Step step = flow().start(std::nullopt);
  const Launch probe = std::get<Launch>(step);
  EXPECT_EQ(arg_after(probe.spec, "--size-max-bytes"), std::to_string(64ULL << 20));  // auto on cpu
  std::ofstream(arg_after(probe.spec, "--out"))
      << R"({"inputs": [], "outputs": [], "constants": {"batch_size": 64}, "init_values": [64, 8],
            "sizes": {"policy": "auto", "sizes": {"batch_size": 64, "dim": 8}, "original": {"batch_size": 4096},
                      "overrides": {"dim": 32}, "factor": 0.015625, "fits": true, "bytes": 1000}})";
  step = build_ends(flow().child_exited({}, false));
  ASSERT_TRUE(std::holds_alternative<NeedDevice>(step));
  auto build = nlohmann::json::parse(util::read_file(paths().build_request()).value_or("{}"));
  EXPECT_EQ(build["init_inputs"], nlohmann::json::array({64, 8})) << "the build stage builds ModelNew too";
  EXPECT_NE(util::read_file(paths().spec()).value_or("").find("| `batch_size` | 64 | 4096 |"),
            std::string::npos);

  // A new flow over the same files (kgym run --resume) verifies at the
  // recorded sizes without probing again.
  flow_.reset();
  flow().resume(/*regenerate=*/false);
  ASSERT_EQ(flow().phase(), Phase::kBuilding);
  step = build_ends(flow().start(std::nullopt));
  step = flow().device_granted({0, "0"});
  ASSERT_TRUE(std::holds_alternative<Launch>(step));
  auto request = nlohmann::json::parse(util::read_file(paths().verify_request()).value_or("{}"));
  EXPECT_EQ(request["overrides"]["batch_size"], 64);
  EXPECT_EQ(request["overrides"]["dim"], 32);
  EXPECT_EQ(request["sizes"]["original"]["batch_size"], 4096);
}

TEST_F(SampleFlowTest, AsWrittenSizesProbeWithoutABudget) {
  config_.size.kind = ProblemSize::Kind::kAsWritten;
  const Launch probe = std::get<Launch>(flow().start(std::nullopt));
  EXPECT_FALSE(has_arg(probe.spec, "--size-max-bytes"));
}

TEST_F(SampleFlowTest, ProbeGenerateWaitVerifyFinish) {
  Step step = flow().start(std::nullopt);
  ASSERT_TRUE(std::holds_alternative<Launch>(step));
  const Launch probe = std::get<Launch>(step);
  EXPECT_TRUE(has_arg(probe.spec, "probe"));
  EXPECT_EQ(probe.timeout, config_.verifier.timeout);
  EXPECT_EQ(flow().phase(), Phase::kProbing);
  EXPECT_TRUE(fs::exists(paths().task_desc()));

  step = probe_succeeds(probe);  // the replay agent runs no process
  EXPECT_TRUE(fs::exists(paths().generation()));
  EXPECT_TRUE(fs::exists(paths().candidate() / "model_new.py"));
  step = build_ends(step);  // built before any device is asked for
  ASSERT_TRUE(std::holds_alternative<NeedDevice>(step));
  EXPECT_EQ(flow().phase(), Phase::kWaitingDevice);
  EXPECT_TRUE(fs::exists(paths().spec()));
  std::vector<FlowNote> notes = flow().take_notes();
  EXPECT_EQ(phases_of(notes),
            (std::vector<std::string>{"probing", "generating", "building", "waiting_device"}));
  EXPECT_TRUE(has_event(notes, "generated"));
  EXPECT_TRUE(has_event(notes, "built"));

  clock_.advance(std::chrono::seconds(2));
  step = flow().device_granted({1, "cpu1"});
  ASSERT_TRUE(std::holds_alternative<Launch>(step));
  const Launch verify = std::get<Launch>(step);
  EXPECT_TRUE(has_arg(verify.spec, "verify"));
  EXPECT_EQ(verify.spec.log_file, paths().verify_log());
  std::string request = util::read_file(paths().verify_request()).value_or("");
  EXPECT_NE(request.find(R"("device": "cpu1")"), std::string::npos);
  EXPECT_NE(request.find(paths().prebuilt().string()), std::string::npos) << "it loads what the build made";

  step = verify_ends(verify, Verdict::kPass);
  ASSERT_TRUE(std::holds_alternative<Finished>(step));
  const CaseResult& r = std::get<Finished>(step).result;
  EXPECT_EQ(r.verdict, Verdict::kPass);
  EXPECT_EQ(r.timings.compile_s, 3.0) << "the build stage's compile time";
  EXPECT_EQ(r.case_id, "level1/1_Op");
  ASSERT_TRUE(r.generation);
  EXPECT_EQ(r.generation->agent, "replay");
  EXPECT_EQ(r.timings.total_s, 2.0);
  EXPECT_EQ(flow().phase(), Phase::kDone);
}

TEST_F(SampleFlowTest, ProbePastItsDeadlineIsAReferenceError) {
  flow().start(std::nullopt);
  Step step = flow().child_exited({ProcessExit::Kind::kSignaled, 15}, /*timed_out=*/true);
  ASSERT_TRUE(std::holds_alternative<Finished>(step));
  EXPECT_EQ(std::get<Finished>(step).result.verdict, Verdict::kReferenceError);
  EXPECT_EQ(std::get<Finished>(step).result.reason, "the reference probe timed out");
}

TEST_F(SampleFlowTest, AnAgentThatCannotStartIsALaunchFailure) {
  config_.agent.kind = "command";
  config_.agent.argv = {"/nonexistent/agent"};
  Step step = probe_succeeds(std::get<Launch>(flow().start(std::nullopt)));
  ASSERT_TRUE(std::holds_alternative<Launch>(step));
  EXPECT_EQ(flow().phase(), Phase::kGenerating);
  step = flow().launch_failed("no such file");
  ASSERT_TRUE(std::holds_alternative<Finished>(step));
  const CaseResult& r = std::get<Finished>(step).result;
  EXPECT_EQ(r.verdict, Verdict::kGenerationFailed);
  EXPECT_EQ(r.generation->outcome, "launch_failed");
  EXPECT_EQ(r.reason, "cannot start agent '/nonexistent/agent': no such file");
}

// A stage whose command gate misses its marker is re-prompted; the gate is
// a Launch in the agent's box, its marker read from the log it wrote.
TEST_F(SampleFlowTest, WorkflowGateIsAChildAndItsFailureReprompts) {
  config_.agent.kind = "command";
  config_.agent.argv = {"/opt/agent", "{prompt_file}"};
  config_.agent.network = true;
  options_.sandbox_mode = util::SandboxMode::kBwrap;
  config_.workflow = command_gate_workflow(root_ / "develop.md", {"sh", "test.sh"}, "TESTS_OK",
                                           std::chrono::seconds(9), /*max_attempts=*/2);

  Step step = probe_succeeds(std::get<Launch>(flow().start(std::nullopt)));
  ASSERT_TRUE(std::holds_alternative<Launch>(step));
  EXPECT_TRUE(has_arg(std::get<Launch>(step).spec, "/opt/agent"));
  EXPECT_FALSE(has_arg(std::get<Launch>(step).spec, "--unshare-net")) << "the agent has its network";
  EXPECT_EQ(flow().stage(), "develop");
  EXPECT_EQ(flow().attempt(), 1);
  std::ofstream(flow().id().work / "model_new.py") << "class ModelNew: pass\n";

  for (int attempt = 1; attempt <= 2; ++attempt) {
    step = flow().child_exited({}, false);  // the agent's run
    ASSERT_TRUE(std::holds_alternative<Launch>(step)) << attempt;
    const Launch gate = std::get<Launch>(step);
    EXPECT_EQ(flow().phase(), Phase::kChecking);
    EXPECT_TRUE(has_arg(gate.spec, "test.sh"));
    EXPECT_TRUE(has_arg(gate.spec, "bwrap"));
    EXPECT_TRUE(has_arg(gate.spec, "--unshare-net"));
    EXPECT_EQ(gate.timeout, std::chrono::seconds(9));
    EXPECT_EQ(gate.spec.log_file.parent_path(), paths().gates("develop", attempt));
    std::ofstream(gate.spec.log_file) << (attempt == 1 ? "3 tests failed\n" : "TESTS_OK\n");
    step = flow().child_exited({}, false);  // the gate's
    if (attempt == 1) {
      ASSERT_TRUE(std::holds_alternative<Launch>(step));
      EXPECT_EQ(flow().phase(), Phase::kGenerating);
      EXPECT_EQ(flow().attempt(), 2);
      EXPECT_EQ(flow().failed_gates(),
                (std::vector<std::string>{"command sh test.sh: did not print 'TESTS_OK' (last line: 3 tests "
                                          "failed)"}));
      auto prompt = util::read_file(flow().id().work / ".kgym" / "develop.2.md");
      EXPECT_NE(prompt.value_or("").find("Checks that failed"), std::string::npos);
    }
  }
  ASSERT_TRUE(std::holds_alternative<NeedBuildSlot>(step));
  EXPECT_TRUE(flow().failed_gates().empty());
}

TEST_F(SampleFlowTest, ResumeFromTheFilesOnDisk) {
  fs::create_directories(paths().candidate());
  std::ofstream(paths().candidate() / "model_new.py") << "class ModelNew: pass\n";
  std::ofstream(paths().generation())
      << R"({"outcome": "ok", "agent": "replay", "tokens": {"in": 5, "out": 6}, "generate_s": 12.5})";
  flow().resume(/*regenerate=*/false);
  EXPECT_EQ(flow().phase(), Phase::kBuilding) << "a build is never trusted across runs";
  Step step = flow().start(std::nullopt);
  ASSERT_TRUE(std::holds_alternative<NeedBuildSlot>(step))
      << "a generated candidate is built and verified, not regenerated";
  EXPECT_TRUE(has_event(flow().take_notes(), "resume_verify"));
  step = build_ends(step);
  ASSERT_TRUE(std::holds_alternative<NeedDevice>(step));
  step = verify_ends(std::get<Launch>(flow().device_granted({0, "cpu0"})), Verdict::kPass);
  const CaseResult& r = std::get<Finished>(step).result;
  EXPECT_EQ(r.generation->tokens_in, 5);
  EXPECT_EQ(r.timings.generate_s, 12.5);
}

// A candidate that does not build ends with the build's verdict and never
// asks for a device.
TEST_F(SampleFlowTest, AFailedBuildEndsTheSampleWithoutADevice) {
  Step step =
      build_ends(probe_succeeds(std::get<Launch>(flow().start(std::nullopt))), Verdict::kCompileError);
  ASSERT_TRUE(std::holds_alternative<Finished>(step));
  const CaseResult& r = std::get<Finished>(step).result;
  EXPECT_EQ(r.verdict, Verdict::kCompileError);
  EXPECT_EQ(r.reason, "candidate failed to compile: error: expected ';'");
  EXPECT_FALSE(flow().device());
  EXPECT_FALSE(fs::exists(paths().verify_request()));
  ASSERT_TRUE(r.generation);
}

// A build that leaves no result: its deadline, or a crash of kgym build.
TEST_F(SampleFlowTest, ABuildWithoutAResultIsATimeoutOrAHarnessError) {
  probe_succeeds(std::get<Launch>(flow().start(std::nullopt)));
  std::get<Launch>(flow().build_slot_granted({"all"}));
  Step step = flow().child_exited({ProcessExit::Kind::kSignaled, 9}, /*timed_out=*/true);
  EXPECT_EQ(std::get<Finished>(step).result.verdict, Verdict::kTimeout);
}

TEST_F(SampleFlowTest, ResumeWithRegenerateStartsOver) {
  fs::create_directories(paths().candidate());
  std::ofstream(paths().candidate() / "model_new.py") << "class ModelNew: pass\n";
  std::ofstream(paths().generation()) << R"({"outcome": "ok"})";
  flow().resume(/*regenerate=*/true);
  EXPECT_EQ(flow().phase(), Phase::kPending);
  EXPECT_FALSE(fs::exists(paths().generation()));
  EXPECT_FALSE(fs::exists(paths().candidate()));
  EXPECT_TRUE(std::holds_alternative<Launch>(flow().start(std::nullopt)));
}

TEST_F(SampleFlowTest, ResumeKeepsAFinishedResultOfThisCaseOnly) {
  fs::create_directories(paths().dir);
  CaseResult other;
  other.case_id = "level1/2_Other";
  std::ofstream(paths().result()) << to_json(other).dump();
  flow().resume(false);
  EXPECT_EQ(flow().phase(), Phase::kPending);
  CaseResult mine;
  mine.case_id = "level1/1_Op";
  mine.verdict = Verdict::kFailCorrectness;
  std::ofstream(paths().result()) << to_json(mine).dump();
  flow().resume(false);
  EXPECT_EQ(flow().phase(), Phase::kDone);
  EXPECT_EQ(flow().result()->verdict, Verdict::kFailCorrectness);
}

// Refinement rounds (agent.feedback): a command agent whose first candidate
// is wrong gets the verification's feedback in its next prompt.
class SampleFlowRoundsTest : public SampleFlowTest {
 protected:
  void SetUp() override {
    SampleFlowTest::SetUp();
    config_.agent.kind = "command";
    config_.agent.argv = {"/opt/agent", "{prompt_file}"};
    config_.agent.feedback.rounds = 3;
  }
  // The agent's run in its round: it writes a candidate and exits 0; the
  // build passes and the device is granted. Returns the verifier's Launch.
  Launch agent_writes_and_builds(const Step& agent_step, int round) {
    EXPECT_TRUE(std::holds_alternative<Launch>(agent_step));
    const Launch& agent = std::get<Launch>(agent_step);
    EXPECT_EQ(agent.spec.env.at("KGYM_ROUND"), std::to_string(round));
    std::ofstream(flow().id().work / "model_new.py") << "class ModelNew: pass  # round " << round << "\n";
    Step step = build_ends(flow().child_exited({}, false));
    EXPECT_TRUE(std::holds_alternative<NeedDevice>(step));
    Step verify = flow().device_granted({0, "cpu0"});
    return std::get<Launch>(verify);
  }
  Step verify_returns(const Launch& verify, CaseResult r) {
    std::ofstream(arg_after(verify.spec, "--json")) << to_json(r).dump();
    return flow().child_exited({}, false);
  }
  static CaseResult wrong() {
    CaseResult r;
    r.verdict = Verdict::kFailCorrectness;
    r.reason =
        "trial 3 (normal inputs) output 0: 7 of 16 elements outside atol=1e-05 rtol=1e-05; worst at [2]: "
        "0.5 vs reference 0.25";
    r.correctness.failed_trial = 3;
    r.correctness.failed_output = 0;
    r.correctness.distributions = {"given", "given", "given", "normal"};
    r.correctness.shapes = {"[4, 16]"};
    r.correctness.seeds = {11, 12, 13, 987654321};
    return r;
  }
  static CaseResult passing(double lo, double median, double hi) {
    CaseResult r;
    r.verdict = Verdict::kPass;
    r.reason = "pass";
    r.performance.emplace();
    r.performance->speedup = {median, Interval{lo, hi}};
    return r;
  }
  std::uint64_t verify_seed() {
    auto request = nlohmann::json::parse(util::read_file(paths().verify_request()).value_or("{}"));
    return request.value("run_seed", std::uint64_t{0});
  }
};

TEST_F(SampleFlowRoundsTest, AWrongCandidateGetsFeedbackAndTheNextRoundPasses) {
  Step step = probe_succeeds(std::get<Launch>(flow().start(std::nullopt)));
  Launch verify = agent_writes_and_builds(step, 1);
  std::uint64_t first_seed = verify_seed();
  step = verify_returns(verify, wrong());

  ASSERT_TRUE(std::holds_alternative<Launch>(step)) << "the agent runs again";
  EXPECT_EQ(flow().phase(), Phase::kGenerating);
  EXPECT_FALSE(flow().device()) << "the next round's build and agent run without the device";
  std::vector<FlowNote> notes = flow().take_notes();
  EXPECT_TRUE(has_event(notes, "round"));
  std::string prompt = util::read_file(flow().id().work / ".kgym" / "round.2.md").value_or("");
  EXPECT_TRUE(prompt.starts_with(util::read_file(paths().prompt()).value_or("?"))) << prompt;
  EXPECT_NE(prompt.find("## Verification of your previous candidate"), std::string::npos);
  EXPECT_NE(prompt.find("Round 1 of 3: the verdict on your candidate is `fail_correctness`"),
            std::string::npos);
  EXPECT_NE(prompt.find("worst at [2]: 0.5 vs reference 0.25"), std::string::npos);
  EXPECT_NE(prompt.find("trial 3 (normal inputs), input shapes [4, 16]"), std::string::npos);
  EXPECT_EQ(prompt.find("987654321"), std::string::npos) << "never a seed";
  EXPECT_EQ(arg_after(std::get<Launch>(step).spec, "/opt/agent"),
            (flow().id().work / ".kgym" / "round.2.md").string());
  EXPECT_FALSE(fs::exists(paths().generation())) << "round 1's candidate is not verified again on resume";
  auto kept = nlohmann::json::parse(util::read_file(paths().rounds()).value_or("{}"));
  EXPECT_EQ(kept.value("round", 0), 2);
  ASSERT_EQ(kept["rounds"].size(), 1u);

  verify = agent_writes_and_builds(step, 2);
  EXPECT_NE(verify_seed(), first_seed) << "each round is verified under seeds of its own";
  step = verify_returns(verify, passing(0.9, 1.1, 1.3));
  ASSERT_TRUE(std::holds_alternative<Finished>(step)) << "until: pass";
  const CaseResult& r = std::get<Finished>(step).result;
  EXPECT_EQ(r.verdict, Verdict::kPass);
  ASSERT_EQ(r.rounds.size(), 2u);
  EXPECT_EQ(r.rounds[0].verdict, Verdict::kFailCorrectness);
  EXPECT_EQ(r.rounds[1].verdict, Verdict::kPass);
  EXPECT_EQ(r.rounds[1].speedup, 1.1);
  EXPECT_EQ(r.rounds[1].round, 2);
}

TEST_F(SampleFlowRoundsTest, ACheatInAnyRoundEndsTheSample) {
  Step step = probe_succeeds(std::get<Launch>(flow().start(std::nullopt)));
  step = verify_returns(agent_writes_and_builds(step, 1), wrong());
  CaseResult cheat;
  cheat.verdict = Verdict::kFailCheat;
  cheat.reason = "runtime.op_trace";
  step = verify_returns(agent_writes_and_builds(step, 2), cheat);
  ASSERT_TRUE(std::holds_alternative<Finished>(step)) << "a third round remained, but a cheat is final";
  const CaseResult& r = std::get<Finished>(step).result;
  EXPECT_EQ(r.verdict, Verdict::kFailCheat);
  ASSERT_EQ(r.rounds.size(), 2u);
  EXPECT_EQ(r.rounds[1].verdict, Verdict::kFailCheat);
}

TEST_F(SampleFlowRoundsTest, UntilFast1GoesOnPastAPassWithoutAClearSpeedupAndStopsAtTheLastRound) {
  config_.agent.feedback.rounds = 2;
  config_.agent.feedback.until = "fast_1";
  Step step = probe_succeeds(std::get<Launch>(flow().start(std::nullopt)));
  step = verify_returns(agent_writes_and_builds(step, 1), passing(0.8, 1.05, 1.3));
  ASSERT_TRUE(std::holds_alternative<Launch>(step)) << "a pass whose interval reaches below 1";
  std::string prompt = util::read_file(flow().id().work / ".kgym" / "round.2.md").value_or("");
  EXPECT_NE(prompt.find("Speedup over the PyTorch reference: 1.05× (95 % interval 0.80×–1.30×)"),
            std::string::npos)
      << prompt;
  step = verify_returns(agent_writes_and_builds(step, 2), wrong());
  ASSERT_TRUE(std::holds_alternative<Finished>(step)) << "no round left";
  const CaseResult& r = std::get<Finished>(step).result;
  EXPECT_EQ(r.verdict, Verdict::kFailCorrectness) << "the sample's result is its last round's";
  ASSERT_EQ(r.rounds.size(), 2u);
  EXPECT_EQ(r.rounds[0].verdict, Verdict::kPass);
}

TEST_F(SampleFlowRoundsTest, ACompileErrorIsFedBackWithTheCompilersLines) {
  Step step = probe_succeeds(std::get<Launch>(flow().start(std::nullopt)));
  std::ofstream(flow().id().work / "model_new.py") << "class ModelNew: pass\n";
  std::ofstream(paths().build_log())
      << "[kgym] building\nkernel.cu:3:7: error: expected ';' before '}'\n  }\n"
      << "ninja: build stopped\n";
  step = build_ends(flow().child_exited({}, false), Verdict::kCompileError);
  ASSERT_TRUE(std::holds_alternative<Launch>(step));
  std::string prompt = util::read_file(flow().id().work / ".kgym" / "round.2.md").value_or("");
  EXPECT_NE(prompt.find("`compile_error`"), std::string::npos);
  EXPECT_NE(prompt.find("kernel.cu:3:7: error: expected ';' before '}'\n  }\n"), std::string::npos) << prompt;
  EXPECT_EQ(prompt.find("[kgym] building"), std::string::npos);
}

// Killed in round 2 and resumed: round 1 is kept, round 2 runs again.
TEST_F(SampleFlowRoundsTest, AResumeRunsTheRoundItWasInAgainAndKeepsTheFinishedOnes) {
  Step step = probe_succeeds(std::get<Launch>(flow().start(std::nullopt)));
  step = verify_returns(agent_writes_and_builds(step, 1), wrong());
  ASSERT_TRUE(std::holds_alternative<Launch>(step));
  // Round 2's agent wrote its candidate and generation.json, then the run was killed.
  std::ofstream(flow().id().work / "model_new.py") << "class ModelNew: pass\n";
  step = flow().child_exited({}, false);
  ASSERT_TRUE(std::holds_alternative<NeedBuildSlot>(step));

  flow_.reset();
  flow().resume(/*regenerate=*/false);
  EXPECT_EQ(flow().phase(), Phase::kBuilding) << "round 2's candidate was generated: it is verified";
  Launch verify = [&] {
    (void)build_ends(flow().start(std::nullopt));
    return std::get<Launch>(flow().device_granted({0, "cpu0"}));
  }();
  step = verify_returns(verify, passing(1.5, 2.0, 2.5));
  const CaseResult& r = std::get<Finished>(step).result;
  ASSERT_EQ(r.rounds.size(), 2u);
  EXPECT_EQ(r.rounds[0].verdict, Verdict::kFailCorrectness);

  // Killed before round 2's agent finished: round 2 is generated again.
  fs::remove(paths().result());
  fs::remove(paths().generation());
  flow_.reset();
  flow().resume(/*regenerate=*/false);
  EXPECT_EQ(flow().phase(), Phase::kPending);
  step = probe_succeeds(std::get<Launch>(flow().start(std::nullopt)));
  ASSERT_TRUE(std::holds_alternative<Launch>(step));
  EXPECT_EQ(std::get<Launch>(step).spec.env.at("KGYM_ROUND"), "2");
  EXPECT_NE(util::read_file(flow().id().work / ".kgym" / "round.2.md").value_or("").find("fail_correctness"),
            std::string::npos);
}

}  // namespace
}  // namespace kgym::run
