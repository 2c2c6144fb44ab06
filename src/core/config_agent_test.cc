// Agent profiles and workflows in the config.
#include <sys/stat.h>

#include "core/config_test_fixture.h"

namespace kgym::testing_config {
namespace {

TEST_F(ConfigTest, ProfileCliMustExist) {
  std::string message = error_of("bench_dir: bench\nagent:\n  kind: claude\n  binary: ./no-such-claude\n");
  EXPECT_TRUE(Contains(message, at(4, "agent.binary") + "the claude CLI '" +
                                    (dir_ / "no-such-claude").string() +
                                    "' is not an executable file; install it (npm install -g "
                                    "@anthropic-ai/claude-code) or set agent.binary to its path"));
  message = error_of("bench_dir: bench\nagent:\n  kind: codex\n  binary: kgym-no-such-codex\n");
  EXPECT_TRUE(
      Contains(message, at(4, "agent.binary") + "the codex CLI 'kgym-no-such-codex' is not found on PATH"));
}

TEST_F(ConfigTest, ProfileWithItsCli) {
  fs::path cli = write("#!/bin/sh\necho 1.2.3\n", "bin/opencode");
  ::chmod(cli.c_str(), 0755);
  auto config = load(
      "bench_dir: bench\nagent:\n  kind: opencode\n  binary: bin/opencode\n  model: mock/kgym-mock\n"
      "  opencode_agent: build\n  extra_args: ['--log-level', DEBUG]\n");
  ASSERT_TRUE(config) << config.error().message;
  EXPECT_EQ(config->agent.kind, "opencode");
  EXPECT_EQ(config->agent.binary, cli.string());
  EXPECT_EQ(config->agent.opencode_agent, "build");
  EXPECT_EQ(config->agent.extra_args, (std::vector<std::string>{"--log-level", "DEBUG"}));
}

TEST_F(ConfigTest, ProfileKeysBelongToProfiles) {
  fs::path cli = write("#!/bin/sh\n", "bin/claude");
  ::chmod(cli.c_str(), 0755);
  std::string message = error_of(
      "bench_dir: bench\nagent:\n  kind: claude\n  binary: bin/claude\n  argv: [x]\n"
      "  opencode_agent: build\n");
  EXPECT_TRUE(Contains(message, at(5, "agent.argv") + "is built by the claude profile"));
  EXPECT_TRUE(Contains(message, at(6, "agent.opencode_agent") + "is only used by the opencode profile"));
  message = error_of("bench_dir: bench\nagent:\n  kind: command\n  argv: [sh]\n  extra_args: [x]\n");
  EXPECT_TRUE(
      Contains(message, at(5, "agent.extra_args") + "is only used by the opencode, claude and codex"));
}

TEST_F(ConfigTest, CommandProgramOnPath) {
  EXPECT_TRUE(Contains(error_of("bench_dir: bench\nagent:\n  kind: command\n  argv: [kgym-no-such-agent]\n"),
                       at(4, "agent.argv.0") + "'kgym-no-such-agent' is not found on PATH"));
}

TEST_F(ConfigTest, FeedbackRounds) {
  write("Fix it.\n", "prompts/feedback.md");
  auto config = load(
      "bench_dir: bench\nagent:\n  kind: command\n  argv: [sh]\n"
      "  feedback: {rounds: 3, until: fast_1, prompt: prompts/feedback.md}\n");
  ASSERT_TRUE(config) << config.error().message;
  EXPECT_EQ(config->agent.feedback.rounds, 3);
  EXPECT_TRUE(config->agent.feedback.on());
  EXPECT_EQ(config->agent.feedback.until, "fast_1");
  EXPECT_EQ(config->agent.feedback.prompt, dir_ / "prompts/feedback.md");
  EXPECT_FALSE(load("bench_dir: bench\nagent: {kind: command, argv: [sh]}\n")->agent.feedback.on());

  std::string message = error_of(
      "bench_dir: bench\nagent:\n  kind: command\n  argv: [sh]\n  feedback: {rounds: 0, until: fast_3}\n");
  EXPECT_TRUE(Contains(message, at(5, "agent.feedback.rounds")));
  EXPECT_TRUE(Contains(message, at(5, "agent.feedback.until") + "'fast_3'")) << message;
  message = error_of("bench_dir: bench\nagent:\n  kind: command\n  argv: [sh]\n  feedback: {until: pass}\n");
  EXPECT_TRUE(Contains(message, "key 'agent.feedback.rounds': is required")) << message;
  message = error_of(
      "bench_dir: bench\nverifier: {mode: correctness}\nagent:\n  kind: command\n  argv: [sh]\n"
      "  feedback: {rounds: 2, until: fast_2}\n");
  EXPECT_TRUE(Contains(message, at(6, "agent.feedback.until") +
                                    "fast_2 needs a speedup, and verifier.mode correctness times nothing"))
      << message;
  message = error_of("bench_dir: bench\nagent:\n  kind: replay\n  dir: .\n  feedback: {rounds: 2}\n");
  EXPECT_TRUE(Contains(message, at(5, "agent.feedback") + "needs an agent that runs")) << message;
}

TEST_F(ConfigTest, SelfCheck) {
  auto config = load("bench_dir: bench\nagent:\n  kind: command\n  argv: [sh]\n  self_check: true\n");
  ASSERT_TRUE(config) << config.error().message;
  EXPECT_TRUE(config->agent.self_check);
  std::string message = error_of("bench_dir: bench\nagent:\n  kind: replay\n  dir: .\n  self_check: true\n");
  EXPECT_TRUE(Contains(message, at(5, "agent.self_check") + "needs an agent that runs")) << message;
}

TEST_F(ConfigTest, WorkflowStagesAndGates) {
  write("Plan the kernel for {case_id}.\n", "prompts/plan.md");
  auto config = load(
      "bench_dir: bench\nagent: {kind: command, argv: [sh]}\n"
      "workflow:\n"
      "  max_attempts: 2\n"
      "  stages:\n"
      "    - name: plan\n"
      "      prompt: prompts/plan.md\n"
      "      artifacts: [PLAN.md]\n"
      "      gates:\n"
      "        - {kind: headings, file: PLAN.md, headings: ['## Goal']}\n"
      "        - {kind: sections, file: PLAN.md, min_sections: 2}\n"
      "        - {kind: forbidden_words, file: PLAN.md, words: [TBD]}\n"
      "        - {kind: command, argv: [python3, check.py], marker: OK, timeout_sec: 5}\n"
      "        - {kind: python_symbols, file: golden.py, symbols: [ModelNew]}\n"
      "        - {kind: static_check, file: model_new.py}\n");
  ASSERT_TRUE(config) << config.error().message;
  ASSERT_EQ(config->workflow.stages.size(), 1u);
  const StageConfig& stage = config->workflow.stages[0];
  EXPECT_EQ(config->workflow.max_attempts, 2);
  EXPECT_EQ(stage.prompt, dir_ / "prompts/plan.md");
  ASSERT_EQ(stage.gates.size(), 6u);
  EXPECT_EQ(stage.gates[0].items, (std::vector<std::string>{"## Goal"}));
  EXPECT_EQ(stage.gates[1].min_count, 2);
  EXPECT_EQ(stage.gates[3].marker, "OK");
  EXPECT_EQ(stage.gates[3].timeout, std::chrono::seconds(5));
}

TEST_F(ConfigTest, WorkflowErrorsNameTheStageKey) {
  std::string message = error_of(
      "bench_dir: bench\nagent: {kind: command, argv: [sh]}\n"
      "workflow:\n"
      "  stages:\n"
      "    - name: plan\n"
      "      prompt: prompts/missing.md\n"
      "      gates:\n"
      "        - {kind: headings, file: ../PLAN.md}\n"
      "        - {kind: sections, file: PLAN.md, words: [x]}\n"
      "        - {kind: magic}\n"
      "    - name: plan\n"
      "      prompt: prompts/missing.md\n");
  EXPECT_TRUE(Contains(message, at(6, "workflow.stages.0.prompt") + "'" +
                                    (dir_ / "prompts/missing.md").string() + "' does not exist"));
  EXPECT_TRUE(Contains(message,
                       at(8, "workflow.stages.0.gates.0.file") + "'../PLAN.md' leaves the agent's work dir"));
  EXPECT_TRUE(Contains(message, at(8, "workflow.stages.0.gates.0.headings") + "required by a headings gate"));
  EXPECT_TRUE(Contains(message, at(9, "workflow.stages.0.gates.1.words") + "is not used by a sections gate"));
  EXPECT_TRUE(
      Contains(message, at(9, "workflow.stages.0.gates.1.min_sections") + "required by a sections gate"));
  EXPECT_TRUE(Contains(message, at(10, "workflow.stages.0.gates.2.kind") + "'magic' is not a valid value"));
  EXPECT_TRUE(Contains(message, at(11, "workflow.stages.1.name") + "stage 'plan' is defined twice"));
  EXPECT_TRUE(
      Contains(error_of(std::string(kMinimal) + "workflow: {stages: []}\n"), "needs an agent that runs"));
}

}  // namespace
}  // namespace kgym::testing_config

