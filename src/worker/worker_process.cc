#include "worker/worker_process.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <fmt/format.h>

namespace kgym::worker {
namespace {

constexpr int kRequestFd = 3;
constexpr int kResponseFd = 4;
// How long a worker that closed its channel gets to finish exiting, so a
// crash is reported with its signal rather than as a closed pipe.
constexpr auto kExitGrace = std::chrono::seconds(5);

// Whether `fd` became ready for `events` within one poll on the way to
// `deadline` (false: poll again).
std::expected<bool, ChannelError> poll_ready(int fd, short events, Deadline deadline) {
  pollfd pfd{fd, events, 0};
  int ready = ::poll(&pfd, 1, poll_timeout_ms(deadline));
  if (ready < 0 && errno != EINTR)
    return std::unexpected(
        ChannelError{ChannelError::Kind::kIo, fmt::format("poll: {}", std::strerror(errno))});
  return ready > 0;
}

// A connected stream socket pair: sockets rather than pipes so writes can
// use MSG_NOSIGNAL (a dead worker must not raise SIGPIPE in the parent).
// Both ends are moved to fds >= 10 so mapping onto 3 and 4 never aliases.
std::expected<std::pair<util::UniqueFd, util::UniqueFd>, std::string> socket_pair() {
  int fds[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) != 0) {
    return std::unexpected(fmt::format("socketpair: {}", std::strerror(errno)));
  }
  util::UniqueFd a(fds[0]), b(fds[1]);
  util::UniqueFd high_a(::fcntl(a.get(), F_DUPFD_CLOEXEC, 10)), high_b(::fcntl(b.get(), F_DUPFD_CLOEXEC, 10));
  if (!high_a || !high_b) return std::unexpected(fmt::format("fcntl: {}", std::strerror(errno)));
  return std::pair{std::move(high_a), std::move(high_b)};
}

// The parent's ends of a fresh pair of channels, and the child's.
struct Channels {
  util::UniqueFd request_parent, request_child, response_parent, response_child;

  static std::expected<Channels, std::string> make() {
    auto requests = socket_pair();
    if (!requests) return std::unexpected(requests.error());
    auto responses = socket_pair();
    if (!responses) return std::unexpected(responses.error());
    return Channels{std::move(requests->first), std::move(requests->second), std::move(responses->first),
                    std::move(responses->second)};
  }

  // One direction per socket: the parent only writes requests, only reads responses.
  void parent_ends_only() {
    request_child.reset();
    response_child.reset();
    ::shutdown(request_parent.get(), SHUT_RD);
    ::shutdown(response_parent.get(), SHUT_WR);
    ::fcntl(request_parent.get(), F_SETFL, O_NONBLOCK);
    ::fcntl(response_parent.get(), F_SETFL, O_NONBLOCK);
  }
};

// Descriptors one message may carry; more are a protocol violation.
constexpr std::size_t kMaxFds = 16;

// Sends `bytes[0..size)` with `fds` attached (SCM_RIGHTS); returns what
// sendmsg(2) returns.
ssize_t send_with_fds(int socket, const char* bytes, std::size_t size, const std::vector<int>& fds) {
  iovec iov{const_cast<char*>(bytes), size};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  std::vector<char> control(CMSG_SPACE(sizeof(int) * fds.size()), 0);
  msg.msg_control = control.data();
  msg.msg_controllen = control.size();
  cmsghdr* cmsg = CMSG_FIRSTHDR(&msg);
  cmsg->cmsg_level = SOL_SOCKET;
  cmsg->cmsg_type = SCM_RIGHTS;
  cmsg->cmsg_len = CMSG_LEN(sizeof(int) * fds.size());
  std::memcpy(CMSG_DATA(cmsg), fds.data(), sizeof(int) * fds.size());
  return ::sendmsg(socket, &msg, MSG_NOSIGNAL);
}

}  // namespace

std::expected<WorkerProcess, std::string> WorkerProcess::spawn(const WorkerSpec& spec) {
  auto requested = Clock::now();
  auto channels = Channels::make();
  if (!channels) return std::unexpected(channels.error());
  auto& [request_parent, request_child, response_parent, response_child] = *channels;
  ChildSpec child_spec{
      .argv = spec.argv,
      .env = spec.env,
      .cwd = spec.cwd,
      .log_path = spec.log_path,
      .fd_map = {{kRequestFd, request_child.get()}, {kResponseFd, response_child.get()}},
      .die_with_parent = true,
  };
  auto child = ChildProcess::spawn(child_spec);
  if (!child) return std::unexpected(child.error());
  channels->parent_ends_only();
  return WorkerProcess(std::move(*child), std::move(request_parent), std::move(response_parent), requested);
}

std::expected<WorkerProcess, std::string> WorkerProcess::fork_warm(const std::filesystem::path& zygote_socket,
                                                                   const ForkRequest& request,
                                                                   const std::filesystem::path& log_path,
                                                                   Deadline deadline) {
  auto requested = Clock::now();
  auto channels = Channels::make();
  if (!channels) return std::unexpected(channels.error());
  util::UniqueFd log(::open(log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644));
  if (!log)
    return std::unexpected(fmt::format("cannot open {}: {}", log_path.string(), std::strerror(errno)));
  auto child = ZygoteChild::fork(zygote_socket, request, channels->request_child.get(),
                                 channels->response_child.get(), log.get(), deadline);
  if (!child) return std::unexpected(child.error());
  channels->parent_ends_only();
  return WorkerProcess(std::move(*child), std::move(channels->request_parent),
                       std::move(channels->response_parent), requested);
}

pid_t WorkerProcess::pid() const {
  return std::visit([](const auto& child) { return child.pid(); }, child_);
}

