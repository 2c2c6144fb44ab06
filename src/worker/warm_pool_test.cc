#include "worker/warm_pool.h"

#include <gtest/gtest.h>

#include <fstream>
#include <thread>

#include "util/temp_dir.h"

namespace kgym::worker {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

// A stand-in interpreter: `python worker.py zygote --role ROLE ...` stays up
// (as a zygote would), except that the first reference parent of the pool
// exits at once with status 3.
fs::path fake_python(const fs::path& dir) {
  fs::path script = dir / "python";
  std::ofstream(script) << "#!/bin/sh\n"
                           "if [ \"$4\" = reference ] && [ ! -e '"
                        << (dir / "reference-started").string() << "' ]; then\n"
                        << "  touch '" << (dir / "reference-started").string() << "'; exit 3\n"
                        << "fi\nexec sleep 60\n";
  fs::permissions(script, fs::perms::owner_all);
  return script;
}

WarmPoolOptions options_in(const util::TempDir& temp) {
  fs::create_directories(temp.path() / "logs");
  WarmPoolOptions options;
  options.python = fake_python(temp.path()).string();
  options.backend = "cpu";
  options.sandbox.mode = "none";
  options.sandbox_mode = util::SandboxMode::kNone;
  options.log_dir = temp.path() / "logs";
  return options;
}

TEST(WarmWorkers, AutoMeansTheCpuBackendOnly) {
  VerifierConfig config;
  config.warm_workers = "auto";
  config.backend = "cpu";
  EXPECT_TRUE(warm_workers_enabled(config));
  config.backend = "cuda";
  EXPECT_FALSE(warm_workers_enabled(config));
  config.warm_workers = "on";
  EXPECT_TRUE(warm_workers_enabled(config));
  config.warm_workers = "off";
  config.backend = "cpu";
  EXPECT_FALSE(warm_workers_enabled(config));
}

TEST(WarmPool, EachDeviceHasItsOwnParentsAndADeadOneIsReplaced) {
  util::TempDir temp("kgym-pool");
  auto pool = WarmPool::create(options_in(temp));
  ASSERT_TRUE(pool) << pool.error();
  auto first = (*pool)->endpoints(0);
  ASSERT_TRUE(first) << first.error();
  EXPECT_TRUE(first->notes.empty());
  EXPECT_TRUE(fs::exists(first->reference_socket));
  EXPECT_TRUE(fs::exists(first->candidate_socket));
  EXPECT_NE(first->reference_socket, first->candidate_socket);
  EXPECT_TRUE(fs::is_directory(first->scratch_root));

  // Device 1's reference parent must not be the first to start: wait until
  // device 0's has run.
  for (auto give_up = Clock::now() + 30s;
       !fs::exists(temp.path() / "reference-started") && Clock::now() < give_up;)
    std::this_thread::sleep_for(10ms);
  ASSERT_TRUE(fs::exists(temp.path() / "reference-started"));

  auto other = (*pool)->endpoints(1);
  ASSERT_TRUE(other) << other.error();
  EXPECT_NE(other->reference_socket, first->reference_socket);
  EXPECT_NE(other->scratch_root, first->scratch_root);

  // The first reference parent exits at once; the pool notices on a later
  // call, starts another and says so once.
  std::vector<std::string> notes;
  for (auto give_up = Clock::now() + 30s; notes.empty() && Clock::now() < give_up;) {
    std::this_thread::sleep_for(20ms);
    auto again = (*pool)->endpoints(0);
    ASSERT_TRUE(again) << again.error();
    notes = again->notes;
  }
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_NE(notes[0].find("warm reference worker parent of this device had ended (exit code 3)"),
            std::string::npos)
      << notes[0];
  auto steady = (*pool)->endpoints(0);
  ASSERT_TRUE(steady) << steady.error();
  EXPECT_TRUE(steady->notes.empty());
  auto socket = (*pool)->reference_socket(0);
  ASSERT_TRUE(socket) << socket.error();
  EXPECT_EQ(*socket, steady->reference_socket);
}

}  // namespace
}  // namespace kgym::worker
