#include "core/config.h"

#include <cstdlib>

#include "core/config_record.h"
#include "core/config_test_fixture.h"

namespace kgym {
namespace {
namespace fs = std::filesystem;
using testing_config::ConfigTest;
using testing_config::Contains;
using testing_config::kMinimal;

TEST_F(ConfigTest, MinimalConfigGetsDefaults) {
  auto config = load(kMinimal);
  ASSERT_TRUE(config.has_value()) << config.error().message;
  EXPECT_EQ(config->source, dir_ / "config.yaml");
  EXPECT_EQ(config->bench_dir, fs::weakly_canonical(dir_ / "bench"));
  EXPECT_EQ(config->agent.replay_dir, fs::weakly_canonical(dir_ / "solutions"));
  EXPECT_EQ(config->level, "level1");
  EXPECT_EQ(config->cases, "");
  EXPECT_EQ(config->devices, std::vector<std::string>{"all"});
  EXPECT_EQ(config->concurrency, 1);
  EXPECT_EQ(config->output_root, fs::current_path() / "runs");
  EXPECT_FALSE(config->run_name.has_value());
  EXPECT_EQ(config->verifier.backend, "cpu");
  EXPECT_EQ(config->verifier.mode, "performance");
  EXPECT_EQ(config->verifier.trials, 3);
  EXPECT_EQ(config->verifier.call_timeout, std::chrono::seconds(60));
  EXPECT_EQ(config->agent.artifacts, std::vector<std::string>{"model_new.py"});
  EXPECT_EQ(config->verifier.tolerances.at("float32").rtol, default_tolerance("float32").rtol);
  EXPECT_EQ(config->verifier.tolerances.at("int64").atol, 0);
  EXPECT_EQ(config->monitor_poll, std::chrono::milliseconds(1000));
}

TEST_F(ConfigTest, DefaultTolerancesAreExactForIntegersAndOrderedByPrecision) {
  EXPECT_EQ(default_tolerance("int32").atol, 0);
  EXPECT_EQ(default_tolerance("bool").rtol, 0);
  EXPECT_LT(default_tolerance("float64").rtol, default_tolerance("float32").rtol);
  EXPECT_LT(default_tolerance("float32").rtol, default_tolerance("float16").rtol);
  EXPECT_LE(default_tolerance("float16").rtol, default_tolerance("bfloat16").rtol);
}

TEST_F(ConfigTest, EveryKeyIsRead) {
  fs::create_directories(dir_ / "out");
  auto config = load(
      "bench_dir: bench\n"
      "level: level2\n"
      "cases: [1, 3]\n"
      "devices: ['0-3', '4-7,9']\n"
      "concurrency: 4\n"
      "output: {root_dir: out, run_name: r1}\n"
      "agent:\n"
      "  kind: command\n"
      "  argv: [./agent.sh, '{workspace}', '{model}']\n"
      "  env: {FOO: '{case_id}', EMPTY: ''}\n"
      "  timeout_sec: 60\n"
      "  workdir: '{workspace}/src'\n"
      "  artifacts: [model_new.py, notes.md]\n"
      "  model: m1\n"
      "verifier:\n"
      "  python: venv/bin/python\n"
      "  mode: correctness\n"
      "  trials: 5\n"
      "  timeout_sec: 100\n"
      "  call_timeout_sec: 20\n"
      "  threads: 4\n"
      "  compile_cache: false\n"
      "  tolerances: {float32: {atol: 1.0e-5}, bfloat16: {atol: 0.1, rtol: 0.05}}\n"
      "  timing: {warmup: 0, repetitions: 7, budget_sec: 2.5}\n"
      "problem: {overrides: {batch_size: 16, dim: -1}}\n"
      "monitor: {poll_sec: 0.25}\n");
  ASSERT_TRUE(config.has_value()) << config.error().message;
  EXPECT_EQ(config->level, "level2");
  EXPECT_EQ(config->cases, "1,3");
  EXPECT_EQ(config->devices, (std::vector<std::string>{"0-3", "4-7,9"}));
  EXPECT_EQ(config->concurrency, 4);
  EXPECT_EQ(config->output_root, fs::weakly_canonical(dir_ / "out"));
  EXPECT_EQ(config->run_name, "r1");
  EXPECT_EQ(config->agent.kind, "command");
  EXPECT_EQ(config->agent.argv, (std::vector<std::string>{"./agent.sh", "{workspace}", "{model}"}));
  EXPECT_EQ(config->agent.env.at("FOO"), "{case_id}");
  EXPECT_EQ(config->agent.env.at("EMPTY"), "");
  EXPECT_EQ(config->agent.timeout, std::chrono::seconds(60));
  EXPECT_EQ(config->agent.workdir, "{workspace}/src");
  EXPECT_EQ(config->agent.artifacts, (std::vector<std::string>{"model_new.py", "notes.md"}));
  EXPECT_EQ(config->agent.model, "m1");
  EXPECT_EQ(config->verifier.python, (dir_ / "venv/bin/python").lexically_normal().string());
  EXPECT_EQ(config->verifier.mode, "correctness");
  EXPECT_EQ(config->verifier.trials, 5);
  EXPECT_EQ(config->verifier.timeout, std::chrono::seconds(100));
  EXPECT_EQ(config->verifier.call_timeout, std::chrono::seconds(20));
  EXPECT_EQ(config->verifier.threads, 4);
  EXPECT_FALSE(config->verifier.compile_cache);
  EXPECT_EQ(config->verifier.tolerances.at("float32").atol, 1e-5);
  EXPECT_EQ(config->verifier.tolerances.at("float32").rtol, default_tolerance("float32").rtol);  // merged
  EXPECT_EQ(config->verifier.tolerances.at("bfloat16").rtol, 0.05);
  EXPECT_EQ(config->verifier.timing.warmup, 0);
  EXPECT_EQ(config->verifier.timing.max_repetitions, 7);  // the old key name still loads
  EXPECT_EQ(config->verifier.timing.budget, std::chrono::milliseconds(2500));
  EXPECT_EQ(config->overrides.at("batch_size"), 16);
  EXPECT_EQ(config->overrides.at("dim"), -1);
  EXPECT_EQ(config->monitor_poll, std::chrono::milliseconds(250));
}

TEST_F(ConfigTest, AnInterpreterInAVenvKeepsItsLink) {
  // A venv's bin/python is a link to the machine's interpreter; resolved,
  // it would run without the venv's packages.
  fs::create_directories(dir_ / "venv/bin");
  fs::create_symlink("/usr/bin/python3", dir_ / "venv/bin/python");
  auto config = load(std::string(kMinimal) + "verifier: {python: ./venv/bin/python}\n");
  ASSERT_TRUE(config.has_value()) << config.error().message;
  EXPECT_EQ(config->verifier.python, (dir_ / "venv/bin/python").lexically_normal().string());
}

TEST_F(ConfigTest, MissingFileIsAnErrorNotAFallback) {
  auto config = load_config(ConfigSource{dir_ / "nope.yaml", {}, {}});
  ASSERT_FALSE(config.has_value());
  EXPECT_TRUE(Contains(config.error().message, (dir_ / "nope.yaml").string()));
  EXPECT_TRUE(Contains(config.error().message, "does not exist"));
}

TEST_F(ConfigTest, YamlSyntaxErrorNamesFileAndLine) {
  std::string message = error_of("bench_dir: bench\nverifier:\n  trials: [1, 2\n  mode: performance\n");
  EXPECT_TRUE(Contains(message, (dir_ / "config.yaml").string() + ":"));
  EXPECT_TRUE(Contains(message, "YAML syntax error"));
  EXPECT_TRUE(Contains(error_of("a: 1\n b: 2\n"), "config.yaml:2: YAML syntax error"));
}

TEST_F(ConfigTest, DocumentThatIsNotAMappingIsAnError) {
  EXPECT_TRUE(Contains(error_of("- a\n- b\n"), "config.yaml:1: the document is not a mapping"));
}

// --set / --override

TEST_F(ConfigTest, SetReplacesFileValuesAndParsesYamlValues) {
  auto config = load(std::string(kMinimal) + "concurrency: 2\n",
                     {"concurrency=3", "devices=[0, '2-3']", "agent.env.FOO=bar", "verifier.trials=7",
                      "verifier.tolerances.float16.rtol=0.5", "output.run_name=nightly"});
  ASSERT_TRUE(config.has_value()) << config.error().message;
  EXPECT_EQ(config->concurrency, 3);
  EXPECT_EQ(config->devices, (std::vector<std::string>{"0", "2-3"}));
  EXPECT_EQ(config->agent.env.at("FOO"), "bar");
  EXPECT_EQ(config->verifier.trials, 7);
  EXPECT_EQ(config->verifier.tolerances.at("float16").rtol, 0.5);
  EXPECT_EQ(config->verifier.tolerances.at("float16").atol, default_tolerance("float16").atol);
  EXPECT_EQ(config->run_name, "nightly");
}

TEST_F(ConfigTest, LaterSetWinsAndOverrideWinsOverSet) {
  auto config = load(kMinimal, {"concurrency=2", "concurrency=5", "problem.overrides.batch_size=8"},
                     {"batch_size=16", "dim=2"});
  ASSERT_TRUE(config.has_value()) << config.error().message;
  EXPECT_EQ(config->concurrency, 5);
  EXPECT_EQ(config->overrides.at("batch_size"), 16);
  EXPECT_EQ(config->overrides.at("dim"), 2);
}

TEST_F(ConfigTest, SetOfAWholeSectionReplacesIt) {
  auto config = load(std::string(kMinimal) + "verifier:\n  trials: 9\n", {"verifier={mode: correctness}"});
  ASSERT_TRUE(config.has_value()) << config.error().message;
  EXPECT_EQ(config->verifier.mode, "correctness");
  EXPECT_EQ(config->verifier.trials, 3);
}

TEST_F(ConfigTest, SetValueErrorsNameTheFlag) {
  std::string message = error_of(kMinimal, {"concurrency=abc", "verifier.trails=3"}, {"batch_size=x"});
  EXPECT_TRUE(
      Contains(message, "--set concurrency=abc: key 'concurrency': expected an integer, found 'abc'; "));
  EXPECT_TRUE(Contains(
      message, "--set verifier.trails=3: key 'verifier.trails': unknown key; did you mean 'trials'?"));
  EXPECT_TRUE(
      Contains(message, "--override batch_size=x: key 'problem.overrides.batch_size': expected an integer"));
}

TEST_F(ConfigTest, AnUnknownKeyASetBroughtInIsTheFlagsNotTheFiles) {
  std::string message = error_of(kMinimal, {"foo.bar=1"});
  EXPECT_TRUE(Contains(message, "--set foo.bar=1: key 'foo': unknown key")) << message;
  // A key the file has keeps its own place.
  message = error_of(std::string(kMinimal) + "foo: 1\n", {"concurrency=2"});
  EXPECT_FALSE(Contains(message, "--set")) << message;
}

TEST_F(ConfigTest, MalformedFlagItemsAreErrorsNamingTheFlag) {
  std::string message =
      error_of(kMinimal, {"concurrency", "=3", "a..b=1", "devices=[0,1"}, {"batch_size", "a.b=1"});
  EXPECT_TRUE(Contains(message, "--set concurrency: missing '='"));
  EXPECT_TRUE(Contains(message, "--set =3: the key '' is empty"));
  EXPECT_TRUE(Contains(message, "--set a..b=1: the key 'a..b' is empty or has an empty part"));
  EXPECT_TRUE(Contains(message, "--set devices=[0,1: the value is not valid YAML"));
  EXPECT_TRUE(Contains(message, "--override batch_size: expected NAME=VALUE"));
  EXPECT_TRUE(Contains(message, "--override a.b=1: expected NAME=VALUE"));
}

TEST_F(ConfigTest, ErrorsInsideASetSectionNameTheFlag) {
  std::string message = error_of(kMinimal, {"agent={kind: command}"});
  EXPECT_TRUE(Contains(message,
                       "--set agent={kind: command}: key 'agent.argv': required when agent.kind is command"));
}

// Paths

TEST_F(ConfigTest, RelativePathsInAFileResolveAgainstItsDirectory) {
  fs::create_directories(dir_ / "sub" / "data" / "level1");
  fs::path file =
      write("bench_dir: data\nagent: {dir: ../solutions}\noutput: {root_dir: ./r}\n", "sub/c.yaml");
  fs::current_path(dir_ / "bench");  // the working directory must not matter
  auto config = load_config(ConfigSource{file, {}, {}});
  ASSERT_TRUE(config.has_value()) << config.error().message;
  EXPECT_EQ(config->bench_dir, fs::weakly_canonical(dir_ / "sub" / "data"));
  EXPECT_EQ(config->agent.replay_dir, fs::weakly_canonical(dir_ / "solutions"));
  EXPECT_EQ(config->output_root, fs::weakly_canonical(dir_ / "sub" / "r"));
  EXPECT_TRUE(config->bench_dir.is_absolute());
}

TEST_F(ConfigTest, RelativePathsInSetResolveAgainstTheCurrentDirectory) {
  fs::create_directories(dir_ / "elsewhere" / "bench2");
  fs::path file = write(kMinimal);
  fs::current_path(dir_ / "elsewhere");
  auto config = load_config(ConfigSource{file, {"bench_dir=bench2", "output.root_dir=out"}, {}});
  ASSERT_TRUE(config.has_value()) << config.error().message;
  EXPECT_EQ(config->bench_dir, fs::weakly_canonical(dir_ / "elsewhere" / "bench2"));
  EXPECT_EQ(config->output_root, fs::weakly_canonical(dir_ / "elsewhere" / "out"));
  EXPECT_EQ(config->agent.replay_dir, fs::weakly_canonical(dir_ / "solutions"));
}

TEST_F(ConfigTest, RelativeConfigFileIsMadeAbsolute) {
  write(kMinimal);
  fs::current_path(dir_);
  auto config = load_config(ConfigSource{"config.yaml", {}, {}});
  ASSERT_TRUE(config.has_value()) << config.error().message;
  EXPECT_EQ(config->source, dir_ / "config.yaml");
}

// Bundled configs

// Copies the tree's configs/ into the temp dir and points KGYM_HOME at it.
class BundledConfigTest : public ConfigTest {
 protected:
  void SetUp() override {
    ConfigTest::SetUp();
    fs::copy(fs::path(KGYM_SOURCE_DIR) / "configs", dir_ / "configs", fs::copy_options::recursive);
    fs::create_directories(dir_ / "data" / "sample" / "level1");
    fs::create_directories(dir_ / "data" / "sample" / "solutions");
    const char* old = std::getenv("KGYM_HOME");
    if (old != nullptr) saved_home_ = old;
    setenv("KGYM_HOME", dir_.c_str(), 1);
  }
  void TearDown() override {
    if (saved_home_) {
      setenv("KGYM_HOME", saved_home_->c_str(), 1);
    } else {
      unsetenv("KGYM_HOME");
    }
    ConfigTest::TearDown();
  }
  std::optional<std::string> saved_home_;
};

TEST_F(BundledConfigTest, BundledDefaultLoads) {
  EXPECT_EQ(bundled_default_config(), dir_ / "configs" / "default.yaml");
  auto config = load_config(ConfigSource{});
  ASSERT_TRUE(config.has_value()) << config.error().message;
  EXPECT_EQ(config->source, dir_ / "configs" / "default.yaml");
  EXPECT_EQ(config->bench_dir, fs::weakly_canonical(dir_ / "data" / "sample"));
  EXPECT_EQ(config->agent.kind, "replay");
  EXPECT_EQ(config->agent.replay_dir, fs::weakly_canonical(dir_ / "data" / "sample" / "solutions"));
  EXPECT_EQ(config->output_root, fs::weakly_canonical(dir_ / "runs"));
  EXPECT_EQ(config->verifier.backend, "cpu");
  EXPECT_EQ(config->verifier.mode, "performance");
  EXPECT_EQ(config->verifier.trials, 3);
  EXPECT_EQ(config->verifier.timeout, std::chrono::seconds(300));
  EXPECT_EQ(config->verifier.call_timeout, std::chrono::seconds(10));
  EXPECT_EQ(config->concurrency, 2);
  EXPECT_EQ(config->devices, (std::vector<std::string>{"0", "1"}));
}

TEST_F(ConfigTest, ExecutionIsTheDeviceAHostInterpreterOrAuto) {
  auto interpreted =
      load(std::string(kMinimal) + "verifier:\n  backend: npu\n  execution: host_interpreter\n");
  ASSERT_TRUE(interpreted.has_value()) << interpreted.error().message;
  EXPECT_EQ(interpreted->verifier.execution, "host_interpreter");
  EXPECT_FALSE(interpreted->verifier.execution_auto);
  // auto stays the device until the run's preflight resolves it.
  auto automatic = load(std::string(kMinimal) + "verifier:\n  backend: cuda\n  execution: auto\n");
  ASSERT_TRUE(automatic.has_value()) << automatic.error().message;
  EXPECT_EQ(automatic->verifier.execution, "device");
  EXPECT_TRUE(automatic->verifier.execution_auto);
  EXPECT_EQ(config_record(*automatic)["verifier"]["execution_auto"], true);
  auto cpu = load(std::string(kMinimal) + "verifier:\n  backend: cpu\n  execution: host_interpreter\n");
  ASSERT_FALSE(cpu.has_value());
  EXPECT_TRUE(Contains(cpu.error().message, "backend cpu has no host_interpreter execution"));
}

TEST_F(BundledConfigTest, CommandAgentExampleLoads) {
  auto config = load_config(ConfigSource{dir_ / "configs" / "examples" / "command_agent.yaml", {}, {}});
  ASSERT_TRUE(config.has_value()) << config.error().message;
  EXPECT_EQ(config->agent.kind, "command");
  EXPECT_FALSE(config->agent.argv.empty());
  EXPECT_TRUE(config->agent.model.has_value());
}

TEST_F(BundledConfigTest, MissingBundledDefaultIsAnError) {
  fs::remove(dir_ / "configs" / "default.yaml");
  auto config = load_config(ConfigSource{});
  ASSERT_FALSE(config.has_value());
  EXPECT_TRUE(Contains(config.error().message, "bundled default config does not exist"));
}

}  // namespace
}  // namespace kgym
