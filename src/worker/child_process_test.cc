// A child's exit, and what a death for memory is told as.
#include "worker/child_process.h"

#include <csignal>

#include <gtest/gtest.h>

namespace kgym::worker {
namespace {

TEST(MemoryDeath, SigkillOrAnAllocationFailureSpeakOfMemory) {
  EXPECT_TRUE(died_of_memory({.signaled = true, .code = SIGKILL}, ""));
  EXPECT_TRUE(
      died_of_memory({.code = 1}, "RuntimeError: DefaultCPUAllocator: can't allocate memory: you tried"));
  EXPECT_TRUE(died_of_memory({.code = 1}, "MemoryError"));
  EXPECT_FALSE(died_of_memory({.signaled = true, .code = SIGSEGV}, "Segmentation fault"));
  EXPECT_FALSE(died_of_memory({.code = 1}, "ValueError: bad shape"));
}

TEST(MemoryDeath, TheReasonNamesTheLimitThePeakAndTheFix) {
  ChildExit killed{.signaled = true, .code = SIGKILL, .peak_rss_mb = 2048};
  std::string reason = memory_reason("the lint worker", killed, 16384, "It ran at sizes as written");
  EXPECT_NE(reason.find("the lint worker ran out of memory (killed by SIGKILL"), std::string::npos) << reason;
  EXPECT_NE(reason.find("limited to 16384 MB (sandbox.address_space_mb)"), std::string::npos) << reason;
  EXPECT_NE(reason.find("peak resident memory 2048 MB"), std::string::npos) << reason;
  EXPECT_NE(reason.find("It ran at sizes as written."), std::string::npos) << reason;
  EXPECT_NE(reason.find("problem.size: auto"), std::string::npos) << reason;
  EXPECT_NE(reason.find("--override NAME=VALUE"), std::string::npos) << reason;
  EXPECT_EQ(memory_reason("w", {.code = 1}, 0).find("limited to"), std::string::npos);
}

}  // namespace
}  // namespace kgym::worker
