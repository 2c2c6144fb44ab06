#include "worker/zygote.h"

#include <signal.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cstring>
#include <functional>
#include <thread>

#include <nlohmann/json.hpp>

#include "util/temp_dir.h"

namespace kgym::worker {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

TEST(ZygoteWire, ForkRequestIsOneJsonLine) {
  std::string line = encode_fork_request(ForkRequest{
      .args = {"serve", "--role", "candidate"}, .env = {"A=1", "B=x=y", "junk"}, .cwd = "/tmp/kgym/v1"});
  ASSERT_FALSE(line.empty());
  EXPECT_EQ(line.back(), '\n');
  EXPECT_EQ(line.find('\n'), line.size() - 1);
  auto j = nlohmann::json::parse(line);
  EXPECT_EQ(j["op"], "fork");
  EXPECT_EQ(j["argv"], (nlohmann::json{"serve", "--role", "candidate"}));
  EXPECT_EQ(j["env"], (nlohmann::json{{"A", "1"}, {"B", "x=y"}}));  // an entry without '=' is dropped
  EXPECT_EQ(j["cwd"], "/tmp/kgym/v1");
}

TEST(ZygoteWire, ForkReplyGivesThePidOrTheRefusal) {
  EXPECT_EQ(decode_fork_reply(R"({"ok": true, "pid": 42})"), 42);
  auto refused = decode_fork_reply(R"({"ok": false, "error": "fork failed: EAGAIN"})");
  ASSERT_FALSE(refused);
  EXPECT_NE(refused.error().find("fork failed: EAGAIN"), std::string::npos);
  for (const char* bad : {"", "not json", R"({"ok": true})", R"({"ok": true, "pid": "7"})",
                          R"({"ok": true, "pid": 0})", R"({"ok": 1, "pid": 7})", "[1]"}) {
    EXPECT_FALSE(decode_fork_reply(bad)) << bad;
  }
}

TEST(ZygoteWire, ExitReportCarriesHowTheChildEnded) {
  auto killed = decode_exit_report(R"({"exit": {"signaled": true, "code": 9, "core_dumped": false}})");
  ASSERT_TRUE(killed);
  EXPECT_TRUE(killed->signaled);
  EXPECT_EQ(killed->code, SIGKILL);
  auto exited = decode_exit_report(R"({"exit": {"signaled": false, "code": 3}})");
  ASSERT_TRUE(exited);
  EXPECT_FALSE(exited->signaled);
  EXPECT_EQ(exited->code, 3);
  for (const char* bad :
       {"", "{}", R"({"exit": 3})", R"({"exit": {"code": "x"}})", R"({"ok": true, "pid": 1})"}) {
    EXPECT_FALSE(decode_exit_report(bad)) << bad;
  }
}

// Plays the zygote's side of one connection on a thread: receives the
// request and its fds, then runs `script` with the connection.
class FakeZygote {
 public:
  using Script = std::function<void(int connection, const std::string& request, int fd_count)>;

  FakeZygote(const fs::path& socket_path, Script script) {
    listener_ = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_un address{};
    address.sun_family = AF_UNIX;
    std::strncpy(address.sun_path, socket_path.c_str(), sizeof address.sun_path - 1);
    EXPECT_EQ(::bind(listener_, reinterpret_cast<sockaddr*>(&address), sizeof address), 0);
    EXPECT_EQ(::listen(listener_, 1), 0);
    thread_ = std::thread([this, script = std::move(script)] {
      int connection = ::accept(listener_, nullptr, nullptr);
      if (connection < 0) return;
      char data[4096] = {};
      alignas(cmsghdr) char control[CMSG_SPACE(8 * sizeof(int))] = {};
      iovec iov{data, sizeof data - 1};
      msghdr message{};
      message.msg_iov = &iov;
      message.msg_iovlen = 1;
      message.msg_control = control;
      message.msg_controllen = sizeof control;
      ssize_t n = ::recvmsg(connection, &message, 0);
      int fd_count = 0;
      for (cmsghdr* h = CMSG_FIRSTHDR(&message); h != nullptr; h = CMSG_NXTHDR(&message, h)) {
        if (h->cmsg_level != SOL_SOCKET || h->cmsg_type != SCM_RIGHTS) continue;
        int count = static_cast<int>((h->cmsg_len - CMSG_LEN(0)) / sizeof(int));
        for (int k = 0; k < count; ++k) {
          int fd;
          std::memcpy(&fd, CMSG_DATA(h) + k * sizeof(int), sizeof fd);
          ::close(fd);
        }
        fd_count += count;
      }
      script(connection, std::string(data, n > 0 ? static_cast<std::size_t>(n) : 0), fd_count);
      ::close(connection);
    });
  }
  ~FakeZygote() {
    ::shutdown(listener_, SHUT_RDWR);
    thread_.join();
    ::close(listener_);
  }

