// The scheduler with several samples per case (pass@k) and with agents that
// lease a device for their generation (agent.needs_device), on the fakes.
#include <gtest/gtest.h>

#include <map>
#include <tuple>

#include "run/scheduler_test_fixture.h"

namespace kgym::run {
namespace {

using namespace sched_test;

// The sample a verification belongs to, from its request path
// (".../samples/<k>/verify_request.json").
int sample_of(const ProcessSpec& spec) {
  fs::path dir = fs::path(arg_after(spec, "--request")).parent_path();
  return dir.parent_path().filename() == "samples" ? std::stoi(dir.filename().string()) : 0;
}

nlohmann::json read_json(const fs::path& file) {
  auto text = util::read_file(file);
  return text ? nlohmann::json::parse(*text) : nlohmann::json();
}

// Sample 2 of every case is wrong; samples 1 and 3 pass at 1.2x and 1.5x.
void mixed_samples(CaseResult& r, const ProcessSpec& spec) {
  int k = sample_of(spec);
  if (k == 2) {
    r.verdict = Verdict::kFailCorrectness;
    r.reason = "output 0 differs";
    return;
  }
  r.performance = Performance{};
  r.performance->speedup.median = k == 1 ? 1.2 : 1.5;
}

TEST_F(SchedulerTest, SamplesOfACaseAddUpToItsBestSampleAndPassAtK) {
  cases_.resize(2);
  config_.samples = 3;
  config_.concurrency = 3;
  shape_result = mixed_samples;
  RunOutcome out = run_all();
  ASSERT_EQ(out.results.size(), 2u);
  const CaseResult& r = out.results[0];
  EXPECT_EQ(r.case_id, "level1/1_Op");
  EXPECT_EQ(r.verdict, Verdict::kPass);
  ASSERT_TRUE(r.performance);
  EXPECT_EQ(r.performance->speedup.median, 1.5);
  ASSERT_TRUE(r.samples);
  EXPECT_EQ(r.samples->n, 3);
  EXPECT_EQ(r.samples->passed, 2);
  EXPECT_EQ(r.samples->chosen, 3);
  EXPECT_DOUBLE_EQ(r.samples->pass_at_k.at(1), 2.0 / 3);
  EXPECT_EQ(r.samples->pass_at_k.at(3), 1.0);
  EXPECT_EQ(r.samples->best_speedup, 1.5);

  fs::path dir = options_.run_dir / "cases" / "level1" / "1_Op";
  nlohmann::json on_disk = read_json(dir / "result.json");
  EXPECT_EQ(on_disk["samples"]["n"], 3);
  EXPECT_EQ(on_disk["samples"]["per_sample"][1]["verdict"], "fail_correctness");
  EXPECT_FALSE(fs::exists(dir / "work"));  // every sample has its own
  std::set<std::uint64_t> seeds;
  for (int k = 1; k <= 3; ++k) {
    fs::path sample = dir / "samples" / std::to_string(k);
    EXPECT_TRUE(fs::exists(sample / "work" / "SPEC.md")) << k;
    EXPECT_TRUE(fs::exists(sample / "candidate" / "model_new.py")) << k;
    EXPECT_EQ(read_json(sample / "result.json")["verdict"], k == 2 ? "fail_correctness" : "pass");
    seeds.insert(read_json(sample / "verify_request.json")["run_seed"].get<std::uint64_t>());
  }
  EXPECT_EQ(seeds.size(), 3u);

  RunState state = run_state_from_json(read_json(options_.run_dir / "state.json"));
  EXPECT_EQ(state.cases[0].phase, "done");
  EXPECT_EQ(state.cases[0].samples, 3);
  EXPECT_EQ(state.cases[0].samples_done, 3);
  auto events = util::read_file(options_.run_dir / "events.jsonl");
  ASSERT_TRUE(events);
  std::size_t ended = 0;
  for (std::size_t at = events->find("\"sample_finished\""); at != std::string::npos;
       at = events->find("\"sample_finished\"", at + 1))
    ++ended;
  EXPECT_EQ(ended, 6u);
  EXPECT_EQ(printer_.lines.size(), 2u);  // one line per case, not per sample
}

TEST_F(SchedulerTest, ConcurrencyCountsSamples) {
  cases_.resize(1);
  config_.samples = 4;
  config_.concurrency = 2;
  config_.devices = {"0", "1", "2", "3"};
  RunOutcome out = run_all();
  ASSERT_EQ(out.results.size(), 1u);
  EXPECT_EQ(out.results[0].samples->passed, 4);
  EXPECT_EQ(max_children_live, 2);  // two samples of one case at once, never more
}

TEST_F(SchedulerTest, ResumeKeepsEndedSamplesAndVerifiesAGeneratedOne) {
  cases_.resize(1);
  config_.samples = 3;
  config_.agent.kind = "command";
  config_.agent.argv = {"agent"};
  fs::path samples = options_.run_dir / "cases" / "level1" / "1_Op" / "samples";
  fs::create_directories(samples / "1");
  CaseResult ended;
  ended.case_id = "level1/1_Op";
  ended.verdict = Verdict::kFailCorrectness;
  ended.reason = "from before";
  std::ofstream(samples / "1" / "result.json") << to_json(ended).dump();
  fs::create_directories(samples / "2" / "candidate");
  std::ofstream(samples / "2" / "candidate" / "model_new.py") << "class ModelNew: pass\n";
  std::ofstream(samples / "2" / "generation.json") << R"({"outcome": "ok", "agent": "command"})";
  std::vector<fs::path> agent_dirs;
  script = [this, &agent_dirs](const ProcessSpec& s) {
    if (s.argv[0] != "agent") return default_script(s);
    agent_dirs.push_back(s.cwd);
    fs::path cwd = s.cwd;
    return FakeOutcome{
        std::chrono::milliseconds(10), {}, [cwd] { std::ofstream(cwd / "model_new.py") << "x = 1\n"; }};
  };
  RunOutcome out = run_all();
  ASSERT_EQ(out.results.size(), 1u);
  EXPECT_EQ(agent_dirs, std::vector<fs::path>{samples / "3" / "work"});  // only the sample never generated
  for (const ProcessSpec& s : runner_->started())
    EXPECT_EQ(s.cwd.string().find("samples/1"), std::string::npos) << s.cwd;
  const CaseResult& r = out.results[0];
  ASSERT_TRUE(r.samples);
  EXPECT_EQ(r.samples->n, 3);
  EXPECT_EQ(r.samples->passed, 2);
  EXPECT_EQ(r.samples->per_sample[0].reason, "from before");
  EXPECT_EQ(r.samples->chosen, 2);
}

// With agent.needs_device a case holds one device from before its agent
// starts until its verification ends, and no device ever has two holders.
TEST_F(SchedulerTest, AgentThatNeedsADeviceHoldsItThroughItsVerification) {
  cases_.push_back(Case{"level1", 5, "Op", root_ / "bench" / "level1" / "5_Op.py"});
  std::ofstream(root_ / "bench" / "level1" / "5_Op.py") << "class Model: pass\n";
  config_.devices = {"0", "1"};
  config_.concurrency = 5;
  config_.verifier.backend = "npu";
  config_.agent.kind = "command";
  config_.agent.argv = {"agent"};
  config_.agent.needs_device = true;
  // What happened, in order: (event, case stem, device).
  std::vector<std::tuple<std::string, std::string, std::string>> log;
  script = [this, &log](const ProcessSpec& s) {
    if (has_arg(s, "probe")) log.emplace_back("probe", s.cwd.filename().string(), "");
    if (has_arg(s, "verify")) {
      std::string device = read_json(arg_after(s, "--request"))["device"].get<std::string>();
      std::string stem = s.cwd.filename().string();
      FakeOutcome out = default_script(s);
      auto verified = out.side_effect;
      out.side_effect = [verified, &log, stem, device] {
        verified();
        log.emplace_back("verified", stem, device);
      };
      return out;
    }
    if (s.argv[0] != "agent") return default_script(s);
    std::string device = s.env.contains("KGYM_DEVICE") ? s.env.at("KGYM_DEVICE") : "";
    EXPECT_EQ(s.env.contains("TILE_FWK_DEVICE_ID") ? s.env.at("TILE_FWK_DEVICE_ID") : "", device);
    log.emplace_back("agent", s.cwd.parent_path().filename().string(), device);
    fs::path cwd = s.cwd;
    return FakeOutcome{
        std::chrono::milliseconds(500), {}, [cwd] { std::ofstream(cwd / "model_new.py") << "x = 1\n"; }};
  };
  RunOutcome out = run_all();
  ASSERT_EQ(out.results.size(), 5u);
  for (const CaseResult& r : out.results) EXPECT_EQ(r.verdict, Verdict::kPass) << r.reason;

  std::map<std::string, std::string> device_of;  // case -> the device its agent got
  for (const auto& [event, stem, device] : log) {
    if (event == "agent") {
      EXPECT_TRUE(device == "0" || device == "1") << stem << " got '" << device << "'";
      device_of[stem] = device;
    }
    if (event == "verified") {
      EXPECT_EQ(device, device_of.at(stem)) << stem << " changed device";
    }
  }
  EXPECT_EQ(device_of.size(), 5u);
  // A case holds its device from its probe to the end of its verification.
  std::map<std::string, std::string> holder;  // device -> case
  for (const auto& [event, stem, device] : log) {
    if (event == "probe") {
      ASSERT_TRUE(device_of.contains(stem));
      const std::string& d = device_of.at(stem);
      EXPECT_FALSE(holder.contains(d)) << stem << " started on device " << d << " held by " << holder[d];
      holder[d] = stem;
      EXPECT_LE(holder.size(), 2u);
    }
    if (event == "verified") holder.erase(device);
  }
  EXPECT_TRUE(holder.empty());
  RunState state = run_state_from_json(read_json(options_.run_dir / "state.json"));
  ASSERT_TRUE(state.device_holders);
  EXPECT_TRUE(state.device_holders->empty());  // every lease was returned
}

TEST_F(SchedulerTest, WithoutNeedsDeviceAgentsRunWithoutADevice) {
  config_.devices = {"0"};
  config_.concurrency = 3;
  config_.agent.kind = "command";
  config_.agent.argv = {"agent"};
  int agents_live = 0, max_agents_live = 0;
  script = [this, &agents_live, &max_agents_live](const ProcessSpec& s) {
    if (s.argv[0] != "agent") return default_script(s);
    EXPECT_FALSE(s.env.contains("KGYM_DEVICE"));
    max_agents_live = std::max(max_agents_live, ++agents_live);
    fs::path cwd = s.cwd;
    return FakeOutcome{std::chrono::milliseconds(500), {}, [cwd, &agents_live] {
                         --agents_live;
                         std::ofstream(cwd / "model_new.py") << "x = 1\n";
                       }};
  };
  RunOutcome out = run_all();
  ASSERT_EQ(out.results.size(), 4u);
  EXPECT_EQ(max_agents_live, 3);  // more agents at once than devices
  EXPECT_EQ(max_verifies_live, 1);
}

}  // namespace
}  // namespace kgym::run
