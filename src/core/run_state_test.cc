#include "core/run_state.h"

#include <gtest/gtest.h>

namespace kgym {
namespace {

RunState sample_state() {
  RunState s;
  s.run_dir = "/runs/r1";
  s.status = "running";
  s.harness_pid = 4321;
  s.started_at = 1700000000.5;
  s.updated_at = 1700000100.25;
  CaseState done;
  done.id = "level1/19_ReLU";
  done.phase = "done";
  done.attempt = 1;
  done.device = "cpu0";
  done.started_at = 1700000001.0;
  done.phase_started_at = 1700000050.0;
  done.finished_at = 1700000060.0;
  done.verdict = "pass";
  done.speedup = 1.75;
  done.reason = "ok";
  CaseState running;
  running.id = "level1/20_LeakyReLU";
  running.phase = "generating";
  running.stage = "write";
  running.attempt = 2;
  running.pid = 999;
  running.started_at = 1700000061.0;
  running.phase_started_at = 1700000062.0;
  CaseState pending;
  pending.id = "level2/1_Conv";
  s.cases = {done, running, pending};
  return s;
}

void expect_same(const CaseState& a, const CaseState& b) {
  EXPECT_EQ(a.id, b.id);
  EXPECT_EQ(a.phase, b.phase);
  EXPECT_EQ(a.stage, b.stage);
  EXPECT_EQ(a.attempt, b.attempt);
  EXPECT_EQ(a.pid, b.pid);
  EXPECT_EQ(a.device, b.device);
  EXPECT_EQ(a.started_at, b.started_at);
  EXPECT_EQ(a.phase_started_at, b.phase_started_at);
  EXPECT_EQ(a.finished_at, b.finished_at);
  EXPECT_EQ(a.verdict, b.verdict);
  EXPECT_EQ(a.speedup, b.speedup);
  EXPECT_EQ(a.reason, b.reason);
}

TEST(RunStateJson, RoundTripsThroughText) {
  RunState original = sample_state();
  original.devices = {"cpu0", "cpu1"};
  RunState back = run_state_from_json(nlohmann::json::parse(to_json(original).dump()));
  EXPECT_EQ(back.schema_version, kStateSchemaVersion);
  EXPECT_EQ(back.run_dir, original.run_dir);
  EXPECT_EQ(back.status, original.status);
  EXPECT_EQ(back.harness_pid, original.harness_pid);
  EXPECT_EQ(back.started_at, original.started_at);
  EXPECT_EQ(back.updated_at, original.updated_at);
  EXPECT_EQ(back.devices, original.devices);
  ASSERT_EQ(back.cases.size(), original.cases.size());
  for (std::size_t i = 0; i < back.cases.size(); ++i) expect_same(back.cases[i], original.cases[i]);
}

TEST(RunStateJson, AbsentOptionalsAreNull) {
  nlohmann::json j = to_json(sample_state());
  const nlohmann::json& pending = j["cases"][2];
  for (const char* key :
       {"pid", "device", "started_at", "phase_started_at", "finished_at", "verdict", "speedup"}) {
    EXPECT_TRUE(pending.at(key).is_null()) << key;
  }
  EXPECT_EQ(j["schema_version"], kStateSchemaVersion);
  EXPECT_EQ(j["cases"][0]["speedup"], 1.75);
}

TEST(RunStateJson, MissingOptionalKeysReadAsAbsent) {
  auto j = nlohmann::json::parse(R"({"schema_version": 1, "cases": [{"id": "level1/1_A"}]})");
  RunState s = run_state_from_json(j);
  EXPECT_EQ(s.status, "running");
  ASSERT_EQ(s.cases.size(), 1u);
  EXPECT_EQ(s.cases[0].phase, "pending");
  EXPECT_FALSE(s.cases[0].pid.has_value());
  EXPECT_FALSE(s.cases[0].speedup.has_value());
  EXPECT_TRUE(s.devices.empty());  // state files written before the pool was recorded
}

TEST(RunStateJson, RejectsMalformedDocuments) {
  EXPECT_THROW(run_state_from_json(nlohmann::json::parse(R"({"cases": []})")), nlohmann::json::exception);
  EXPECT_THROW(
      run_state_from_json(nlohmann::json::parse(R"({"schema_version": 1, "cases": [{"phase": "x"}]})")),
      nlohmann::json::exception);
  EXPECT_THROW(run_state_from_json(nlohmann::json::parse(R"({"schema_version": 99, "cases": []})")),
               nlohmann::json::exception);
  EXPECT_THROW(run_state_from_json(nlohmann::json::parse(R"({"schema_version": 1, "cases": {}})")),
               nlohmann::json::exception);
}

std::string dump_of(const RunState& s) { return to_json(s).dump(2) + "\n"; }

TEST(RunStateWriter, WritesWhatDumpWritesByteForByte) {
  RunStateWriter writer;
  RunState s;
  EXPECT_EQ(writer.text(s), dump_of(s));  // no cases: "cases": []
  s = sample_state();
  s.devices = {"cpu0", "cpu1"};
  s.device_holders = std::map<std::string, std::string>{{"cpu0", "level1/20_LeakyReLU"}};
  s.cases[1].failed_gates = {"plan: PLAN.md contains 'TBD'", "tests: exit 1"};
  s.cases[1].reason = "a \"quoted\"\nmulti-line reason, \\ and ünïcödé\t";
  s.cases[2].samples = 3;
  s.cases[2].sample = 2;
  s.cases[2].samples_done = 1;
  s.cases[2].job = "1234_5";
  s.cases[2].node = "gpu-node-7";
  s.run_dir = "/runs/\n  \"cases\": []";  // the layout's marker inside a string is escaped
  EXPECT_EQ(writer.text(s), dump_of(s));
}

TEST(RunStateWriter, RewritesChangedAddedAndRemovedRows) {
  RunStateWriter writer;
  RunState s = sample_state();
  ASSERT_EQ(writer.text(s), dump_of(s));
  s.cases[2].phase = "probing";  // a row changed since the last text
  s.cases[2].pid = 77;
  s.updated_at += 1;
  EXPECT_EQ(writer.text(s), dump_of(s));
  CaseState added;
  added.id = "level3/1_Model";
  s.cases.push_back(added);
  EXPECT_EQ(writer.text(s), dump_of(s));
  s.cases.erase(s.cases.begin());  // every row moves up one
  EXPECT_EQ(writer.text(s), dump_of(s));
  s.cases.clear();
  EXPECT_EQ(writer.text(s), dump_of(s));
  s = sample_state();
  EXPECT_EQ(writer.text(s), dump_of(s));
}

}  // namespace
}  // namespace kgym
