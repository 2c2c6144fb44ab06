#include "verify/cpu_sampler.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>
#include <thread>
#include <utility>

#include <fmt/format.h>

#include "util/elf_build_id.h"
#include "util/proc_tree.h"
#include "util/fs.h"

namespace kgym::verify {
namespace {

std::string read_text(const std::filesystem::path& file) { return util::read_file(file).value_or(""); }

std::string last_lines(const std::string& text, int n = 3) {
  std::size_t at = text.size();
  while (n-- > 0) {
    if (at == 0) return text;
    at = text.rfind('\n', at - 1);
    if (at == std::string::npos) return text;
  }
  return text.substr(at + 1);
}

}  // namespace

std::optional<pid_t> host_pid_below(pid_t root, pid_t inner) {
  for (pid_t pid : util::tree_pids({root})) {
    std::istringstream status(read_text(fmt::format("/proc/{}/status", pid)));
    for (std::string line; std::getline(status, line);) {
      if (!line.starts_with("NSpid:")) continue;
      std::istringstream ids(line.substr(6));
      pid_t id = 0, last = 0;
      while (ids >> id) last = id;
      if (last == inner) return pid;
    }
  }
  return std::nullopt;
}

std::map<std::string, std::string> mapped_object_ids(pid_t pid) {
  std::map<std::string, std::string> ids;
  std::set<std::string> seen;
  std::istringstream maps(read_text(fmt::format("/proc/{}/maps", pid)));
  for (std::string line; std::getline(maps, line);) {
    // "start-end perms offset dev inode path"
    auto slash = line.find('/');
    if (slash == std::string::npos) continue;
    std::string path = line.substr(slash);
    if (path.ends_with(" (deleted)") || !seen.insert(path).second) continue;
    // map_files names a range without the leading zeros maps shows.
    std::string range = line.substr(0, line.find(' '));
    auto dash = range.find('-');
    if (dash == std::string::npos) continue;
    auto bare = [](std::string hex) {
      hex.erase(0, std::min(hex.find_first_not_of('0'), hex.size() - 1));
      return hex;
    };
    range = bare(range.substr(0, dash)) + "-" + bare(range.substr(dash + 1));
    if (auto id = util::elf_build_id_of(fmt::format("/proc/{}/map_files/{}", pid, range))) ids[path] = *id;
  }
  return ids;
}

std::set<std::string> build_ids_below(const std::filesystem::path& dir) {
  std::set<std::string> ids;
  std::error_code ec;
  for (auto it = std::filesystem::recursive_directory_iterator(dir, ec);
       !ec && it != std::filesystem::recursive_directory_iterator(); it.increment(ec)) {
    if (!it->is_regular_file(ec) || it->is_symlink(ec)) continue;
    if (auto id = util::elf_build_id_of(it->path())) ids.insert(*id);
  }
  return ids;
}

std::expected<CpuSampler, std::string> CpuSampler::start(const std::vector<int>& cores,
                                                         const std::filesystem::path& data,
                                                         const std::filesystem::path& log, int hz) {
  auto program = util::find_executable("perf");
  if (!program) return std::unexpected("perf is not installed (Debian: linux-perf)");
  std::error_code ec;
  std::filesystem::remove(data, ec);
  auto control_path = data.string() + ".ctl", ack_path = data.string() + ".ack";
  for (const auto& fifo : {control_path, ack_path}) {
    std::filesystem::remove(fifo, ec);
    if (::mkfifo(fifo.c_str(), 0600) != 0)
      return std::unexpected(fmt::format("cannot make the fifo {}: {}", fifo, std::strerror(errno)));
  }
  // Opened read-write, so that neither open waits for perf.
  util::UniqueFd control(::open(control_path.c_str(), O_RDWR | O_CLOEXEC));
  util::UniqueFd ack(::open(ack_path.c_str(), O_RDWR | O_CLOEXEC));
  if (!control || !ack) return std::unexpected(fmt::format("cannot open perf's control fifos: {}", std::strerror(errno)));
  worker::ChildSpec spec;
  // -N: no build-id cache under $HOME; the build ids are still recorded.
  // -D -1: events start disabled, and the control fifo turns them on.
  // -g --user-callchains: each sample's user frames, the first of them the
  // user code running (or, for a sample in the kernel, whose system call
  // or page fault the kernel was serving): cpu_profile.h parse_perf_dsos.
  spec.argv = {program->string(), "record", "-e", "cpu-clock", "-F", std::to_string(hz), "-g", "--user-callchains",
               "-N", "-q", "-D", "-1",
               "--control", fmt::format("fifo:{},{}", control_path, ack_path), "-o", data.string(), "-a"};
  if (!cores.empty()) {
    spec.argv.push_back("-C");
    spec.argv.push_back(fmt::format("{}", fmt::join(cores, ",")));
  }
  spec.env = util::environment_with({"LC_ALL=C"});
  spec.log_path = log;
  spec.die_with_parent = true;
  auto child = worker::ChildProcess::spawn(spec);
  if (!child) return std::unexpected("perf record: " + child.error());
  // perf writes its file's header once it has attached to every thread.
  auto until = worker::Clock::now() + std::chrono::seconds(10);
  while (worker::Clock::now() < until) {
    if (auto exit = child->wait_until(worker::Clock::now()); exit) {
      return std::unexpected(fmt::format("perf record ended at once ({}): {}", exit->describe(),
                                         last_lines(read_text(log))));
    }
    if (std::filesystem::file_size(data, ec) > 0 && !ec) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  CpuSampler sampler(std::move(*child), program->string(), data, log, std::move(control), std::move(ack));
  // perf answers its fifo once it is attached and waiting.
  if (!sampler.set_sampling(false, true))
    return std::unexpected(fmt::format("perf record did not answer its control fifo: {}",
                                       last_lines(read_text(log))));
  return sampler;
}

bool CpuSampler::set_sampling(bool on, bool wait) {
  if (!broken_.empty()) return false;
  auto began = worker::Clock::now();
  ++switches_;
  std::string_view command = on ? "enable\n" : "disable\n";
  if (::write(control_.get(), command.data(), command.size()) != static_cast<ssize_t>(command.size())) {
    broken_ = fmt::format("writing perf's control fifo: {}", std::strerror(errno));
    return false;
  }
  ++unanswered_;
  bool answered = read_answers(wait ? worker::Clock::now() + std::chrono::seconds(10) : worker::Clock::now());
  switch_s_ += std::chrono::duration<double>(worker::Clock::now() - began).count();
  if (wait && !answered) {
    broken_ = "perf did not acknowledge a control command in 10 s";
    return false;
  }
  return broken_.empty();
}

// perf answers each command with "ack\n"; reads what has come, until every
// command is answered or `until` passed. True when none is unanswered.
bool CpuSampler::read_answers(worker::Deadline until) {
  while (unanswered_ > 0) {
    pollfd p{ack_.get(), POLLIN, 0};
    int ready = ::poll(&p, 1, worker::poll_timeout_ms(until));
    if (ready < 0 && errno == EINTR) continue;
    if (ready <= 0) return false;
    char buf[256];
    ssize_t n = ::read(ack_.get(), buf, sizeof buf);
    if (n <= 0) {
      broken_ = "perf's acknowledgement fifo closed";
      return false;
    }
    unanswered_ -= static_cast<int>(std::count(buf, buf + n, '\n'));
  }
  return true;
}

std::expected<SampleReading, std::string> CpuSampler::finish(worker::Deadline deadline) {
  auto stop_began = worker::Clock::now();
  // The last switch (off) is through before perf stops.
  if (broken_.empty() && !read_answers(std::min(deadline, worker::Clock::now() + std::chrono::seconds(5))))
    broken_ = "perf did not acknowledge its last control command in 5 s";
  ::kill(perf_.pid(), SIGINT);
  std::string broken = std::exchange(broken_, "perf was stopped");  // no switching from now on
  if (!broken.empty()) {
    perf_.terminate();
    return std::unexpected(broken);
  }
  auto exit = perf_.wait_until(deadline);
  if (!exit) {
    perf_.terminate();
    return std::unexpected("perf record did not stop in time");
  }
  // perf writes its data, then ends by the signal it was stopped with.
  bool stopped = exit->signaled ? exit->code == SIGINT : exit->code == 0;
  if (!stopped)
    return std::unexpected(fmt::format("perf record: {}: {}", exit->describe(), last_lines(read_text(log_))));
  auto stopped_at = worker::Clock::now();
  // The first frame of each sample's chain is all that is used; the task
  // events give every process's parent.
  auto script = worker::run_captured({program_, "script", "-i", data_.string(), "-F", "pid,ip,dso", "--max-stack", "1",
                              "--show-task-events"},
                             deadline, 256 << 20);
  if (!script) return std::unexpected("perf script: " + script.error());
  if (script->exit.signaled || script->exit.code != 0)
    return std::unexpected(fmt::format("perf script: {}: {}", script->exit.describe(), last_lines(script->output)));
  // The samples per process again, with no object's name in the output.
  auto pids = worker::run_captured({program_, "script", "-i", data_.string(), "-F", "pid"}, deadline, 64 << 20);
  if (!pids) return std::unexpected("perf script: " + pids.error());
  if (pids->exit.signaled || pids->exit.code != 0)
    return std::unexpected(fmt::format("perf script: {}: {}", pids->exit.describe(), last_lines(pids->output)));
  auto scripted_at = worker::Clock::now();
  auto ids = worker::run_captured({program_, "buildid-list", "-i", data_.string(), "--with-hits"}, deadline);
  if (!ids) return std::unexpected("perf buildid-list: " + ids.error());
  auto seconds = [](auto from, auto to) { return std::chrono::duration<double>(to - from).count(); };
  PerfScript parsed = parse_perf_script(script->output);
  parsed.totals = parse_perf_pids(pids->output);
  return SampleReading{std::move(parsed), parse_perf_build_ids(ids->output),
                       fmt::format("perf stopped in {:.2f} s, its script {:.2f} s, its build ids {:.2f} s",
                                   seconds(stop_began, stopped_at), seconds(stopped_at, scripted_at),
                                   seconds(scripted_at, worker::Clock::now()))};
}

}  // namespace kgym::verify
