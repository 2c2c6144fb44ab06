#pragma once
// ProcessRunner over fork/exec, process groups and pidfds: one poll() over
// every child's pidfd (and an optional wake fd) with a deadline; no thread
// per child. Linux only (pidfd_open, Linux >= 5.3).
#include <map>

#include "util/process_runner.h"
#include "util/unique_fd.h"

namespace kgym::util {

class PosixProcessRunner final : public ProcessRunner {
 public:
  explicit PosixProcessRunner(const Clock& clock) : clock_(clock) {}
  ~PosixProcessRunner() override;  // kills and reaps every live child group

  std::expected<int, std::string> start(Id id, const ProcessSpec& spec) override;
  void terminate(Id id, std::chrono::milliseconds grace) override;
  void kill_all() override;
  std::vector<Finished> wait(SteadyTime deadline, std::optional<int> wake_fd) override;
  std::size_t running() const override { return children_.size(); }

 private:
  struct Child {
    int pid = -1;
    UniqueFd pidfd;
    SteadyTime started;
    std::optional<SteadyTime> kill_at;  // SIGKILL deadline after terminate()
    bool terminated = false;
  };
  void escalate_kills();
  std::optional<Finished> reap(Id id, Child& child);

  const Clock& clock_;
  std::map<Id, Child> children_;
};

}  // namespace kgym::util
