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

}  // namespace
}  // namespace kgym
