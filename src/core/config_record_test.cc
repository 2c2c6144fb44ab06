#include "core/config_record.h"

#include <gtest/gtest.h>

namespace kgym {
namespace {

TEST(ConfigRecord, SameConfigHasNoDifferences) {
  Config c;
  c.bench_dir = "/data";
  EXPECT_TRUE(config_differences(config_record(c), config_record(c)).empty());
}

TEST(ConfigRecord, DifferencesNameTheKeyAndBothValues) {
  Config a, b;
  b.verifier.call_timeout = std::chrono::seconds(2);
  b.overrides["batch_size"] = 16;
  EXPECT_EQ(config_differences(config_record(a), config_record(b)),
            (std::vector<std::string>{"problem.overrides.batch_size: (absent) -> 16",
                                      "verifier.call_timeout_sec: 60 -> 2"}));
}

TEST(ConfigRecord, ConcurrencyMayChangeOnResume) {
  Config a, b;
  b.concurrency = 4;
  b.monitor_poll = std::chrono::milliseconds(250);
  EXPECT_TRUE(config_differences(config_record(a), config_record(b)).empty());
}

TEST(ConfigRecord, TheVerifiersRecordRoundTripsUnderItsConfigKeys) {
  VerifierConfig v;
  v.backend = "cuda";
  v.execution = "host_interpreter";
  v.python = "/venv/bin/python";
  v.trials = 5;
  v.timeout = std::chrono::seconds(321);
  v.call_timeout = std::chrono::seconds(7);
  v.tolerances["float32"] = {1e-4, 1e-3};
  v.timing.budget = std::chrono::milliseconds(1234);
  v.timing.warmup = 3;
  v.compile_cache = false;
  v.warm_workers = "off";
  v.baselines = {"eager", "compile"};
  nlohmann::json record = verifier_record(v);
  // The keys a config file uses, in run.json and request.json alike.
  EXPECT_EQ(record["timeout_sec"], 321);
  EXPECT_EQ(record["call_timeout_sec"], 7);
  EXPECT_DOUBLE_EQ(record["timing"]["budget_sec"].get<double>(), 1.234);
  VerifierConfig back = verifier_from_record(record);
  EXPECT_EQ(verifier_record(back), record);
  EXPECT_EQ(back.timing.budget, std::chrono::milliseconds(1234));
  EXPECT_EQ(back.execution, "host_interpreter");
  EXPECT_EQ(back.warm_workers, "off");
  // Keys at their defaults that older records lack are not written.
  nlohmann::json plain = verifier_record(VerifierConfig{});
  EXPECT_FALSE(plain.contains("execution"));
  EXPECT_FALSE(plain.contains("warm_workers"));
  EXPECT_THROW(verifier_from_record(nlohmann::json{{"trials", "three"}}), nlohmann::json::exception);
}

TEST(ConfigRecord, HowWorkersStartMayChangeOnResume) {
  Config a, b;
  b.verifier.warm_workers = "off";
  EXPECT_TRUE(config_differences(config_record(a), config_record(b)).empty());
}

}  // namespace
}  // namespace kgym
