// The scheduler's cases as sets of samples (config `samples`), and device
// leases: which sample holds which device, as state.json shows it. The
// case's books (run/case_book.h) write its result once all its samples have
// ended; a resumed run keeps every sample that had ended.
#include <fmt/format.h>

#include "run/samples.h"
#include "run/scheduler.h"
#include "util/fs.h"

namespace kgym::run {

// A finished case is never run again (it gets no samples); with several
// samples, neither is a finished sample of an unfinished case. Where each
// sample starts again is its flow's resume().
void Scheduler::add_case(Case c) {
  std::size_t index = case_samples_.size();
  case_samples_.emplace_back();
  if (book_.add(c)) return;
  for (int k : book_.entry(index).samples) {
    if (sampled() && options_.only_sample && *options_.only_sample != k) continue;
    SampleId id;
    id.c = c;
    id.sample = k;
    id.seed = sample_seed(options_.run_seed, book_.entry(index).id, k);
    id.paths = book_.sample_paths(index, k);
    std::string op_dir = k == 0 ? c.stem() : fmt::format("{}_s{}", c.stem(), k);
    id.work = config_.agent.work_repo ? *config_.agent.work_repo / "custom" / c.level / op_dir : id.paths.work();
    Sample sample{SampleFlow(std::move(id), config_, options_, agent_, clock_)};
    sample.case_index = index;
    sample.flow.resume(options_.regenerate);
    if (sample.done()) {
      if (sample.flow.result()) book_.resumed_sample(index, k, *sample.flow.result());
      else ++book_.row(index).samples_done;
    }
    case_samples_[index].push_back(samples_.size());
    samples_.push_back(std::move(sample));
  }
}

CaseState& Scheduler::row_of(std::size_t i) { return store_.case_state(samples_[i].case_index); }

std::string Scheduler::holder_name(std::size_t i) const {
  const Sample& sample = samples_[i];
  const std::string& id = book_.entry(sample.case_index).id;
  if (!sampled()) return id;
  return fmt::format("{} s{}/{}", id, sample.flow.id().sample, config_.samples);
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

// The case's books record the sample (run/case_book.h): with one sample
// the case ends with it; with several, the case row shows another of its
// live samples until the last one ends.
void Scheduler::sample_finished(std::size_t i, CaseResult result) {
  std::size_t c = samples_[i].case_index;
  if (auto ok = book_.sample_finished(c, samples_[i].flow.id().sample, std::move(result), /*written=*/false);
      !ok) {
    write_failed(ok.error());
    return;
  }
  // In a Slurm task the case is combined by the coordinator.
  if (sampled() && !options_.only_sample && !book_.entry(c).result) show_live_sample(c);
}

void Scheduler::show_live_sample(std::size_t c) {
  CaseState& s = store_.case_state(c);
  const Sample* shown = nullptr;
  for (std::size_t u : case_samples_[c]) {
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

}  // namespace kgym::run
