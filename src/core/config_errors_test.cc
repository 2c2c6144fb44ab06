// Every class of configuration error names the file, the line, the key and
// the fix, and all errors of a file are reported together.
#include "core/backend.h"
#include "core/config_test_fixture.h"

namespace kgym {
namespace {
using testing_config::ConfigTest;
using testing_config::Contains;
using testing_config::kMinimal;

std::string with(std::string_view extra) { return std::string(kMinimal) + std::string(extra); }

TEST_F(ConfigTest, UnknownKeyNamesNearestAndAllowedKeys) {
  std::string message = error_of(with("concurency: 2\n"));
  EXPECT_TRUE(Contains(message, at(5, "concurency") +
                                    "unknown key; did you mean 'concurrency'? allowed at the top level: "
                                    "bench_dir, level, cases, devices, concurrency, output"));
}

TEST_F(ConfigTest, UnknownNestedKey) {
  std::string message = error_of(with("verifier:\n  backend: cpu\n  timeout: 10\n"));
  EXPECT_TRUE(Contains(message, at(7, "verifier.timeout") +
                                    "unknown key; did you mean 'timeout_sec'? allowed under "
                                    "'verifier': backend, python, mode"));
}

TEST_F(ConfigTest, DuplicateKey) {
  EXPECT_TRUE(Contains(error_of(with("level: level1\nlevel: level2\n")), at(6, "level") + "duplicate key"));
}

TEST_F(ConfigTest, WrongTypes) {
  std::string message =
      error_of(with("concurrency: two\n"
                    "verifier:\n"
                    "  compile_cache: maybe\n"
                    "  trials: [3]\n"
                    "  timing: 5\n"
                    "output: [a]\n"));
  EXPECT_TRUE(
      Contains(message, at(5, "concurrency") + "expected an integer, found 'two'; set how many cases"));
  EXPECT_TRUE(Contains(
      message, at(7, "verifier.compile_cache") + "expected true or false, found 'maybe'; write true"));
  EXPECT_TRUE(
      Contains(message, at(8, "verifier.trials") + "expected an integer, found a list; set a whole number"));
  EXPECT_TRUE(Contains(message, at(9, "verifier.timing") +
                                    "expected a mapping of keys, found '5'; write one key per "
                                    "line; allowed keys: warmup, target_rse, min_samples, "
                                    "max_repetitions, repetitions, budget_sec, cache_flush"));
  EXPECT_TRUE(Contains(message, at(10, "output") + "expected a mapping of keys, found a list"));
}

TEST_F(ConfigTest, ValuesOutOfRange) {
  std::string message =
      error_of(with("concurrency: 0\n"
                    "verifier:\n"
                    "  trials: 0\n"
                    "  timeout_sec: 0\n"
                    "  tolerances: {float32: {atol: -1}}\n"
                    "  timing: {budget_sec: 0}\n"
                    "monitor: {poll_sec: -2}\n"));
  EXPECT_TRUE(Contains(message, at(5, "concurrency") + "0 is below the minimum 1; "));
  EXPECT_TRUE(Contains(message, at(7, "verifier.trials") + "0 is below the minimum 1; "));
  EXPECT_TRUE(Contains(
      message, at(8, "verifier.timeout_sec") + "0 is below the minimum 1; set a whole number of seconds"));
  EXPECT_TRUE(Contains(
      message, at(9, "verifier.tolerances.float32.atol") + "-1 must be at least 0; set a number >= 0"));
  EXPECT_TRUE(Contains(message, at(10, "verifier.timing.budget_sec") + "0 must be greater than 0; "));
  EXPECT_TRUE(Contains(message, at(11, "monitor.poll_sec") + "-2 must be greater than 0; "));
}

TEST_F(ConfigTest, CallTimeoutLongerThanTimeout) {
  EXPECT_TRUE(
      Contains(error_of(with("verifier:\n  timeout_sec: 30\n  call_timeout_sec: 60\n")),
               at(7, "verifier.call_timeout_sec") + "call_timeout_sec (60) is longer than timeout_sec (30)"));
}

TEST_F(ConfigTest, TimingKeysAreCheckedTogether) {
  std::string message = error_of(
      with("verifier:\n  timing: {target_rse: 0, min_samples: 50, max_repetitions: 20, cache_flush: 2}\n"));
  EXPECT_TRUE(Contains(message, at(6, "verifier.timing.target_rse") + "0 must be greater than 0; "));
  EXPECT_TRUE(Contains(
      message, at(6, "verifier.timing.min_samples") + "min_samples (50) is above max_repetitions (20)"));
  EXPECT_TRUE(Contains(message, at(6, "verifier.timing.cache_flush") + "expected true or false"));
  EXPECT_TRUE(Contains(error_of(with("verifier:\n  timing: {repetitions: 5, max_repetitions: 9}\n")),
                       "repetitions is the old name of max_repetitions"));
}

TEST_F(ConfigTest, TimingKeysLoad) {
  auto config =
      load(with("verifier:\n  timing: {target_rse: 0.02, min_samples: 4, max_repetitions: 40, "
                "budget_sec: 1.5, cache_flush: true}\n"));
  ASSERT_TRUE(config) << config.error().message;
  const TimingConfig& t = config->verifier.timing;
  EXPECT_EQ(t.target_rse, 0.02);
  EXPECT_EQ(t.min_samples, 4);
  EXPECT_EQ(t.max_repetitions, 40);
  EXPECT_EQ(t.budget, std::chrono::milliseconds(1500));
  EXPECT_TRUE(t.cache_flush);
}

TEST_F(ConfigTest, BadEnumValuesSuggestTheNearest) {
  std::string message = error_of(with("verifier:\n  backend: gpu\n  mode: perf\n"));
  EXPECT_TRUE(Contains(message, at(6, "verifier.backend") +
                                    "'gpu' is not a valid value; did you mean 'cpu'? use one "
                                    "of: cpu, cuda, npu"));
  EXPECT_TRUE(
      Contains(message, at(7, "verifier.mode") + "'perf' is not a valid value; did you mean 'performance'?"));
  EXPECT_TRUE(Contains(error_of("bench_dir: bench\nagent: {kind: shell}\n"),
                       at(2, "agent.kind") + "'shell' is not a valid value; use one of: command, replay"));
}

TEST_F(ConfigTest, UnknownToleranceDtype) {
  std::string message =
      error_of(with("verifier:\n  tolerances:\n    float: {atol: 1}\n    float16: {tol: 1}\n"));
  EXPECT_TRUE(Contains(message, at(7, "verifier.tolerances.float") +
                                    "unknown key; did you mean 'float32'? allowed "
                                    "under 'verifier.tolerances': float32, float64"));
  EXPECT_TRUE(
      Contains(message, at(8, "verifier.tolerances.float16.tol") + "unknown key; did you mean 'atol'?"));
}

TEST_F(ConfigTest, ProblemSizePolicies) {
  auto by_default = load(kMinimal);
  ASSERT_TRUE(by_default.has_value()) << by_default.error().message;
  EXPECT_EQ(by_default->size.kind, ProblemSize::Kind::kByBackend);
  EXPECT_TRUE(sizes_automatically(by_default->size, backend_named("cpu")));
  EXPECT_FALSE(sizes_automatically(by_default->size, backend_named("cuda")));
  auto written = load(kMinimal, {"problem.size=as_written"});
  ASSERT_TRUE(written.has_value()) << written.error().message;
  EXPECT_FALSE(sizes_automatically(written->size, backend_named("cpu")));
  auto budget = load(std::string(kMinimal) +
                     "problem:\n  size: {max_bytes: 1048576, max_forward_ms: 5}\n"
                     "  overrides: {'shape[1]': 64}\n");
  ASSERT_TRUE(budget.has_value()) << budget.error().message;
  EXPECT_EQ(budget->size.kind, ProblemSize::Kind::kAuto);
  EXPECT_EQ(budget->size.max_bytes, 1048576u);
  EXPECT_EQ(budget->size.max_forward_ms, 5);
  EXPECT_TRUE(sizes_automatically(budget->size, backend_named("cuda")));
  EXPECT_EQ(budget->overrides.at("shape[1]"), 64);
}

TEST_F(ConfigTest, BadProblemSize) {
  std::string message = error_of(with("problem:\n  size: small\n"));
  EXPECT_TRUE(Contains(message, at(6, "problem.size") + "'small' is not a size policy; set as_written, auto"))
      << message;
  message = error_of(with("problem:\n  size: {max_bytes: 0, max_ms: 3}\n"));
  EXPECT_TRUE(Contains(message, "problem.size.max_ms")) << message;
  EXPECT_TRUE(Contains(message, "problem.size.max_bytes")) << message;
  message = error_of(with("problem:\n  overrides: {'shape[x]': 3}\n"));
  EXPECT_TRUE(Contains(message, "'shape[x]' is not a Python identifier")) << message;
}

TEST_F(ConfigTest, BadOverrides) {
  std::string message =
      error_of(with("problem:\n  overrides:\n    batch_size: 1.5\n    2x: 1\n    class: 3\n"));
  EXPECT_TRUE(Contains(message, at(7, "problem.overrides.batch_size") + "expected an integer, found '1.5'"));
  EXPECT_TRUE(Contains(
      message, at(8, "problem.overrides.2x") + "'2x' is not a Python identifier; name a module-level"));
  EXPECT_TRUE(Contains(message, at(9, "problem.overrides.class") + "'class' is not a Python identifier"));
}

TEST_F(ConfigTest, CommandAgentChecks) {
  std::string message = error_of(
      "bench_dir: bench\n"
      "agent:\n"
      "  kind: command\n"
      "  argv: [run.sh, '{workspace}', '{promt_file}', '{model}', 'awk { print }']\n"
      "  env: {1BAD: x, GOOD: '{nope}'}\n"
      "  workdir: src\n"
      "  artifacts: [model_new.py, ../escape.py, /abs.py]\n");
  EXPECT_TRUE(Contains(message, at(4, "agent.argv.2") +
                                    "unknown placeholder {promt_file}; did you mean {prompt_file}? "
                                    "known placeholders: {workspace} {prompt_file} {spec_file} "
                                    "{case_id} {model} {device}"));
  EXPECT_TRUE(
      Contains(message, at(4, "agent.argv.3") + "uses {model} but agent.model is not set; set agent.model"));
  EXPECT_TRUE(Contains(message, at(5, "agent.env.1BAD") + "'1BAD' is not a valid environment variable name"));
  EXPECT_TRUE(Contains(message, at(5, "agent.env.GOOD") + "unknown placeholder {nope}"));
  EXPECT_TRUE(Contains(message, at(6, "agent.workdir") +
                                    "'src' is relative to nothing; use an absolute path or one "
                                    "starting with {workspace}"));
  EXPECT_TRUE(Contains(message, at(7, "agent.artifacts.1") + "'../escape.py' leaves the agent workspace"));
  EXPECT_TRUE(Contains(message, at(7, "agent.artifacts.2") + "'/abs.py' leaves the agent workspace"));
  EXPECT_FALSE(Contains(message, "print"));  // braces around non-names are literal text
}

TEST_F(ConfigTest, CommandAgentNeedsArgv) {
  EXPECT_TRUE(
      Contains(error_of("bench_dir: bench\nagent:\n  kind: command\n"),
               at(2, "agent.argv") + "required when agent.kind is command; write the command as a list"));
  EXPECT_TRUE(Contains(error_of("bench_dir: bench\nagent:\n  kind: command\n  argv: []\n"),
                       at(4, "agent.argv") + "is empty"));
  EXPECT_TRUE(Contains(error_of("bench_dir: bench\nagent:\n  kind: command\n  argv: run.sh x\n"),
                       at(4, "agent.argv") + "expected a list, found 'run.sh x'"));
}

TEST_F(ConfigTest, ReplayAgentNeedsAnExistingDir) {
  // No agent section at all: the error says kgym would replay, and what to set.
  EXPECT_TRUE(Contains(error_of("bench_dir: bench\n"),
                       at(1, "agent.dir") + "the config has no agent section, so kgym replays stored candidates"));
  EXPECT_TRUE(Contains(error_of("bench_dir: bench\nagent:\n  kind: replay\n"),
                       at(2, "agent.dir") + "required when agent.kind is replay"));
  std::string message = error_of("bench_dir: bench\nagent:\n  dir: nowhere\n");
  EXPECT_TRUE(Contains(
      message, at(3, "agent.dir") + "'" + (dir_ / "nowhere").string() + "' does not exist; set agent.dir"));
}

TEST_F(ConfigTest, BenchDirMustExistAndBeADirectory) {
  EXPECT_TRUE(
      Contains(error_of("agent: {dir: solutions}\n"), at(1, "bench_dir") + "is required; set bench_dir"));
  EXPECT_TRUE(Contains(error_of("bench_dir: missing\nagent: {dir: solutions}\n"),
                       at(1, "bench_dir") + "'" + (dir_ / "missing").string() + "' does not exist"));
  EXPECT_TRUE(Contains(error_of("bench_dir: config.yaml\nagent: {dir: solutions}\n"),
                       at(1, "bench_dir") + "'" + (dir_ / "config.yaml").string() + "' is not a directory"));
}

TEST_F(ConfigTest, CpuDevices) {
  EXPECT_TRUE(load(with("devices: ['0-3', 4, '5,7-8']\n")).has_value());
  std::string message = error_of(with("devices:\n  - 0-3\n  - 3-5\n  - 4-2\n  - x\n"));
  EXPECT_TRUE(
      Contains(message, at(7, "devices.1") + "core 3 is already part of another device; devices are leased"));
  EXPECT_TRUE(Contains(
      message, at(8, "devices.2") + "'4-2' is not a CPU core list; list one CPU core set per device"));
  EXPECT_TRUE(Contains(message, at(9, "devices.3") + "'x' is not a CPU core list"));
  EXPECT_TRUE(Contains(error_of(with("devices: []\n")), at(5, "devices") + "is empty"));
  EXPECT_TRUE(Contains(error_of(with("devices: [all, 1]\n")),
                       at(5, "devices.0") + "'all' is listed with other devices"));
}

TEST_F(ConfigTest, CudaDevicesAreIndices) {
  auto config = load(with("verifier: {backend: cuda}\ndevices: [0, 1]\n"));
  ASSERT_TRUE(config.has_value()) << config.error().message;
  EXPECT_EQ(config->devices, (std::vector<std::string>{"0", "1"}));
  EXPECT_TRUE(Contains(error_of(with("verifier: {backend: cuda}\ndevices: ['0-1']\n")),
                       at(6, "devices.0") + "'0-1' is not a device index; list cuda device indices"));
}

TEST_F(ConfigTest, NamesMustBePlain) {
  std::string message = error_of(with("level: ../x\noutput: {run_name: a/b}\n"));
  EXPECT_TRUE(Contains(message, at(5, "level") + "'../x' is not a plain directory name"));
  EXPECT_TRUE(Contains(message, at(6, "output.run_name") + "'a/b' is not a plain directory name"));
}

TEST_F(ConfigTest, AllErrorsAreReportedOneLineEach) {
  std::string message = error_of(
      "bench_dir: missing\n"
      "concurrency: 0\n"
      "colour: red\n"
      "agent: {kind: command}\n"
      "verifier: {trials: x}\n");
  EXPECT_EQ(std::count(message.begin(), message.end(), '\n'), 4) << message;
  for (int line = 1; line <= 5; ++line) {
    EXPECT_TRUE(Contains(message, "config.yaml:" + std::to_string(line) + ": key '"));
  }
}

}  // namespace
}  // namespace kgym

