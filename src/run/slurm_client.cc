#include "run/slurm_client.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "worker/child_process.h"

namespace kgym::run {
namespace {

constexpr std::chrono::seconds kCommandTimeout{60};

class CommandSlurmClient : public SlurmClient {
 public:
  std::expected<std::string, std::string> submit(const std::vector<std::string>& args) override {
    std::vector<std::string> argv{"sbatch"};
    argv.insert(argv.end(), args.begin(), args.end());
    auto out = run(argv);
    if (!out) return std::unexpected(out.error());
    // --parsable prints "JOBID" or "JOBID;CLUSTER" as its last line.
    std::string id;
    for (std::size_t start = 0; start < out->size();) {
      std::size_t end = out->find('\n', start);
      std::string line = out->substr(start, end == std::string::npos ? std::string::npos : end - start);
      line = line.substr(0, line.find(';'));
      if (!line.empty() && line.find_first_not_of("0123456789") == std::string::npos) id = line;
      start = end == std::string::npos ? out->size() : end + 1;
    }
    if (id.empty()) return std::unexpected(fmt::format("sbatch printed no job id: {}", *out));
    return id;
  }

  std::expected<std::vector<SlurmTask>, std::string> queue(const std::vector<std::string>& names) override {
    if (names.empty()) return std::vector<SlurmTask>{};
    auto out = run(
        {"squeue", "-h", "-r", fmt::format("--name={}", fmt::join(names, ",")), "-o", "%F|%K|%T|%N|%r|%j"});
    if (!out) return std::unexpected(out.error());
    return parse_squeue(*out);
  }

  std::expected<std::vector<SlurmTask>, std::string> accounting(
      const std::vector<std::string>& jobs) override {
    auto out = run({"sacct", "-n", "-P", "-X", fmt::format("--jobs={}", fmt::join(jobs, ",")), "-o",
                    "JobID,State,NodeList,JobName"});
    if (!out) return std::unexpected(out.error());
    return parse_sacct(*out);
  }

  std::expected<std::vector<SlurmTask>, std::string> show(const std::string& job) override {
    auto out = run({"scontrol", "-o", "show", "job", job});
    if (!out) return std::unexpected(out.error());
    return parse_scontrol(*out);
  }

  std::expected<void, std::string> cancel(const std::vector<std::string>& jobs) override {
    if (jobs.empty()) return {};
    std::vector<std::string> argv{"scancel"};
    argv.insert(argv.end(), jobs.begin(), jobs.end());
    auto out = run(argv);
    if (!out) return std::unexpected(out.error());
    return {};
  }

  std::expected<int, std::string> max_array_size() override {
    auto out = run({"scontrol", "show", "config"});
    if (!out) return std::unexpected(out.error());
    if (auto size = parse_max_array_size(*out)) return *size;
    return std::unexpected(std::string("scontrol show config names no MaxArraySize"));
  }

 private:
  // The command's output (stdout and stderr); an error naming the command
  // when it cannot run, times out or exits non-zero.
  static std::expected<std::string, std::string> run(const std::vector<std::string>& argv) {
    auto done = worker::run_captured(argv, worker::Clock::now() + kCommandTimeout);
    if (!done) return std::unexpected(fmt::format("{}: {}", argv[0], done.error()));
    if (done->exit.signaled || done->exit.code != 0) {
      std::string output = done->output;
      while (!output.empty() && (output.back() == '\n' || output.back() == ' ')) output.pop_back();
      return std::unexpected(fmt::format("{} failed ({}): {}", fmt::join(argv, " "), done->exit.describe(),
                                         output.empty() ? "no output" : output));
    }
    return done->output;
  }
};

}  // namespace

std::unique_ptr<SlurmClient> command_slurm_client() { return std::make_unique<CommandSlurmClient>(); }

}  // namespace kgym::run