namespace kgym::testing_config {
namespace {

// The shipped workflow example loads once its CLI is on PATH.
TEST_F(ConfigTest, WorkflowExampleLoads) {
  fs::path cli = write("#!/bin/sh\necho 1.0.0\n", "bin/opencode");
  ::chmod(cli.c_str(), 0755);
  std::string saved = std::getenv("PATH") != nullptr ? std::getenv("PATH") : "";
  ::setenv("PATH", ((dir_ / "bin").string() + ":" + saved).c_str(), 1);
  auto config = load_config(
      ConfigSource{fs::path(KGYM_SOURCE_DIR) / "configs" / "examples" / "workflow_4stage.yaml", {}, {}});
  ::setenv("PATH", saved.c_str(), 1);
  ASSERT_TRUE(config) << config.error().message;
  ASSERT_EQ(config->workflow.stages.size(), 4u);
  std::vector<std::string> names;
  for (const StageConfig& stage : config->workflow.stages) names.push_back(stage.name);
  EXPECT_EQ(names, (std::vector<std::string>{"plan", "golden", "design", "develop"}));
  EXPECT_EQ(config->agent.kind, "opencode");
}

// The shipped feedback example loads once its CLI is on PATH.
TEST_F(ConfigTest, FeedbackExampleLoads) {
  fs::path cli = write("#!/bin/sh\necho 1.0.0\n", "bin/claude");
  ::chmod(cli.c_str(), 0755);
  std::string saved = std::getenv("PATH") != nullptr ? std::getenv("PATH") : "";
  ::setenv("PATH", ((dir_ / "bin").string() + ":" + saved).c_str(), 1);
  auto config =
      load_config(ConfigSource{fs::path(KGYM_SOURCE_DIR) / "configs" / "examples" / "feedback.yaml", {}, {}});
  ::setenv("PATH", saved.c_str(), 1);
  ASSERT_TRUE(config) << config.error().message;
  EXPECT_EQ(config->agent.feedback.rounds, 3);
  EXPECT_EQ(config->agent.feedback.until, "fast_1");
}

}  // namespace
}  // namespace kgym::testing_config