 private:
  int listener_ = -1;
  std::thread thread_;
};

void send_line(int fd, const std::string& line) { ASSERT_GT(::send(fd, line.data(), line.size(), 0), 0); }

struct Fds {
  int pipe_a[2], pipe_b[2], log[2];
  Fds() {
    EXPECT_EQ(::pipe(pipe_a), 0);
    EXPECT_EQ(::pipe(pipe_b), 0);
    EXPECT_EQ(::pipe(log), 0);
  }
  ~Fds() {
    for (int fd : {pipe_a[0], pipe_a[1], pipe_b[0], pipe_b[1], log[0], log[1]}) ::close(fd);
  }
};

TEST(ZygoteChild, ForksThenKillsThroughTheLifeline) {
  util::TempDir temp("kgym-zygote");
  fs::path socket = temp.path() / "z.sock";
  std::string seen_request, seen_after;
  int seen_fds = 0;
  FakeZygote zygote(socket, [&](int connection, const std::string& request, int fds) {
    seen_request = request;
    seen_fds = fds;
    send_line(connection, R"({"ok": true, "pid": 4242})"
                          "\n");
    char buffer[16] = {};
    ssize_t n = ::recv(connection, buffer, sizeof buffer, 0);  // the client's "kill"
    seen_after.assign(buffer, n > 0 ? static_cast<std::size_t>(n) : 0);
    send_line(connection, R"({"exit": {"signaled": true, "code": 9, "core_dumped": false}})"
                          "\n");
  });
  Fds fds;
  ForkRequest request{.args = {"serve"}, .env = {}, .cwd = "/"};
  auto child =
      ZygoteChild::fork(socket, request, fds.pipe_a[0], fds.pipe_b[1], fds.log[1], Clock::now() + 5s);
  ASSERT_TRUE(child) << child.error();
  EXPECT_EQ(child->pid(), 4242);
  EXPECT_FALSE(child->wait_until(Clock::now() + 50ms));  // still running
  child->terminate(100ms);
  ASSERT_TRUE(child->exit());
  EXPECT_TRUE(child->exit()->signaled);
  EXPECT_EQ(child->exit()->code, SIGKILL);
  EXPECT_EQ(seen_request, encode_fork_request(request));
  EXPECT_EQ(seen_fds, 3);
  EXPECT_EQ(seen_after, "kill\n");
}

TEST(ZygoteChild, ReportsTheChildsOwnExit) {
  util::TempDir temp("kgym-zygote");
  fs::path socket = temp.path() / "z.sock";
  FakeZygote zygote(socket, [](int connection, const std::string&, int) {
    send_line(connection, "{\"ok\": true, \"pid\": 7}\n{\"exit\": {\"signaled\": false, \"code\": 3}}\n");
  });
  Fds fds;
  auto child = ZygoteChild::fork(socket, ForkRequest{.args = {"serve"}, .env = {}, .cwd = "/"}, fds.pipe_a[0],
                                 fds.pipe_b[1], fds.log[1], Clock::now() + 5s);
  ASSERT_TRUE(child) << child.error();
  auto exit = child->wait_until(Clock::now() + 5s);
  ASSERT_TRUE(exit);
  EXPECT_FALSE(exit->signaled);
  EXPECT_EQ(exit->code, 3);
}

TEST(ZygoteChild, ALostZygoteCountsAsTheChildKilled) {
  util::TempDir temp("kgym-zygote");
  fs::path socket = temp.path() / "z.sock";
  FakeZygote zygote(socket, [](int connection, const std::string&, int) {
    send_line(connection, "{\"ok\": true, \"pid\": 7}\n");  // then the connection closes
  });
  Fds fds;
  auto child = ZygoteChild::fork(socket, ForkRequest{.args = {"serve"}, .env = {}, .cwd = "/"}, fds.pipe_a[0],
                                 fds.pipe_b[1], fds.log[1], Clock::now() + 5s);
  ASSERT_TRUE(child) << child.error();
  auto exit = child->wait_until(Clock::now() + 5s);
  ASSERT_TRUE(exit);
  EXPECT_TRUE(exit->signaled);
  EXPECT_EQ(exit->code, SIGKILL);
}

TEST(ZygoteChild, RefusalsAndSilenceAreErrorsNotHangs) {
  util::TempDir temp("kgym-zygote");
  Fds fds;
  ForkRequest request{.args = {"serve"}, .env = {}, .cwd = "/"};
  auto none = ZygoteChild::fork(temp.path() / "absent.sock", request, fds.pipe_a[0], fds.pipe_b[1],
                                fds.log[1], Clock::now() + 5s);
  ASSERT_FALSE(none);
  EXPECT_NE(none.error().find("no warm worker parent"), std::string::npos);
  {
    FakeZygote zygote(temp.path() / "refuse.sock", [](int connection, const std::string&, int) {
      send_line(connection, "{\"ok\": false, \"error\": \"expected a fork request with 3 fds\"}\n");
    });
    auto refused = ZygoteChild::fork(temp.path() / "refuse.sock", request, fds.pipe_a[0], fds.pipe_b[1],
                                     fds.log[1], Clock::now() + 5s);
    ASSERT_FALSE(refused);
    EXPECT_NE(refused.error().find("expected a fork request"), std::string::npos);
  }
  {
    FakeZygote zygote(temp.path() / "silent.sock", [](int connection, const std::string&, int) {
      char byte;
      (void)::recv(connection, &byte, 1, 0);  // waits until the client gives up
    });
    auto silent = ZygoteChild::fork(temp.path() / "silent.sock", request, fds.pipe_a[0], fds.pipe_b[1],
                                    fds.log[1], Clock::now() + 200ms);
    ASSERT_FALSE(silent);
    EXPECT_NE(silent.error().find("did not answer in time"), std::string::npos);
  }
}

}  // namespace
}  // namespace kgym::worker
