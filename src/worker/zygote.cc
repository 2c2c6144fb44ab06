#include "worker/zygote.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "util/json_text.h"

namespace kgym::worker {
namespace {

namespace fs = std::filesystem;

constexpr int kListenFd = 3;
constexpr auto kReportGrace = std::chrono::seconds(5);

std::expected<sockaddr_un, std::string> address_of(const fs::path& path) {
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  if (path.string().size() >= sizeof address.sun_path) {
    return std::unexpected(fmt::format("socket path too long: {}", path.string()));
  }
  std::strncpy(address.sun_path, path.c_str(), sizeof address.sun_path - 1);
  return address;
}

// Reads one '\n'-terminated line from `fd` into `line`, keeping what follows
// in `buffer`. False at end of file, on error or at the deadline (`timed_out`).
bool read_line(int fd, std::string& buffer, std::string& line, Deadline deadline, bool& timed_out) {
  timed_out = false;
  for (;;) {
    if (auto end = buffer.find('\n'); end != std::string::npos) {
      line = buffer.substr(0, end);
      buffer.erase(0, end + 1);
      return true;
    }
    if (Clock::now() >= deadline) {
      timed_out = true;
      return false;
    }
    pollfd pfd{fd, POLLIN, 0};
    int ready = ::poll(&pfd, 1, poll_timeout_ms(deadline));
    if (ready < 0 && errno != EINTR) return false;
    if (ready <= 0) continue;
    char chunk[4096];
    ssize_t n = ::read(fd, chunk, sizeof chunk);
    if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (n <= 0) return false;
    buffer.append(chunk, static_cast<std::size_t>(n));
  }
}

}  // namespace

std::string encode_fork_request(const ForkRequest& request) {
  nlohmann::json env = nlohmann::json::object();
  for (const auto& entry : request.env) {
    auto eq = entry.find('=');
    if (eq != std::string::npos) env[entry.substr(0, eq)] = entry.substr(eq + 1);
  }
  // The environment is the user's: a value need not be UTF-8.
  return util::json_text(
             {{"op", "fork"}, {"argv", request.args}, {"env", env}, {"cwd", request.cwd.string()}}) +
         "\n";
}

std::expected<pid_t, std::string> decode_fork_reply(const std::string& line) {
  auto answer = nlohmann::json::parse(line, nullptr, false);
  bool ok = answer.is_object() && answer.contains("ok") && answer["ok"] == true;
  if (!ok || !answer.contains("pid") || !answer["pid"].is_number_integer() ||
      answer["pid"].get<long long>() <= 0) {
    std::string why = answer.is_object() && answer.contains("error") && answer["error"].is_string()
                          ? answer["error"].get<std::string>()
                          : line;
    return std::unexpected(fmt::format("the warm worker parent refused: {}", why));
  }
  return answer["pid"].get<pid_t>();
}

std::optional<ChildExit> decode_exit_report(const std::string& line) {
  auto report = nlohmann::json::parse(line, nullptr, false);
  if (!report.is_object() || !report.contains("exit") || !report["exit"].is_object()) return std::nullopt;
  const auto& e = report["exit"];
  try {
    return ChildExit{.signaled = e.value("signaled", false),
                     .code = e.value("code", 0),
                     .core_dumped = e.value("core_dumped", false)};
  } catch (const nlohmann::json::exception&) {
    return std::nullopt;  // a field of the wrong type: no report
  }
}

std::expected<Zygote, std::string> Zygote::start(const std::vector<std::string>& argv,
                                                 const std::vector<std::string>& env,
                                                 const fs::path& socket_path, const fs::path& log_path) {
  auto address = address_of(socket_path);
  if (!address) return std::unexpected(address.error());
  util::UniqueFd listener(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!listener) return std::unexpected(fmt::format("socket: {}", std::strerror(errno)));
  std::error_code ec;
  fs::remove(socket_path, ec);
  if (::bind(listener.get(), reinterpret_cast<const sockaddr*>(&*address), sizeof *address) != 0 ||
      ::listen(listener.get(), 16) != 0) {
    return std::unexpected(
        fmt::format("cannot listen on {}: {}", socket_path.string(), std::strerror(errno)));
  }
  // Above the fds the child maps, so the dup onto fd 3 never aliases.
  util::UniqueFd high(::fcntl(listener.get(), F_DUPFD_CLOEXEC, 10));
  auto child = ChildProcess::spawn(ChildSpec{.argv = argv,
                                             .env = env,
                                             .log_path = log_path,
                                             .fd_map = {{kListenFd, high.get()}},
                                             .die_with_parent = true});
  if (!child) return std::unexpected(child.error());
  // The socket file stays; this process needs no listening fd of its own.
  return Zygote(std::move(*child), socket_path);
}

bool Zygote::alive() { return !child_.wait_until(Clock::now()).has_value(); }

std::expected<ZygoteChild, std::string> ZygoteChild::fork(const fs::path& socket_path,
                                                          const ForkRequest& request, int request_fd,
                                                          int response_fd, int log_fd, Deadline deadline) {
  auto address = address_of(socket_path);
  if (!address) return std::unexpected(address.error());
  util::UniqueFd connection(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!connection) return std::unexpected(fmt::format("socket: {}", std::strerror(errno)));
  if (::connect(connection.get(), reinterpret_cast<const sockaddr*>(&*address), sizeof *address) != 0) {
    return std::unexpected(
        fmt::format("no warm worker parent at {}: {}", socket_path.string(), std::strerror(errno)));
  }
  std::string line = encode_fork_request(request);
  int fds[3] = {request_fd, response_fd, log_fd};
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof fds)] = {};
  iovec iov{line.data(), line.size()};
  msghdr message{};
  message.msg_iov = &iov;
  message.msg_iovlen = 1;
  message.msg_control = control;
  message.msg_controllen = sizeof control;
  cmsghdr* header = CMSG_FIRSTHDR(&message);
  header->cmsg_level = SOL_SOCKET;
  header->cmsg_type = SCM_RIGHTS;
  header->cmsg_len = CMSG_LEN(sizeof fds);
  std::memcpy(CMSG_DATA(header), fds, sizeof fds);
  // The request is far below the socket buffer: one sendmsg carries it whole.
  if (::sendmsg(connection.get(), &message, MSG_NOSIGNAL) != static_cast<ssize_t>(line.size())) {
    return std::unexpected(fmt::format("cannot send to the warm worker parent: {}", std::strerror(errno)));
  }
  std::string buffer, reply;
  bool timed_out = false;
  if (!read_line(connection.get(), buffer, reply, deadline, timed_out)) {
    return std::unexpected(timed_out ? std::string("the warm worker parent did not answer in time")
                                     : std::string("the warm worker parent closed the connection"));
  }
  auto pid = decode_fork_reply(reply);
  if (!pid) return std::unexpected(pid.error());
  ZygoteChild child(std::move(connection), *pid);
  child.buffer_ = std::move(buffer);
  return child;
}

