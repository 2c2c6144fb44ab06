#include "run/scheduler.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>

#include <unistd.h>

#include "run/scheduler_test_fixture.h"
#include "run/workflow_test_util.h"
#include "util/fake_process_runner.h"
#include "util/fs.h"
#include "util/sha256.h"
#include "util/temp_dir.h"
#include "verify/verifier.h"

namespace kgym::run {
namespace {

using namespace sched_test;
using util::FakeOutcome;
using util::ProcessExit;
using util::ProcessSpec;
namespace fs = std::filesystem;

TEST_F(SchedulerTest, EveryCasePassesAndIsPersisted) {
  RunOutcome out = run_all();
  ASSERT_EQ(out.results.size(), 4u);
  EXPECT_FALSE(out.interrupted);
  for (std::size_t i = 0; i < 4; ++i) {
    EXPECT_EQ(out.results[i].case_id, cases_[i].id());
    EXPECT_EQ(out.results[i].verdict, Verdict::kPass);
    fs::path dir = options_.run_dir / "cases" / "level1" / cases_[i].stem();
    EXPECT_TRUE(fs::exists(dir / "result.json"));
    EXPECT_TRUE(fs::exists(dir / "SPEC.md"));
    EXPECT_TRUE(fs::exists(dir / "candidate" / "model_new.py"));
    EXPECT_TRUE(fs::exists(dir / "work" / "task_desc.py"));
  }
  auto state = util::read_file(options_.run_dir / "state.json");
  ASSERT_TRUE(state);
  EXPECT_NE(state->find("\"status\": \"finished\""), std::string::npos);
  EXPECT_EQ(printer_.lines.size(), 4u);  // one progress line per case
}

TEST_F(SchedulerTest, OneDeviceMeansOneVerificationAtATime) {
  config_.concurrency = 3;
  run_all();
  EXPECT_EQ(max_verifies_live, 1);
  EXPECT_LE(max_children_live, 3);
}

TEST_F(SchedulerTest, TwoDevicesVerifyInParallel) {
  config_.devices = {"0", "1"};
  config_.concurrency = 4;
  run_all();
  EXPECT_EQ(max_verifies_live, 2);
}

TEST_F(SchedulerTest, ProbeFailureIsAReferenceErrorAndSkipsTheAgent) {
  probe_fails = true;
  RunOutcome out = run_all();
  ASSERT_EQ(out.results.size(), 4u);
  for (const CaseResult& r : out.results) {
    EXPECT_EQ(r.verdict, Verdict::kReferenceError);
    EXPECT_NE(r.reason.find("no class Model"), std::string::npos) << r.reason;
  }
  for (const ProcessSpec& s : runner_->started()) EXPECT_TRUE(has_arg(s, "probe"));
}

TEST_F(SchedulerTest, VerifierWithoutResultIsAHarnessError) {
  verify_writes_nothing = true;
  RunOutcome out = run_all();
  ASSERT_EQ(out.results.size(), 4u);
  EXPECT_EQ(out.results[0].verdict, Verdict::kHarnessError);
}

TEST_F(SchedulerTest, AgentPastItsTimeoutIsAGenerationTimeout) {
  config_.agent.kind = "command";
  config_.agent.argv = {"agent", "{case_id}"};
  config_.agent.timeout = std::chrono::seconds(5);
  script = [this](const ProcessSpec& s) {
    if (s.argv[0] == "agent") return FakeOutcome{std::chrono::hours(1), {}, {}};
    return default_script(s);
  };
  RunOutcome out = run_all();
  ASSERT_EQ(out.results.size(), 4u);
  for (const CaseResult& r : out.results) {
    EXPECT_EQ(r.verdict, Verdict::kGenerationFailed);
    ASSERT_TRUE(r.generation);
    EXPECT_EQ(r.generation->outcome, "timeout");
    // In seconds: the 5 s timeout plus the kill's grace period.
    ASSERT_TRUE(r.timings.generate_s);
    EXPECT_GE(*r.timings.generate_s, 5.0);
    EXPECT_LT(*r.timings.generate_s, 30.0);
    EXPECT_EQ(r.generation->duration_s, r.timings.generate_s);
  }
}

TEST_F(SchedulerTest, AgentArgvIsExpandedAndRunsInItsWorkDir) {
  config_.agent.kind = "command";
  config_.agent.argv = {"agent", "{case_id}", "{prompt_file}"};
  script = [this](const ProcessSpec& s) {
    if (s.argv[0] != "agent") return default_script(s);
    fs::path cwd = s.cwd;
    return FakeOutcome{
        std::chrono::milliseconds(10), {}, [cwd] { std::ofstream(cwd / "model_new.py") << "x = 1\n"; }};
  };
  RunOutcome out = run_all();
  ASSERT_EQ(out.results.size(), 4u);
  EXPECT_EQ(out.results[0].verdict, Verdict::kPass);
  const ProcessSpec* agent = nullptr;
  for (const ProcessSpec& s : runner_->started()) {
    if (s.argv[0] == "agent") agent = &s;
  }
  ASSERT_NE(agent, nullptr);
  EXPECT_EQ(agent->cwd.filename(), "work");
  EXPECT_EQ(fs::path(agent->argv[2]).filename(), "prompt.md");
}

TEST_F(SchedulerTest, AgentRunsInItsSandboxWithItsWorkspaceWritableAndTheDatasetHidden) {
  config_.agent.kind = "command";
  config_.agent.argv = {"/opt/agent", "{case_id}"};
  config_.agent.network = false;
  config_.bench_dir = root_ / "bench";
  options_.sandbox_mode = util::SandboxMode::kBwrap;
  options_.agent_hidden = {root_ / "bench", root_ / "run", root_ / "absent"};
  script = [this](const ProcessSpec& s) {
    if (!has_arg(s, "/opt/agent")) return default_script(s);
    fs::path cwd = arg_after(s, "--chdir");
    return FakeOutcome{
        std::chrono::milliseconds(10), {}, [cwd] { std::ofstream(cwd / "model_new.py") << "x = 1\n"; }};
  };
  RunOutcome out = run_all();
  ASSERT_EQ(out.results.size(), 4u);
  EXPECT_EQ(out.results[0].verdict, Verdict::kPass);
  const ProcessSpec* agent = nullptr;
  for (const ProcessSpec& s : runner_->started()) {
    if (has_arg(s, "/opt/agent")) agent = &s;
  }
  ASSERT_NE(agent, nullptr);
  auto at = std::find(agent->argv.begin(), agent->argv.end(), "bwrap");
  ASSERT_NE(at, agent->argv.end());
  EXPECT_EQ(*(std::find(agent->argv.begin(), agent->argv.end(), "--") + 1), "bwrap");  // after prlimit
  EXPECT_TRUE(has_arg(*agent, "--unshare-net"));
  EXPECT_TRUE(has_arg(*agent, "--unshare-pid"));
  EXPECT_EQ(fs::path(arg_after(*agent, "--bind")).filename(), "work");
  std::vector<std::string> hidden;
  for (auto it = agent->argv.begin(); it != agent->argv.end(); ++it) {
    if (*it == "--tmpfs" && it + 1 != agent->argv.end()) hidden.push_back(*(it + 1));
  }
  // As root the agent runs as uid 65534, which may not enter the test's
  // mkdtemp directory (0700): that one is covered too, outermost first.
  std::vector<std::string> want{"/tmp", (root_ / "bench").string(), (root_ / "run").string()};
  if (::geteuid() == 0) want.insert(want.begin() + 1, root_.string());
  EXPECT_EQ(hidden, want);
  // Its output reaches agent.log through the relay, outside the box.
  EXPECT_EQ(agent->argv.front(), "bash");
  EXPECT_FALSE(has_arg(*agent, agent->log_file.string()));
  // The program is bound again only when it lives in a hidden tree.
  EXPECT_FALSE(has_arg(*agent, "--ro-bind-try"));
  EXPECT_EQ(agent->env.at("TMPDIR"), "/tmp");
  // A private home in the case dir, writable, with the XDG dirs below it.
  fs::path home = agent->env.at("HOME");
  EXPECT_EQ(home.filename(), "agent_home");
  EXPECT_EQ(home.parent_path().parent_path(), root_ / "run" / "cases" / "level1");
  EXPECT_EQ(agent->env.at("XDG_DATA_HOME"), (home / ".local" / "share").string());
  EXPECT_TRUE(fs::is_directory(home));
  bool bound = false;
  for (auto it = agent->argv.begin(); it + 1 != agent->argv.end(); ++it)
    bound |= *it == "--bind" && *(it + 1) == home;
  EXPECT_TRUE(bound);
}

TEST_F(SchedulerTest, AnAgentProgramInAHiddenTreeOrTmpIsBoundBackIntoTheBox) {
  config_.agent.kind = "command";
  config_.bench_dir = root_ / "bench";
  options_.sandbox_mode = util::SandboxMode::kBwrap;
  options_.agent_hidden = {root_ / "bench"};
  int run = 0;
  for (std::string program : {(root_ / "bench" / "agent.sh").string(), std::string("/tmp/kgym-agent.sh")}) {
    config_.agent.argv = {program};
    options_.run_dir = root_ / ("run" + std::to_string(++run));
    script = [&](const ProcessSpec& s) {
      if (!has_arg(s, program)) return default_script(s);
      fs::path cwd = arg_after(s, "--chdir");
      return FakeOutcome{
          std::chrono::milliseconds(10), {}, [cwd] { std::ofstream(cwd / "model_new.py") << "x = 1\n"; }};
    };
    run_all();
    const ProcessSpec* agent = nullptr;
    for (const ProcessSpec& s : runner_->started()) {
      if (has_arg(s, program)) agent = &s;
    }
    ASSERT_NE(agent, nullptr) << program;
    EXPECT_EQ(arg_after(*agent, "--ro-bind-try"), program);
  }
}

TEST_F(SchedulerTest, AgentEnvChoosesItsOwnHome) {
  config_.agent.kind = "command";
  config_.agent.argv = {"/opt/agent"};
  config_.agent.env = {{"HOME", "/srv/agent-home"}};
  options_.sandbox_mode = util::SandboxMode::kBwrap;
  script = [this](const ProcessSpec& s) {
    if (!has_arg(s, "/opt/agent")) return default_script(s);
    fs::path cwd = arg_after(s, "--chdir");
    return FakeOutcome{
        std::chrono::milliseconds(10), {}, [cwd] { std::ofstream(cwd / "model_new.py") << "x = 1\n"; }};
  };
  run_all();
  for (const ProcessSpec& s : runner_->started()) {
    if (!has_arg(s, "/opt/agent")) continue;
    EXPECT_EQ(s.env.at("HOME"), "/srv/agent-home");
    EXPECT_NE(s.env.at("XDG_CONFIG_HOME").find("agent_home"), std::string::npos);
  }
}

TEST_F(SchedulerTest, VerifyRequestCarriesTheResolvedSandbox) {
  options_.sandbox_mode = util::SandboxMode::kUnshare;
  options_.candidate_hidden = {root_ / "bench"};
  run_all();
  auto text = util::read_file(root_ / "run" / "cases" / "level1" / "1_Op" / "verify_request.json");
  ASSERT_TRUE(text);
  auto req = verify::verify_request_from_json(nlohmann::json::parse(*text));
  EXPECT_EQ(req.sandbox.mode, "unshare");
  ASSERT_EQ(req.sandbox_hidden.size(), 1u);
  EXPECT_EQ(req.sandbox_hidden[0], root_ / "bench");
}

TEST_F(SchedulerTest, FinishedResultsAreKeptOnResume) {
  fs::path dir = options_.run_dir / "cases" / "level1" / "2_Op";
  fs::create_directories(dir);
  CaseResult previous;
  previous.case_id = "level1/2_Op";
  previous.verdict = Verdict::kFailCorrectness;
  previous.reason = "from before";
  std::ofstream(dir / "result.json") << to_json(previous).dump();
  RunOutcome out = run_all();
  ASSERT_EQ(out.results.size(), 4u);
  EXPECT_EQ(out.results[1].reason, "from before");
  for (const ProcessSpec& s : runner_->started()) EXPECT_EQ(s.cwd.string().find("2_Op"), std::string::npos);
}

TEST_F(SchedulerTest, GeneratedButUnverifiedCandidateIsVerifiedNotRegenerated) {
  config_.agent.kind = "command";
  config_.agent.argv = {"agent"};
  fs::path dir = options_.run_dir / "cases" / "level1" / "3_Op";
  fs::create_directories(dir / "candidate");
  std::ofstream(dir / "candidate" / "model_new.py") << "class ModelNew: pass\n";
  std::ofstream(dir / "generation.json") << R"({"outcome": "ok", "agent": "command", "duration_s": 12.5})";
  script = [this](const ProcessSpec& s) {
    if (s.argv[0] == "agent")
      return FakeOutcome{std::chrono::milliseconds(10), {ProcessExit::Kind::kExited, 1}, {}};
    return default_script(s);
  };
  RunOutcome out = run_all();
  ASSERT_EQ(out.results.size(), 4u);
  EXPECT_EQ(out.results[2].verdict, Verdict::kPass);
  ASSERT_TRUE(out.results[2].generation);
  EXPECT_EQ(out.results[2].generation->duration_s, 12.5);
  EXPECT_EQ(out.results[0].verdict, Verdict::kGenerationFailed);  // the others ran the failing agent
}

// A turn looks only at the live samples and starts new ones from a cursor:
// with many cases the bound holds, cases start in order, and the finished
// ones in between are skipped.
TEST_F(SchedulerTest, ManyCasesStartInOrderWithinTheBoundAndSkipFinishedOnes) {
  cases_.clear();
  for (int n = 1; n <= 40; ++n) {
    std::string stem = std::to_string(n) + "_Op";
    std::ofstream(root_ / "bench" / "level1" / (stem + ".py")) << "class Model: pass\n";
    fs::create_directories(root_ / "solutions" / "level1" / stem);
    std::ofstream(root_ / "solutions" / "level1" / stem / "model_new.py") << "class ModelNew: pass\n";
    cases_.push_back(Case{"level1", n, "Op", root_ / "bench" / "level1" / (stem + ".py")});
    if (n % 7 != 1) continue;
    fs::path dir = options_.run_dir / "cases" / "level1" / stem;
    fs::create_directories(dir);
    CaseResult previous;
    previous.case_id = cases_.back().id();
    previous.verdict = Verdict::kFailCorrectness;
    previous.reason = "from before";
    std::ofstream(dir / "result.json") << to_json(previous).dump();
  }
  config_.concurrency = 3;
  config_.devices = {"0", "1"};
  RunOutcome out = run_all();
  ASSERT_EQ(out.results.size(), 40u);
  std::vector<int> probed;
  for (const ProcessSpec& s : runner_->started()) {
    if (!has_arg(s, "probe")) continue;
    std::string stem = fs::path(arg_after(s, "--out")).parent_path().filename().string();
    probed.push_back(std::stoi(stem));
  }
  std::vector<int> expected;
  for (int n = 1; n <= 40; ++n) {
    EXPECT_EQ(out.results[n - 1].verdict, n % 7 == 1 ? Verdict::kFailCorrectness : Verdict::kPass) << n;
    if (n % 7 != 1) expected.push_back(n);
  }
  EXPECT_EQ(probed, expected);
  EXPECT_EQ(max_children_live, 3);
  EXPECT_LE(max_verifies_live, 2);
  RunState state =
      run_state_from_json(nlohmann::json::parse(*util::read_file(options_.run_dir / "state.json")));
  ASSERT_EQ(state.cases.size(), 40u);
  for (const CaseState& c : state.cases) EXPECT_EQ(c.phase, "done") << c.id;
}

}  // namespace
}  // namespace kgym::run