namespace kgym::testing_config {
namespace {

TEST_F(ConfigTest, SamplesAndAgentDeviceDefaultOff) {
  auto config = load(kMinimal);
  ASSERT_TRUE(config) << config.error().message;
  EXPECT_EQ(config->samples, 1);
  EXPECT_FALSE(config->agent.needs_device);
}

TEST_F(ConfigTest, SamplesAndAgentDevice) {
  auto config = load(
      "bench_dir: bench\nsamples: 5\nagent:\n  kind: command\n  argv: [/bin/sh]\n"
      "  needs_device: true\n");
  ASSERT_TRUE(config) << config.error().message;
  EXPECT_EQ(config->samples, 5);
  EXPECT_TRUE(config->agent.needs_device);
}

TEST_F(ConfigTest, SamplesBelowOneAndAReplayAgentWithADeviceAreErrors) {
  std::string message = error_of(std::string(kMinimal) + "  needs_device: true\nsamples: 0\n");
  EXPECT_TRUE(Contains(message, at(6, "samples") +
                                    "0 is below the minimum 1; set how many independent generations each "
                                    "case gets, at least 1, e.g. samples: 5"))
      << message;
  EXPECT_TRUE(Contains(message, at(5, "agent.needs_device") +
                                    "needs an agent that runs; remove it or set agent.kind to command"))
      << message;
}

}  // namespace
}  // namespace kgym::testing_config