namespace kgym {
namespace {

TEST_F(ConfigTest, SandboxKeysAreRead) {
  auto config =
      load(with("sandbox:\n  mode: bwrap\n  drop_privileges: false\n  agent_read_only: [ro]\n"
                "  agent_writable: /var/agent\n  limits: {address_space_mb: 0, processes: 64}\n"));
  ASSERT_TRUE(config.has_value()) << config.error().message;
  EXPECT_EQ(config->sandbox.mode, "bwrap");
  EXPECT_FALSE(config->sandbox.drop_privileges);
  EXPECT_EQ(config->sandbox.agent_read_only, std::vector<std::filesystem::path>{dir_ / "ro"});
  EXPECT_EQ(config->sandbox.agent_writable, std::vector<std::filesystem::path>{"/var/agent"});
  EXPECT_EQ(config->sandbox.address_space_mb, 0);
  EXPECT_EQ(config->sandbox.processes, 64);
  EXPECT_EQ(config->sandbox.cpu_sec, 3600);
  EXPECT_TRUE(config->agent.network);
}

TEST_F(ConfigTest, SandboxErrorsNameTheKey) {
  std::string message = error_of(with("sandbox:\n  mode: docker\n  limits: {processes: -1, memory: 5}\n"));
  EXPECT_TRUE(Contains(message, "sandbox.mode")) << message;
  EXPECT_TRUE(Contains(message, "sandbox.limits.processes")) << message;
  EXPECT_TRUE(Contains(message, "sandbox.limits.memory")) << message;
}

}  // namespace
TEST_F(ConfigTest, WarmWorkers) {
  EXPECT_TRUE(
      Contains(error_of(with("verifier:\n  warm_workers: sometimes\n")), at(6, "verifier.warm_workers")));
  std::string message = error_of(with("verifier:\n  backend: cuda\n  warm_workers: \"on\"\n"));
  EXPECT_TRUE(Contains(message, at(7, "verifier.warm_workers") + "warm_workers is on but backend is cuda"));
  EXPECT_TRUE(Contains(message, "set warm_workers: auto"));
}

TEST_F(ConfigTest, Baselines) {
  auto plain = load(with(""));
  ASSERT_TRUE(plain) << plain.error().message;
  EXPECT_EQ(plain->verifier.baselines, std::vector<std::string>{"eager"});
  EXPECT_FALSE(plain->verifier.compile_baseline());
  auto both = load(with("verifier:\n  baselines: [compile, eager]\n"));
  ASSERT_TRUE(both) << both.error().message;
  EXPECT_EQ(both->verifier.baselines, (std::vector<std::string>{"eager", "compile"}));
  EXPECT_TRUE(both->verifier.compile_baseline());
  std::string unknown = error_of(with("verifier:\n  baselines: [eager, inductor]\n"));
  EXPECT_TRUE(Contains(unknown, "verifier.baselines")) << unknown;
  EXPECT_TRUE(Contains(unknown, "compile")) << unknown;
  std::string no_eager = error_of(with("verifier:\n  baselines: [compile]\n"));
  EXPECT_TRUE(Contains(no_eager, "baselines lacks eager")) << no_eager;
  EXPECT_TRUE(Contains(no_eager, "[eager, compile]")) << no_eager;
  std::string twice = error_of(with("verifier:\n  baselines: [eager, eager]\n"));
  EXPECT_TRUE(Contains(twice, "named twice")) << twice;
}

}  // namespace kgym