ZygoteChild& ZygoteChild::operator=(ZygoteChild&& other) noexcept {
  if (this != &other) {
    terminate();
    connection_ = std::move(other.connection_);
    pid_ = std::exchange(other.pid_, -1);
    exit_ = std::move(other.exit_);
    buffer_ = std::move(other.buffer_);
  }
  return *this;
}

ZygoteChild::~ZygoteChild() { terminate(); }

std::optional<ChildExit> ZygoteChild::wait_until(Deadline deadline) {
  if (exit_ || !connection_) return exit_;
  std::string line;
  bool timed_out = false;
  if (read_line(connection_.get(), buffer_, line, deadline, timed_out)) {
    exit_ = decode_exit_report(line);
  } else if (timed_out) {
    return std::nullopt;
  }
  // No report (the zygote died, which kills its children): killed.
  if (!exit_) exit_ = ChildExit{.signaled = true, .code = SIGKILL};
  connection_.reset();
  return exit_;
}

void ZygoteChild::terminate(std::chrono::milliseconds grace) {
  if (exit_ || !connection_) return;
  if (wait_until(Clock::now())) return;
  // The zygote kills on any byte or on end of file; a byte keeps the
  // connection open for the exit report.
  (void)::send(connection_.get(), "kill\n", 5, MSG_NOSIGNAL);
  if (!wait_until(Clock::now() + grace + kReportGrace)) {
    connection_.reset();
    exit_ = ChildExit{.signaled = true, .code = SIGKILL};
  }
}

std::expected<int, std::string> run_forked(const fs::path& socket_path, const ForkRequest& request,
                                           Deadline fork_deadline) {
  util::UniqueFd null_in(::open("/dev/null", O_RDONLY | O_CLOEXEC));
  util::UniqueFd null_out(::open("/dev/null", O_WRONLY | O_CLOEXEC));
  if (!null_in || !null_out) return std::unexpected(fmt::format("/dev/null: {}", std::strerror(errno)));
  auto child =
      ZygoteChild::fork(socket_path, request, null_in.get(), null_out.get(), STDOUT_FILENO, fork_deadline);
  if (!child) return std::unexpected(child.error());
  // No deadline of its own: whoever started this process enforces one.
  std::optional<ChildExit> exit;
  while (!(exit = child->wait_until(Clock::now() + std::chrono::hours(1)))) {
  }
  return exit->signaled ? 128 + exit->code : exit->code;
}

}  // namespace kgym::worker