namespace kgym::run {
namespace {

// A workflow stage whose gate fails on the first attempt is re-prompted with
// the failed check and passes on the second; the records keep both attempts.
TEST_F(SchedulerTest, WorkflowStageIsRepromptedUntilItsGatesPass) {
  cases_.resize(1);
  std::ofstream(root_ / "plan.md") << "Plan {case_id} (attempt {attempt})\n";
  config_.agent.kind = "command";
  config_.agent.argv = {"agent", "{prompt_file}"};
  config_.agent.artifacts = {"model_new.py"};
  StageConfig stage;
  stage.name = "plan";
  stage.prompt = root_ / "plan.md";
  stage.artifacts = {"PLAN.md"};
  GateConfig words;
  words.kind = "forbidden_words";
  words.file = "PLAN.md";
  words.items = {"TBD"};
  stage.gates = {words};
  config_.workflow.stages = {stage};
  config_.workflow.max_attempts = 3;
  std::vector<std::string> prompts;
  script = [this, &prompts](const ProcessSpec& s) {
    if (s.argv.front() != "agent") return default_script(s);
    FakeOutcome out;
    fs::path prompt = s.argv.at(1);
    fs::path work = s.cwd;
    prompts.push_back(util::read_file(prompt).value_or(""));
    bool reprompted = prompts.back().find("Checks that failed") != std::string::npos;
    out.side_effect = [work, reprompted] {
      std::ofstream(work / "PLAN.md") << (reprompted ? "# Plan\ndone\n" : "# Plan\nTBD\n");
      std::ofstream(work / "model_new.py") << "class ModelNew: pass\n";
    };
    return out;
  };
  RunOutcome out = run_all();
  ASSERT_EQ(out.results.size(), 1u);
  EXPECT_EQ(out.results[0].verdict, Verdict::kPass) << out.results[0].reason;
  ASSERT_EQ(prompts.size(), 2u);
  EXPECT_EQ(prompts[0], "Plan level1/1_Op (attempt 1)\n");
  EXPECT_NE(prompts[1].find("- forbidden_words PLAN.md: PLAN.md contains 'TBD' (line 2)"), std::string::npos)
      << prompts[1];
  const Generation& g = *out.results[0].generation;
  ASSERT_EQ(g.stages.size(), 1u);
  EXPECT_TRUE(g.stages[0].passed);
  ASSERT_EQ(g.stages[0].attempts.size(), 2u);
  EXPECT_FALSE(g.stages[0].attempts[0].passed());
  EXPECT_TRUE(g.stages[0].attempts[1].passed());
  EXPECT_EQ(g.prompt_sha256, util::sha256_hex(prompts[0]));
  auto state = util::read_file(options_.run_dir / "state.json");
  ASSERT_TRUE(state);
  EXPECT_NE(state->find("\"stage\": \"plan\""), std::string::npos);
  EXPECT_NE(state->find("\"attempt\": 2"), std::string::npos);
}

// A command gate runs a program the agent wrote: it is a child of the event
// loop in the agent's box without network, under its own deadline, and
// other cases go on while it runs. One gate hangs past its timeout and is
// stopped; the other prints its marker.
TEST_F(SchedulerTest, CommandGatesAreSandboxedChildrenWithTheirOwnDeadline) {
  cases_.resize(2);
  config_.agent.kind = "command";
  config_.agent.argv = {"/opt/agent", "{prompt_file}"};
  config_.agent.network = true;  // the agent's own network never reaches its gates
  options_.sandbox_mode = util::SandboxMode::kBwrap;
  config_.workflow = command_gate_workflow(root_ / "develop.md", {"/opt/test.sh", "{case_id}"}, "TESTS_OK",
                                           std::chrono::seconds(5), /*max_attempts=*/1);
  std::vector<ProcessSpec> gates;
  script = [this, &gates](const ProcessSpec& s) {
    if (has_arg(s, "/opt/agent")) {
      fs::path work = arg_after(s, "--chdir");
      return FakeOutcome{std::chrono::milliseconds(10), {}, [work] {
                           std::ofstream(work / "model_new.py") << "class ModelNew: pass\n";
                         }};
    }
    if (!has_arg(s, "/opt/test.sh")) return default_script(s);
    gates.push_back(s);
    if (has_arg(s, "level1/1_Op")) return FakeOutcome{std::chrono::minutes(10), {}, {}};  // hangs
    fs::path log = s.log_file;
    return FakeOutcome{std::chrono::milliseconds(50), {}, [log] { std::ofstream(log) << "TESTS_OK\n"; }};
  };
  RunOutcome out = run_all();
  ASSERT_EQ(out.results.size(), 2u);
  EXPECT_EQ(out.results[0].verdict, Verdict::kGenerationFailed);
  EXPECT_NE(out.results[0].reason.find("command /opt/test.sh {case_id}: timed out after 5 s"),
            std::string::npos)
      << out.results[0].reason;
  EXPECT_EQ(out.results[1].verdict, Verdict::kPass) << out.results[1].reason;
  ASSERT_EQ(gates.size(), 2u);
  for (const ProcessSpec& g : gates) {
    EXPECT_TRUE(has_arg(g, "bwrap"));
    EXPECT_TRUE(has_arg(g, "--unshare-net"));
    EXPECT_EQ(fs::path(arg_after(g, "--bind")).filename(), "work");
    EXPECT_EQ(fs::path(arg_after(g, "--chdir")).filename(), "work");
    // Its log is outside the box's writable dirs: only its stdout reaches it.
    EXPECT_EQ(g.log_file.parent_path().parent_path().filename(), "gates");
    for (auto it = g.argv.begin(); it + 1 != g.argv.end(); ++it)
      EXPECT_FALSE(*it == "--bind" && *(it + 1) == g.log_file.string());
  }
  // The hung gate did not hold the other case back.
  auto events = util::read_file(options_.run_dir / "events.jsonl");
  ASSERT_TRUE(events);
  std::size_t second = events->find(R"("case":"level1/2_Op","event":"finished")");
  std::size_t first = events->find(R"("case":"level1/1_Op","event":"finished")");
  ASSERT_NE(second, std::string::npos) << *events;
  ASSERT_NE(first, std::string::npos) << *events;
  EXPECT_LT(second, first);
}

// A profile's transcript (agent.log) becomes usage in the result, with the
// CLI version the campaign found.
TEST_F(SchedulerTest, ProfileUsageAndProvenanceReachTheResult) {
  cases_.resize(1);
  config_.agent.kind = "claude";
  config_.agent.binary = "claude";
  config_.agent.model = "sonnet";
  options_.agent_version = "2.0.0 (Claude Code)";
  script = [this](const ProcessSpec& s) {
    if (s.argv.front() != "claude") return default_script(s);
    FakeOutcome out;
    fs::path work = s.cwd, log = s.log_file;
    out.side_effect = [work, log] {
      std::ofstream(work / "model_new.py") << "class ModelNew: pass\n";
      std::ofstream(log) << "{\"type\":\"result\",\"total_cost_usd\":0.5,\"usage\":{\"input_tokens\":7,"
                            "\"output_tokens\":3}}\n";
    };
    return out;
  };
  RunOutcome out = run_all();
  ASSERT_EQ(out.results.size(), 1u);
  const Generation& g = *out.results[0].generation;
  EXPECT_EQ(g.agent, "claude");
  EXPECT_EQ(g.model, "sonnet");
  EXPECT_EQ(g.agent_version, "2.0.0 (Claude Code)");
  EXPECT_EQ(g.tokens_in, 7);
  EXPECT_EQ(g.tokens_out, 3);
  EXPECT_EQ(g.cost, 0.5);
  EXPECT_EQ(g.transcript, "session/transcript.jsonl");
  auto prompt = util::read_file(options_.run_dir / "cases/level1/1_Op/work/prompt.md");
  ASSERT_TRUE(prompt);
  EXPECT_EQ(g.prompt_sha256, util::sha256_hex(*prompt));
}

}  // namespace
}  // namespace kgym::run
