// The scheduler's cases as sets of samples (config `samples`), and device
// leases: which sample holds which device, as state.json shows it. A case's
// result is written once all its samples have ended (run/samples.h decides
// what it reports); a resumed run keeps every sample that had ended.
#include <fmt/format.h>

#include "run/samples.h"
#include "run/scheduler.h"
#include "util/fs.h"

namespace kgym::run {

// A finished case is never run again (it gets no samples); with several
// samples, neither is a finished sample of an unfinished case. Where each
// sample starts again is its flow's resume().
void Scheduler::add_case(Case c) {
  CaseEntry entry;
  entry.id = c.id();
  entry.paths = CasePaths::of(options_.run_dir, c.level, c.stem());
  CaseState state;
  state.id = entry.id;
  if (sampled()) {
    state.samples = config_.samples;
    state.sample = 1;
  }
  if (std::optional<CaseResult> previous = load_result(entry.paths, entry.id)) {
    state.phase = "done";
    show_result(state, *previous);
    if (sampled()) state.samples_done = config_.samples;
    entry.result = std::move(previous);
    ++done_;
  } else {
    int first = sampled() ? 1 : 0, last = sampled() ? config_.samples : 0;
    for (int k = first; k <= last; ++k) {
      if (sampled() && options_.only_sample && *options_.only_sample != k) continue;
      SampleId id;
      id.c = c;
      id.sample = k;
      id.seed = sample_seed(options_.run_seed, entry.id, k);
      id.paths = k == 0 ? entry.paths : entry.paths.sample(k);
      std::string op_dir = k == 0 ? c.stem() : fmt::format("{}_s{}", c.stem(), k);
      id.work =
          config_.agent.work_repo ? *config_.agent.work_repo / "custom" / c.level / op_dir : id.paths.work();
      Sample sample{SampleFlow(std::move(id), config_, options_, agent_, clock_)};
      sample.case_index = cases_.size();
      sample.flow.resume(options_.regenerate);
      if (sample.done()) ++state.samples_done;
      entry.samples.push_back(samples_.size());
      samples_.push_back(std::move(sample));
    }
  }
  store_.state().cases.push_back(state);
  cases_.push_back(std::move(entry));
}

CaseState& Scheduler::row_of(std::size_t i) { return store_.case_state(samples_[i].case_index); }

std::string Scheduler::holder_name(std::size_t i) const {
  const Sample& sample = samples_[i];
  if (!sampled()) return cases_[sample.case_index].id;
  return fmt::format("{} s{}/{}", cases_[sample.case_index].id, sample.flow.id().sample, config_.samples);
}

std::optional<std::size_t> Scheduler::lease_device(std::size_t i) {
  // Never a device a build runs on (run/build_slots.h).
  auto device = devices_.acquire([this](std::size_t d) { return builds_.device_clear(d); });
  if (!device) return std::nullopt;
  samples_[i].device = device;
  (*store_.state().device_holders)[devices_.name(*device)] = holder_name(i);
  row_of(i).device = devices_.name(*device);
  store_.event("device_leased", row_of(i).id,
               {{"device", devices_.name(*device)}, {"holder", holder_name(i)}});
  return device;
}

void Scheduler::release_device(std::size_t i) {
  Sample& sample = samples_[i];
  if (!sample.device) return;
  devices_.release(*sample.device);
  store_.state().device_holders->erase(devices_.name(*sample.device));
  sample.device.reset();
}

// With one sample the case ends with it. With several, the case row shows
// another of its live samples until the last one ends.
void Scheduler::sample_finished(std::size_t i, CaseResult result) {
  std::size_t c = samples_[i].case_index;
  if (!sampled()) return case_finished(c, std::move(result));
  CaseState& s = row_of(i);
  ++s.samples_done;
  store_.event("sample_finished", s.id,
               {{"sample", samples_[i].flow.id().sample},
                {"verdict", to_string(result.verdict)},
                {"reason", result.reason}});
  if (options_.only_sample) {  // the case is combined by the coordinator
    store_.flush(clock_.now());
    return;
  }
  std::vector<CaseResult> results;
  for (std::size_t u : cases_[c].samples) {
    if (!samples_[u].done()) {
      show_live_sample(c);
      store_.flush(clock_.now());  // the sample's result is on disk: its event must be too
      return;
    }
    results.push_back(*samples_[u].flow.result());
  }
  case_finished(c, case_result_of_samples(results));
}

void Scheduler::show_live_sample(std::size_t c) {
  CaseState& s = store_.case_state(c);
  const Sample* shown = nullptr;
  for (std::size_t u : cases_[c].samples) {
    const Sample& sample = samples_[u];
    if (sample.active()) {
      shown = &sample;
      break;
    }
    if (!shown && !sample.started && !sample.done()) shown = &sample;
  }
  if (!shown) return;
  s.phase = shown->started ? std::string(to_string(shown->flow.phase())) : "pending";
  s.sample = shown->flow.id().sample;
  s.device = shown->device ? std::optional(devices_.name(*shown->device)) : std::nullopt;
  s.phase_started_at = util::unix_now();
  store_.save();
}

void Scheduler::case_finished(std::size_t c, CaseResult result) {
  CaseEntry& entry = cases_[c];
  if (!write_result_or_stop(entry.paths, result)) return;
  ++done_;
  if (config_.output_bundles) {
    if (auto ok = write_bundle(entry.paths, result); !ok)
      printer_.error(fmt::format("kgym: warning: no reproduction bundle for {}: {}", entry.id, ok.error()));
  }
  CaseState& s = store_.case_state(c);
  show_result(s, result);
  s.finished_at = util::unix_now();
  nlohmann::json data = {{"verdict", *s.verdict}, {"reason", s.reason}};
  if (result.samples) {
    data["samples"] = result.samples->n;
    data["passed"] = result.samples->passed;
    data["chosen"] = result.samples->chosen;
  }
  store_.event("finished", s.id, data);
  s.phase = "done";
  s.phase_started_at = util::unix_now();
  if (!s.started_at) s.started_at = s.phase_started_at;
  store_.event("phase", s.id, {{"phase", "done"}});
  store_.save();
  store_.flush(clock_.now());  // the result is on disk: its event must be too
  printer_.case_finished(done_, cases_.size(), result);
  printer_.progress(store_.state());
  entry.result = std::move(result);
}

// A run stopped after the last sample of a case ended but before the case's
// result was written: the case ends now, from its samples' results.
void Scheduler::finish_resumed_cases() {
  if (options_.only_sample) return;
  for (std::size_t c = 0; c < cases_.size(); ++c) {
    if (cases_[c].result) continue;
    std::vector<CaseResult> results;
    for (std::size_t u : cases_[c].samples) {
      if (!samples_[u].done() || !samples_[u].flow.result()) break;
      results.push_back(*samples_[u].flow.result());
    }
    if (results.size() == cases_[c].samples.size() && !results.empty())
      case_finished(c, sampled() ? case_result_of_samples(results) : results.front());
  }
}

}  // namespace kgym::run
