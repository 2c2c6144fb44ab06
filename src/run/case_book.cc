#include "run/case_book.h"

#include <fmt/format.h>

#include "run/sample_flow.h"
#include "run/samples.h"
#include "util/fs.h"

namespace kgym::run {

CaseBook::CaseBook(const Config& config, const std::filesystem::path& run_dir, StateStore& store,
                   Printer& printer, const util::Clock& clock, bool combine)
    : config_(config), run_dir_(run_dir), store_(store), printer_(printer), clock_(clock), combine_(combine) {}

bool CaseBook::add(const Case& c) {
  Entry entry;
  entry.c = c;
  entry.id = c.id();
  entry.paths = CasePaths::of(run_dir_, c.level, c.stem());
  CaseState row;
  row.id = entry.id;
  if (sampled()) {
    row.samples = config_.samples;
    row.sample = 1;
  }
  bool ended = false;
  if (std::optional<CaseResult> previous = load_result(entry.paths, entry.id)) {
    row.phase = "done";
    show_result(row, *previous);
    if (sampled()) row.samples_done = config_.samples;
    entry.result = std::move(previous);
    ++done_;
    ended = true;
  } else {
    for (int k = sampled() ? 1 : 0; k <= (sampled() ? config_.samples : 0); ++k) entry.samples.push_back(k);
    entry.results.resize(entry.samples.size());
  }
  store_.state().cases.push_back(std::move(row));
  entries_.push_back(std::move(entry));
  return ended;
}

std::optional<std::size_t> CaseBook::slot_of(std::size_t c, int sample) const {
  const auto& samples = entries_.at(c).samples;
  for (std::size_t k = 0; k < samples.size(); ++k)
    if (samples[k] == sample) return k;
  return std::nullopt;
}

CasePaths CaseBook::sample_paths(std::size_t c, int sample) const {
  const CasePaths& paths = entries_.at(c).paths;
  return sample == 0 ? paths : paths.sample(sample);
}

void CaseBook::resumed_sample(std::size_t c, int sample, CaseResult result) {
  auto slot = slot_of(c, sample);
  if (!slot || entries_[c].results[*slot]) return;
  entries_[c].results[*slot] = std::move(result);
  ++row(c).samples_done;
}

std::expected<void, std::string> CaseBook::sample_finished(std::size_t c, int sample, CaseResult result,
                                                           bool written, nlohmann::json fields) {
  Entry& entry = entries_.at(c);
  if (!sampled()) return case_finished(c, std::move(result), written);
  if (!written) {
    if (auto ok = write_result(sample_paths(c, sample), result); !ok) return ok;
  }
  CaseState& s = row(c);
  ++s.samples_done;
  fields["sample"] = sample;
  fields["verdict"] = to_string(result.verdict);
  fields["reason"] = result.reason;
  store_.event("sample_finished", entry.id, std::move(fields));
  if (auto slot = slot_of(c, sample)) entry.results[*slot] = std::move(result);
  store_.save();
  store_.flush(clock_.now());  // the sample's result is on disk: its event must be too
  if (!combine_) return {};
  return finish_if_complete(c);
}

std::expected<void, std::string> CaseBook::finish_if_complete(std::size_t c) {
  Entry& entry = entries_.at(c);
  if (entry.result || entry.results.empty()) return {};
  std::vector<CaseResult> results;
  const LostTask* lost = nullptr;
  for (const auto& r : entry.results) {
    if (!r) return {};
    results.push_back(*r);
    if (r->lost_task && !lost) lost = &*r->lost_task;
  }
  if (!sampled()) return case_finished(c, std::move(results.front()), false);
  CaseResult combined = case_result_of_samples(results);
  // A case with a lost sample is not final: --resume runs that sample again.
  if (lost) combined.lost_task = *lost;
  return case_finished(c, std::move(combined), false);
}

std::expected<void, std::string> CaseBook::finish_complete_cases() {
  if (!combine_) return {};
  for (std::size_t c = 0; c < entries_.size(); ++c) {
    if (auto ok = finish_if_complete(c); !ok) return ok;
  }
  return {};
}

std::expected<void, std::string> CaseBook::case_finished(std::size_t c, CaseResult result, bool written) {
  Entry& entry = entries_.at(c);
  // Whoever writes the case's result.json writes its bundle beside it.
  if (!written) {
    if (auto ok = write_result(entry.paths, result); !ok) return ok;
    if (config_.output_bundles && !result.lost_task) {
      if (auto ok = write_bundle(entry.paths, result); !ok)
        printer_.error(fmt::format("kgym: warning: no reproduction bundle for {}: {}", entry.id, ok.error()));
    }
  }
  ++done_;
  CaseState& s = row(c);
  show_result(s, result);
  s.finished_at = util::unix_now();
  nlohmann::json data = {{"verdict", *s.verdict}, {"reason", s.reason}};
  if (result.samples) {
    data["samples"] = result.samples->n;
    data["passed"] = result.samples->passed;
    data["chosen"] = result.samples->chosen;
  }
  store_.event("finished", s.id, std::move(data));
  s.phase = "done";
  s.phase_started_at = s.finished_at;
  if (!s.started_at) s.started_at = s.phase_started_at;
  store_.event("phase", s.id, {{"phase", "done"}});
  store_.save();
  store_.flush(clock_.now());  // the result is on disk: its event must be too
  printer_.case_finished(done_, entries_.size(), result);
  printer_.progress(store_.state());
  entry.result = std::move(result);
  return {};
}

std::vector<CaseResult> CaseBook::take_results() {
  std::vector<CaseResult> results;
  results.reserve(done_);
  for (auto& entry : entries_) {
    if (entry.result) results.push_back(std::move(*entry.result));
  }
  return results;
}

}  // namespace kgym::run