std::optional<ChildExit> WorkerProcess::wait_until(Deadline deadline) {
  return std::visit([&](auto& child) { return child.wait_until(deadline); }, child_);
}

void WorkerProcess::terminate(std::chrono::milliseconds grace) {
  std::visit([&](auto& child) { child.terminate(grace); }, child_);
}

ChannelError WorkerProcess::exited(std::string message) {
  auto exit = wait_until(Clock::now() + kExitGrace);
  if (!exit) {
    terminate(std::chrono::milliseconds(500));
    exit = std::visit([](const auto& child) { return child.exit(); }, child_);
  }
  return ChannelError{ChannelError::Kind::kExited, std::move(message), exit};
}

std::expected<void, ChannelError> WorkerProcess::send(const Message& message, Deadline deadline) {
  std::string bytes = encode_message(message);
  std::size_t sent = 0;
  while (sent < bytes.size()) {
    if (Clock::now() >= deadline) {
      return std::unexpected(
          ChannelError{ChannelError::Kind::kTimeout, "worker did not accept the request in time"});
    }
    auto ready = poll_ready(requests_.get(), POLLOUT, deadline);
    if (!ready) return std::unexpected(ready.error());
    if (!*ready) continue;
    // The descriptors go with the first bytes sent.
    ssize_t n = sent == 0 && !message.fds.empty()
                    ? send_with_fds(requests_.get(), bytes.data(), bytes.size(), [&message] {
                        std::vector<int> raw;
                        for (const auto& fd : message.fds) raw.push_back(fd->get());
                        return raw;
                      }())
                    : ::send(requests_.get(), bytes.data() + sent, bytes.size() - sent, MSG_NOSIGNAL);
    if (n < 0) {
      if (errno == EAGAIN || errno == EINTR) continue;
      if (errno == EPIPE || errno == ECONNRESET)
        return std::unexpected(exited("worker closed its request channel"));
      return std::unexpected(
          ChannelError{ChannelError::Kind::kIo, fmt::format("send: {}", std::strerror(errno))});
    }
    sent += static_cast<std::size_t>(n);
  }
  return {};
}

std::expected<Message, ChannelError> WorkerProcess::receive(Deadline deadline) {
  std::string buffer(1 << 20, '\0');
  for (;;) {
    auto next = decoder_.next();
    if (!next) return std::unexpected(ChannelError{ChannelError::Kind::kProtocol, next.error()});
    if (*next) {
      Message message = std::move(**next);
      std::size_t announced = message.header.value("fds", std::size_t{0});
      if (announced > received_fds_.size() || announced > kMaxFds)
        return std::unexpected(ChannelError{
            ChannelError::Kind::kProtocol,
            fmt::format("the worker announced {} descriptors and passed {}", announced, received_fds_.size())});
      message.fds.assign(received_fds_.begin(), received_fds_.begin() + static_cast<std::ptrdiff_t>(announced));
      // Descriptors nobody announced are closed, not kept for a later message.
      received_fds_.clear();
      return message;
    }
    if (Clock::now() >= deadline) {
      return std::unexpected(ChannelError{ChannelError::Kind::kTimeout, "worker did not answer in time"});
    }
    auto ready = poll_ready(responses_.get(), POLLIN, deadline);
    if (!ready) return std::unexpected(ready.error());
    if (!*ready) continue;
    iovec iov{buffer.data(), buffer.size()};
    alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * kMaxFds)];
    msghdr msg{};
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control;
    msg.msg_controllen = sizeof(control);
    ssize_t n = ::recvmsg(responses_.get(), &msg, MSG_CMSG_CLOEXEC);
    if (n >= 0) {
      for (cmsghdr* cmsg = CMSG_FIRSTHDR(&msg); cmsg != nullptr; cmsg = CMSG_NXTHDR(&msg, cmsg)) {
        if (cmsg->cmsg_level != SOL_SOCKET || cmsg->cmsg_type != SCM_RIGHTS) continue;
        std::size_t count = (cmsg->cmsg_len - CMSG_LEN(0)) / sizeof(int);
        for (std::size_t i = 0; i < count; ++i) {
          int fd;
          std::memcpy(&fd, CMSG_DATA(cmsg) + i * sizeof(int), sizeof(int));
          received_fds_.push_back(std::make_shared<util::UniqueFd>(fd));
        }
      }
      if (msg.msg_flags & MSG_CTRUNC)
        return std::unexpected(
            ChannelError{ChannelError::Kind::kProtocol, "the worker passed more descriptors than a message may carry"});
    }
    if (n < 0) {
      if (errno == EAGAIN || errno == EINTR) continue;
      if (errno == ECONNRESET) return std::unexpected(exited("worker closed its response channel"));
      return std::unexpected(
          ChannelError{ChannelError::Kind::kIo, fmt::format("read: {}", std::strerror(errno))});
    }
    if (n == 0) {
      std::string message = decoder_.buffered() > 0 ? "worker closed its response channel mid-message"
                                                    : "worker closed its response channel";
      return std::unexpected(exited(std::move(message)));
    }
    decoder_.feed(std::string_view(buffer.data(), static_cast<std::size_t>(n)));
  }
}

std::expected<Message, ChannelError> WorkerProcess::call(const Message& request, Deadline deadline) {
  if (auto sent = send(request, deadline); !sent) return std::unexpected(sent.error());
  return receive(deadline);
}

std::optional<ChildExit> WorkerProcess::shutdown(Deadline deadline) {
  Message bye;
  bye.header = {{"op", "exit"}};
  (void)send(bye, deadline);
  requests_.reset();  // EOF on fd 3 also tells the worker to exit
  if (auto exit = wait_until(deadline)) return exit;
  terminate(std::chrono::milliseconds(500));
  return std::visit([](const auto& child) { return child.exit(); }, child_);
}

}  // namespace kgym::worker
