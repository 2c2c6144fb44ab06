#include "worker/worker_startup.h"

#include <gtest/gtest.h>

namespace kgym::worker {
namespace {

using namespace std::chrono_literals;

TEST(WorkerStartup, SplitsAtTheInstantTheWorkerBegan) {
  Clock::time_point asked = Clock::now();
  long long base = monotonic_ns(asked);
  auto startup = worker_startup({{"started_ns", base + 4'000'000}, {"ready_ns", base + 34'000'000}}, asked);
  ASSERT_TRUE(startup);
  EXPECT_NEAR(startup->launch_s, 0.004, 1e-9);
  EXPECT_NEAR(startup->init_s, 0.030, 1e-9);
  EXPECT_NEAR(startup->total_s(), 0.034, 1e-9);
}

TEST(WorkerStartup, MissingOrImpossibleStampsGiveNothing) {
  Clock::time_point asked = Clock::now();
  long long base = monotonic_ns(asked);
  EXPECT_FALSE(worker_startup({{"ok", true}}, asked));
  EXPECT_FALSE(worker_startup({{"started_ns", "1"}, {"ready_ns", base}}, asked));
  // Began a second before it was asked for: another clock.
  EXPECT_FALSE(worker_startup({{"started_ns", base - 1'000'000'000}, {"ready_ns", base}}, asked));
  // Ready before it began.
  EXPECT_FALSE(worker_startup({{"started_ns", base + 10}, {"ready_ns", base}}, asked));
}

TEST(WorkerStartup, ClockGranularityIsNotAnError) {
  Clock::time_point asked = Clock::now();
  long long base = monotonic_ns(asked);
  auto startup = worker_startup({{"started_ns", base - 1000}, {"ready_ns", base + 1000}}, asked);
  ASSERT_TRUE(startup);
  EXPECT_EQ(startup->launch_s, 0);
}

}  // namespace
}  // namespace kgym::worker
