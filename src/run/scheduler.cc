#include "run/scheduler.h"

#include <unistd.h>

#include <fmt/format.h>

#include "core/backend.h"
#include "util/cpu_set.h"
#include "util/fs.h"

namespace kgym::run {

using util::ProcessExit;
using util::SteadyTime;

namespace {

// Per device, the cores it holds: a CPU device's core list; none for a
// device that is not made of cores.
std::vector<std::set<int>> cores_of_devices(const Config& config) {
  std::vector<std::set<int>> cores;
  bool core_devices = backend_of(config.verifier).devices_are_cores;
  for (const std::string& device : config.devices) {
    if (!core_devices) {
      cores.emplace_back();
    } else if (device == "all") {
      cores.push_back(util::allowed_cpus());
    } else {
      cores.push_back(util::parse_cpu_list(device).value_or(std::set<int>{}));
    }
  }
  return cores;
}

BuildSlots make_build_slots(const Config& config) {
  auto devices = cores_of_devices(config);
  std::optional<std::set<int>> configured;
  if (config.build.cores) configured = util::parse_cpu_list(*config.build.cores);
  return BuildSlots(build_cores(configured, util::allowed_cpus(), devices), config.build.jobs, devices);
}

}  // namespace

Scheduler::Scheduler(const Config& config, SchedulerOptions options, std::vector<Case> cases,
                     util::ProcessRunner& runner, const util::Clock& clock, const agent::Agent& agent,
                     Printer& printer, StateStore& store)
    : config_(config),
      options_(std::move(options)),
      runner_(runner),
      clock_(clock),
      agent_(agent),
      printer_(printer),
      store_(store),
      devices_(config.devices),
      builds_(make_build_slots(config)),
      host_cpus_(util::format_cpu_list(builds_.host_cores())),
      book_(config, options_.run_dir, store, printer, clock, /*combine=*/!options_.only_sample) {
  store_.state().cases.clear();
  store_.state().device_holders.emplace();
  // Exact capacities: a sample is a few KB, and 50,000 cases of them grown by
  // doubling would hold a third more.
  case_samples_.reserve(cases.size());
  store_.state().cases.reserve(cases.size());
  for (Case& c : cases) add_case(std::move(c));
  samples_.shrink_to_fit();
}

Scheduler::~Scheduler() = default;

void Scheduler::set_phase(std::size_t i, const std::string& phase) {
  Sample& sample = samples_[i];
  CaseState& s = row_of(i);
  s.phase = phase;
  s.phase_started_at = util::unix_now();
  if (!s.started_at) s.started_at = s.phase_started_at;
  nlohmann::json data = {{"phase", phase}};
  if (sampled()) {
    s.sample = sample.flow.id().sample;
    s.device = sample.device ? std::optional(devices_.name(*sample.device)) : std::nullopt;
    data["sample"] = sample.flow.id().sample;
  }
  store_.event("phase", s.id, data);
  store_.save();
}

// What the flow noted while it took its last step, onto the case row, into
// events.jsonl and to the terminal.
void Scheduler::record_notes(std::size_t i) {
  for (FlowNote& note : samples_[i].flow.take_notes()) {
    CaseState& s = row_of(i);
    switch (note.kind) {
      case FlowNote::Kind::kPhase: set_phase(i, note.name); break;
      case FlowNote::Kind::kWarning: printer_.error(note.name); break;
      case FlowNote::Kind::kEvent:
        if (note.name == "stage") {
          s.stage = note.data.value("stage", "");
          s.attempt = note.data.value("attempt", 0);
        } else if (note.name == "round_started") {
          s.round = note.data.value("round", 0);
        } else if (note.name == "gates") {
          s.failed_gates.clear();
          for (const auto& g : note.data.value("gates", nlohmann::json::array())) {
            if (!g.value("ok", false))
              s.failed_gates.push_back(fmt::format("{}: {}", g.value("gate", ""), g.value("detail", "")));
          }
        }
        store_.event(note.name, s.id, std::move(note.data));
        if (note.name == "stage" || note.name == "gates" || note.name == "round_started") store_.save();
        break;
    }
  }
}

// Carries out the step a flow asked for; a launch that cannot start goes
// back to the flow, which decides what that means.
void Scheduler::apply(std::size_t i, Step step) {
  for (;;) {
    record_notes(i);
    Sample& sample = samples_[i];
    // A flow that let its device go (a refinement round's agent runs
    // without it) frees it for the others.
    if (sample.device && !sample.flow.device()) release_device(i);
    if (auto* launch = std::get_if<Launch>(&step)) {
      // Agents, their gates and probes keep off the devices' cores when the
      // machine has cores no device holds (docs/build.md).
      Phase phase = sample.flow.phase();
      if (launch->spec.cpus.empty() && !host_cpus_.empty() &&
          (phase == Phase::kProbing || phase == Phase::kGenerating || phase == Phase::kChecking))
        launch->spec.cpus = host_cpus_;
      auto pid = runner_.start(static_cast<util::ProcessRunner::Id>(i), launch->spec);
      if (!pid) {
        step = sample.flow.launch_failed(pid.error());
        continue;
      }
      sample.running = true;
      sample.deadline = clock_.now() + launch->timeout;
      sample.deadline_hit = false;
      row_of(i).pid = *pid;
      store_.save();
      return;
    }
    if (std::holds_alternative<NeedDevice>(step)) {
      sample.waiting_device = true;
      return;
    }
    if (std::holds_alternative<NeedBuildSlot>(step)) {
      sample.waiting_build = true;
      return;
    }
    return finish(i, std::move(std::get<Finished>(step).result));
  }
}

void Scheduler::start(std::size_t i) {
  Sample& sample = samples_[i];
  sample.started = true;
  live_.insert(i);
  row_of(i).attempt = 1;  // workflows with re-prompted stages count up from here
  std::optional<DeviceLease> lease;
  if (sample.device) lease = DeviceLease{*sample.device, devices_.name(*sample.device)};
  apply(i, sample.flow.start(std::move(lease)));
}

// A sample that leased its device before generation (agent.needs_device)
// verifies on it without a second wait.
void Scheduler::grant_device(std::size_t i) {
  Sample& sample = samples_[i];
  if (!sample.waiting_device) return;
  auto device = sample.device ? sample.device : lease_device(i);
  if (!device) return;
  sample.waiting_device = false;
  row_of(i).device = devices_.name(*device);
  apply(i, sample.flow.device_granted({*device, devices_.name(*device)}));
}

// A build starts on a core of no leased device; while a verification waits,
// not on the cores of a free device either, so builds cannot keep it from
// ever clearing.
void Scheduler::grant_build(std::size_t i) {
  Sample& sample = samples_[i];
  if (!sample.waiting_build) return;
  bool verification_waits =
      std::ranges::any_of(live_, [this](std::size_t u) { return samples_[u].waiting_device; });
  std::vector<bool> blocked(devices_.size());
  for (std::size_t d = 0; d < devices_.size(); ++d) blocked[d] = devices_.busy(d) || verification_waits;
  auto core = builds_.acquire(blocked);
  if (!core) return;
  sample.waiting_build = false;
  sample.build_core = core;
  apply(i, sample.flow.build_slot_granted({std::to_string(*core)}));
}

void Scheduler::release_build(std::size_t i) {
  Sample& sample = samples_[i];
  if (!sample.build_core) return;
  builds_.release(*sample.build_core);
  sample.build_core.reset();
}

void Scheduler::on_exit(std::size_t i, const ProcessExit& exit) {
  Sample& sample = samples_[i];
  release_build(i);  // a child that ends while the sample holds a core was its build
  sample.running = false;
  sample.deadline.reset();
  row_of(i).pid.reset();
  if (interrupts_ > 0) return;  // the case is reported as not run
  apply(i, sample.flow.child_exited(exit, sample.deadline_hit));
}

void Scheduler::finish(std::size_t i, CaseResult result) {
  Sample& sample = samples_[i];
  live_.erase(i);
  release_device(i);
  release_build(i);
  sample.waiting_device = false;
  sample.waiting_build = false;
  sample_finished(i, std::move(result));
}

// A result that cannot be written (ENOSPC, EFBIG) would be lost, and so
// would every result after it: the run stops as on an interrupt, keeping
// what is on disk, and the case runs again on --resume.
void Scheduler::write_failed(const std::string& error) {
  if (!write_failure_) write_failure_ = error;
  stop(fmt::format("kgym: cannot write a result: {}; stopping the run (the results already written are kept)",
                   error));
}

// Stops starting samples and terminates the running children, as a first
// interrupt does.
void Scheduler::stop(std::string_view why) {
  printer_.error(std::string(why));
  if (interrupts_ == 0) {
    interrupts_ = 1;
    for (std::size_t i = 0; i < samples_.size(); ++i) {
      if (samples_[i].running)
        runner_.terminate(static_cast<util::ProcessRunner::Id>(i), options_.kill_grace);
    }
  }
  store_.state().status = "interrupted";
  store_.save();
}

// A turn looks at the live samples only (at most `concurrency`) and starts
// new ones from a cursor, so its cost does not grow with the number of cases.
void Scheduler::schedule() {
  if (interrupts_ > 0) return;
  std::size_t active = live_.size();
  // Copies: a grant may finish a sample, which leaves live_.
  for (std::size_t i : std::vector(live_.begin(), live_.end())) grant_device(i);
  for (std::size_t i : std::vector(live_.begin(), live_.end())) grant_build(i);
  std::size_t limit = static_cast<std::size_t>(config_.concurrency);
  for (; next_start_ < samples_.size() && active < limit; ++next_start_) {
    std::size_t i = next_start_;
    if (samples_[i].started || samples_[i].done()) continue;
    if (config_.agent.needs_device && !lease_device(i)) break;
    ++active;
    start(i);
    grant_device(i);
    grant_build(i);
  }
}

void Scheduler::enforce_deadlines() {
  SteadyTime now = clock_.now();
  for (std::size_t i : live_) {  // a running sample is live
    Sample& sample = samples_[i];
    if (sample.running && sample.deadline && *sample.deadline <= now && !sample.deadline_hit) {
      sample.deadline_hit = true;
      store_.event("timeout", sample.flow.id().c.id());
      runner_.terminate(static_cast<util::ProcessRunner::Id>(i), options_.kill_grace);
    }
  }
}

SteadyTime Scheduler::next_deadline() const {
  SteadyTime next = clock_.now() + std::chrono::seconds(1);
  for (std::size_t i : live_) {
    const Sample& sample = samples_[i];
    if (sample.running && sample.deadline && !sample.deadline_hit && *sample.deadline < next)
      next = *sample.deadline;
  }
  return next;
}

void Scheduler::handle_interrupt() {
  if (!options_.interrupt_fd) return;
  char buf[16];
  ssize_t n = ::read(*options_.interrupt_fd, buf, sizeof buf);
  if (n <= 0) return;
  int before = interrupts_;
  interrupts_ += static_cast<int>(n);
  if (before == 0) {
    printer_.line("kgym: interrupted; stopping running cases (Ctrl-C again to kill them at once)");
    for (std::size_t i = 0; i < samples_.size(); ++i) {
      if (samples_[i].running)
        runner_.terminate(static_cast<util::ProcessRunner::Id>(i), options_.kill_grace);
    }
  }
  if (interrupts_ >= 2) runner_.kill_all();
  store_.state().status = "interrupted";
  store_.event("interrupt", "", {{"count", interrupts_}});
  store_.save();
}

RunOutcome Scheduler::run() {
  store_.state().status = "running";
  store_.save();
  store_.event("run_started", "", {{"cases", book_.size()}});
  // A run stopped after the last sample of a case ended but before the
  // case's result was written: the case ends now.
  if (auto ok = book_.finish_complete_cases(); !ok) write_failed(ok.error());
  for (;;) {
    schedule();
    printer_.progress(store_.state());  // at least once a second: next_deadline() is at most 1 s away
    // Unfinished: a live sample, or one the cursor has not started yet.
    while (next_start_ < samples_.size() && (samples_[next_start_].started || samples_[next_start_].done()))
      ++next_start_;
    bool unfinished = !live_.empty() || next_start_ < samples_.size();
    if (runner_.running() == 0 && (!unfinished || interrupts_ > 0)) break;
    store_.flush(clock_.now());  // one group commit per turn, before waiting
    util::SteadyTime deadline = next_deadline();
    if (store_.state_pending())
      deadline = std::min(deadline, clock_.now() + store_.state_due_in(clock_.now()));
    for (const auto& finished : runner_.wait(deadline, options_.interrupt_fd)) {
      on_exit(static_cast<std::size_t>(finished.id), finished.exit);
    }
    enforce_deadlines();
    handle_interrupt();
  }
  RunOutcome outcome;
  outcome.interrupted = interrupts_ > 0;
  outcome.write_failure = write_failure_;
  for (std::size_t i = 0; i < samples_.size(); ++i) {
    release_device(i);
    release_build(i);
  }
  for (std::size_t c = 0; c < book_.size(); ++c) {
    if (book_.entry(c).result) continue;
    CaseState& s = store_.case_state(c);
    ++outcome.not_run;
    s.phase = "not_run";
    s.pid.reset();
  }
  outcome.results = book_.take_results();  // the loop is over: not read again
  store_.state().status = outcome.interrupted ? "interrupted" : "finished";
  nlohmann::json finished = {{"status", store_.state().status}};
  if (write_failure_) finished["write_failure"] = *write_failure_;
  store_.event("run_finished", "", finished);
  store_.save();
  store_.flush(clock_.now(), /*force=*/true);
  return outcome;
}

}  // namespace kgym::run
