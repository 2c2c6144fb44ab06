// A worker that dies in the middle of a protocol message, driven through the
// real WorkerProcess: a shell script stands in for the Python worker and
// writes part of a frame on fd 4, then exits, kills itself or hangs. Every
// case ends in a ChannelError the verifier turns into a verdict, never in a
// message built from a partial frame.
#include "worker/worker_process.h"

#include <csignal>
#include <fstream>

#include <gtest/gtest.h>

#include "util/temp_dir.h"

namespace kgym::worker {
namespace {

using namespace std::chrono_literals;

class LostWorker : public ::testing::Test {
 protected:
  // A worker whose whole behaviour is the shell snippet `body`; it first
  // reads the request line from fd 3 so the parent's send completes.
  WorkerProcess start(const std::string& body) {
    std::filesystem::path script = dir_.path() / "worker.sh";
    std::ofstream(script) << "read -r request <&3\n" << body << "\n";
    WorkerSpec spec{.argv = {"/bin/bash", script.string()},
                    .env = {"PATH=/usr/bin:/bin"},
                    .cwd = dir_.path(),
                    .log_path = dir_.path() / "worker.log"};
    auto worker = WorkerProcess::spawn(spec);
    EXPECT_TRUE(worker.has_value()) << (worker ? "" : worker.error());
    return std::move(*worker);
  }

  // One call, as the verifier makes it.
  static std::expected<Message, ChannelError> ask(WorkerProcess& worker, std::chrono::milliseconds within) {
    Message ping;
    ping.header = {{"op", "ping"}};
    return worker.call(ping, Clock::now() + within);
  }

  util::TempDir dir_{"kgym-lost-worker"};
};

TEST_F(LostWorker, AWholeMessageIsReceived) {
  WorkerProcess worker = start(R"(printf '{"ok":true,"payloads":[3]}\nabc' >&4; sleep 5)");
  auto reply = ask(worker, 10s);
  ASSERT_TRUE(reply.has_value()) << reply.error().message;
  EXPECT_EQ(reply->header.value("ok", false), true);
  ASSERT_EQ(reply->payloads.size(), 1u);
  EXPECT_EQ(reply->payloads[0], "abc");
}

TEST_F(LostWorker, HeaderHalfWrittenThenExit) {
  WorkerProcess worker = start(R"(printf '{"ok":tr' >&4; exit 3)");
  auto reply = ask(worker, 10s);
  ASSERT_FALSE(reply.has_value());
  EXPECT_EQ(reply.error().kind, ChannelError::Kind::kExited);
  EXPECT_NE(reply.error().message.find("mid-message"), std::string::npos) << reply.error().message;
  ASSERT_TRUE(reply.error().exit.has_value());
  EXPECT_FALSE(reply.error().exit->signaled);
  EXPECT_EQ(reply.error().exit->code, 3);
}

TEST_F(LostWorker, HeaderHalfWrittenThenKilled) {
  WorkerProcess worker = start(R"(printf '{"ok":true,"payl' >&4; kill -9 $$)");
  auto reply = ask(worker, 10s);
  ASSERT_FALSE(reply.has_value());
  EXPECT_EQ(reply.error().kind, ChannelError::Kind::kExited);
  ASSERT_TRUE(reply.error().exit.has_value());
  EXPECT_TRUE(reply.error().exit->signaled);
  EXPECT_EQ(reply.error().exit->code, SIGKILL);
}

TEST_F(LostWorker, PayloadHalfWrittenThenKilled) {
  WorkerProcess worker = start(R"(printf '{"ok":true,"payloads":[100]}\n0123456789' >&4; kill -9 $$)");
  auto reply = ask(worker, 10s);
  ASSERT_FALSE(reply.has_value());
  EXPECT_EQ(reply.error().kind, ChannelError::Kind::kExited);
  EXPECT_NE(reply.error().message.find("mid-message"), std::string::npos) << reply.error().message;
  ASSERT_TRUE(reply.error().exit.has_value());
  EXPECT_TRUE(reply.error().exit->signaled);
  EXPECT_EQ(reply.error().exit->code, SIGKILL);
}

TEST_F(LostWorker, AHalfMessageAfterAWholeOneIsNotAnAnswer) {
  WorkerProcess worker = start(R"(printf '{"ok":true}\n{"ok":tr' >&4; read -r second <&3; exit 0)");
  auto first = ask(worker, 10s);
  ASSERT_TRUE(first.has_value()) << first.error().message;
  auto second = ask(worker, 10s);
  ASSERT_FALSE(second.has_value());
  EXPECT_EQ(second.error().kind, ChannelError::Kind::kExited);
  EXPECT_NE(second.error().message.find("mid-message"), std::string::npos) << second.error().message;
}

TEST_F(LostWorker, HalfAMessageAndAHangIsATimeout) {
  WorkerProcess worker = start(R"(printf '{"ok":true,"payloads":[100]}\n01234' >&4; exec sleep 60)");
  auto reply = ask(worker, 300ms);
  ASSERT_FALSE(reply.has_value());
  EXPECT_EQ(reply.error().kind, ChannelError::Kind::kTimeout);
  worker.kill();
}

TEST_F(LostWorker, GarbageIsAProtocolError) {
  WorkerProcess worker = start(R"(printf 'not json\n' >&4; exec sleep 60)");
  auto reply = ask(worker, 10s);
  ASSERT_FALSE(reply.has_value());
  EXPECT_EQ(reply.error().kind, ChannelError::Kind::kProtocol);
  worker.kill();
}

TEST_F(LostWorker, AWorkerGoneBeforeTheRequestIsAnExit) {
  WorkerProcess worker = start("");  // reads the request line only if it arrives first
  ::usleep(200 * 1000);
  Message big;
  big.header = {{"op", "ping"}};
  big.payloads.push_back(std::string(8 << 20, 'x'));  // more than a socket buffer
  auto sent = worker.send(big, Clock::now() + 10s);
  if (sent) {
    auto reply = worker.receive(Clock::now() + 10s);
    ASSERT_FALSE(reply.has_value());
    EXPECT_EQ(reply.error().kind, ChannelError::Kind::kExited);
  } else {
    EXPECT_EQ(sent.error().kind, ChannelError::Kind::kExited) << sent.error().message;
  }
}

}  // namespace
}  // namespace kgym::worker
