#pragma once
// A ProcessRunner that starts nothing: each child "runs" for a scripted
// duration on a FakeClock and ends with a scripted exit. wait() moves the
// clock to the next event. For scheduler tests.
#include <functional>
#include <map>

#include "util/process_runner.h"

namespace kgym::util {

struct FakeOutcome {
  std::chrono::milliseconds runs_for{10};
  ProcessExit exit;                   // duration is filled in by the runner
  std::function<void()> side_effect;  // e.g. write the files the real child would
};

class FakeProcessRunner final : public ProcessRunner {
 public:
  using Script = std::function<FakeOutcome(const ProcessSpec&)>;
  FakeProcessRunner(FakeClock& clock, Script script) : clock_(clock), script_(std::move(script)) {}

  std::expected<int, std::string> start(Id id, const ProcessSpec& spec) override {
    started_.push_back(spec);
    FakeOutcome outcome = script_(spec);
    live_[id] = Live{clock_.now(), clock_.now() + outcome.runs_for, std::move(outcome), false};
    return next_pid_++;
  }
  void terminate(Id id, std::chrono::milliseconds grace) override {
    auto it = live_.find(id);
    if (it == live_.end() || it->second.terminated) return;
    it->second.terminated = true;
    SteadyTime stop = clock_.now() + std::min(grace, std::chrono::milliseconds(1));
    if (stop < it->second.ends) {
      it->second.ends = stop;
      it->second.outcome.exit = {ProcessExit::Kind::kSignaled, 15};
    }
  }
  void kill_all() override {
    for (auto& [id, live] : live_) terminate(id, std::chrono::milliseconds(0));
  }
  std::vector<Finished> wait(SteadyTime deadline, std::optional<int>) override {
    std::vector<Finished> done;
    SteadyTime next = deadline;
    for (auto& [id, live] : live_) next = std::min(next, live.ends);
    if (next > clock_.now()) clock_.advance(next - clock_.now());
    for (auto it = live_.begin(); it != live_.end();) {
      if (it->second.ends <= clock_.now()) {
        if (it->second.outcome.side_effect) it->second.outcome.side_effect();
        ProcessExit exit = it->second.outcome.exit;
        exit.killed_by_runner = it->second.terminated;
        exit.duration = clock_.now() - it->second.started;
        done.push_back({it->first, exit});
        it = live_.erase(it);
      } else {
        ++it;
      }
    }
    return done;
  }
  std::size_t running() const override { return live_.size(); }

  const std::vector<ProcessSpec>& started() const { return started_; }

 private:
  struct Live {
    SteadyTime started;
    SteadyTime ends;
    FakeOutcome outcome;
    bool terminated;
  };
  FakeClock& clock_;
  Script script_;
  std::map<Id, Live> live_;
  std::vector<ProcessSpec> started_;
  int next_pid_ = 1000;
};

}  // namespace kgym::util
