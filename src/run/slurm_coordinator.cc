#include "run/slurm_coordinator.h"

#include <poll.h>
#include <unistd.h>

#include <map>

#include <fmt/format.h>

#include "run/sample_flow.h"
#include "run/samples.h"
#include "util/fs.h"
#include "util/json_text.h"

namespace kgym::run {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

fs::path submission_file(const fs::path& run_dir, int number) {
  return RunPaths{run_dir}.slurm_dir() / fmt::format("submission-{}.json", number);
}

// The phase a running task's own state.json shows ("" when unreadable).
std::string task_phase(const CasePaths& paths) {
  auto text = util::read_file(paths.task_state());
  if (!text) return "";
  json state = json::parse(*text, nullptr, false);
  if (!state.is_object() || !state.contains("cases") || !state["cases"].is_array() || state["cases"].empty())
    return "";
  return state["cases"][0].value("phase", "");
}

}  // namespace

SlurmCoordinator::SlurmCoordinator(const Config& config, CoordinatorOptions options, std::vector<Case> cases,
                                   SlurmClient& client, Printer& printer, StateStore& store)
    : config_(config),
      options_(std::move(options)),
      client_(client),
      printer_(printer),
      store_(store),
      tag_(run_tag(options_.run_dir.string())) {
  for (const Case& c : cases) add_case(c);
}

void SlurmCoordinator::add_case(const Case& c) {
  CaseEntry entry{c, CasePaths::of(options_.run_dir, c.level, c.stem()), {}, std::nullopt};
  CaseState row;
  row.id = c.id();
  bool sampled = config_.samples > 1;
  if (sampled) {
    row.samples = config_.samples;
    row.sample = 1;
  }
  if (auto previous = load_result(entry.paths, row.id)) {
    row.phase = "done";
    show_result(row, *previous);
    if (sampled) row.samples_done = config_.samples;
    entry.result = std::move(previous);
    ++done_;
  } else {
    for (int k = sampled ? 1 : 0; k <= (sampled ? config_.samples : 0); ++k) {
      Unit unit;
      unit.case_index = cases_.size();
      unit.sample = k;
      unit.paths = k == 0 ? entry.paths : entry.paths.sample(k);
      if (k > 0) unit.result = load_result(unit.paths, row.id);
      if (unit.result) ++row.samples_done;
      entry.units.push_back(units_.size());
      units_.push_back(std::move(unit));
    }
  }
  store_.state().cases.push_back(row);
  cases_.push_back(std::move(entry));
}

std::string SlurmCoordinator::task_id(const Unit& unit) const {
  return fmt::format("{}_{}", unit.array_job.empty() ? "?" : unit.array_job, unit.task);
}

fs::path SlurmCoordinator::task_log(const Unit& unit) const {
  return RunPaths{options_.run_dir}.slurm_dir() / "logs" / fmt::format("{}.log", task_id(unit));
}

std::size_t SlurmCoordinator::live_count() const {
  return static_cast<std::size_t>(std::ranges::count_if(units_, [](const Unit& u) { return u.live(); }));
}

// Every earlier submission's tasks still in the queue belong to this run:
// they are followed, not submitted again.
void SlurmCoordinator::adopt() {
  std::map<std::pair<std::string, int>, std::size_t> by_key;  // (case id, sample) -> unit
  for (std::size_t u = 0; u < units_.size(); ++u)
    by_key[{cases_[units_[u].case_index].c.id(), units_[u].sample}] = u;
  for (int number = 1;; ++number) {
    auto text = util::read_file(submission_file(options_.run_dir, number));
    if (!text) break;
    json doc = json::parse(*text, nullptr, false);
    SubmissionRecord record;
    record.number = number;
    if (doc.is_object()) {
      record.job_name = doc.value("job_name", "");
      record.array_job = doc.value("job_id", "");
      for (const json& item : doc.value("units", json::array())) {
        auto it = by_key.find({item.value("case", ""), item.value("sample", 0)});
        record.units.push_back(it == by_key.end() ? SIZE_MAX : it->second);
      }
    }
    submissions_.push_back(std::move(record));
  }
  if (submissions_.empty()) return;
  std::vector<std::string> names;
  for (const SubmissionRecord& s : submissions_) names.push_back(s.job_name);
  auto queued = client_.queue(names);
  if (!queued) {
    printer_.error(
        fmt::format("kgym: warning: cannot read the queue ({}); unfinished case-samples are submitted "
                    "again",
                    queued.error()));
    return;
  }
  std::size_t adopted = 0;
  for (const SlurmTask& task : *queued) {
    for (SubmissionRecord& s : submissions_) {
      if (task.job_name != s.job_name) continue;
      if (s.array_job.empty()) {
        s.array_job = task.array_job;  // the coordinator died before it wrote the id
        (void)write_submission(s);
      }
      std::vector<int> ids = task.task >= 0 ? std::vector<int>{task.task} : task.pending_range;
      for (int id : ids) {
        if (id < 0 || static_cast<std::size_t>(id) >= s.units.size() || s.units[id] == SIZE_MAX) continue;
        Unit& unit = units_[s.units[id]];
        if (unit.result || unit.submission > 0) continue;
        unit.submission = s.number;
        unit.task = id;
        unit.array_job = task.array_job;
        unit.state = task.state;
        unit.node = task.node;
        ++adopted;
        show_unit(s.units[id], task.state == "RUNNING" ? "running" : "queued");
      }
    }
  }
  if (adopted > 0) printer_.line(fmt::format("  adopted {} task(s) still in the queue", adopted));
}

std::optional<std::string> SlurmCoordinator::write_submission(const SubmissionRecord& record) const {
  json units = json::array();
  for (std::size_t u : record.units) {
    if (u == SIZE_MAX) continue;
    units.push_back({{"case", cases_[units_[u].case_index].c.id()}, {"sample", units_[u].sample}});
  }
  json doc = {{"number", record.number},
              {"job_name", record.job_name},
              {"job_id", record.array_job},
              {"units", std::move(units)}};
  auto ok = util::write_file_atomic(submission_file(options_.run_dir, record.number),
                                    util::json_text(doc, 2) + "\n");
  if (!ok) return ok.error();
  return std::nullopt;
}

// Arrays for every case-sample that has no result and no task; for each,
// the submission file first, then sbatch, then the job id into the file.
void SlurmCoordinator::submit_unfinished() {
  std::vector<std::size_t> pending;
  for (std::size_t u = 0; u < units_.size(); ++u) {
    if (!units_[u].result && units_[u].submission == 0) pending.push_back(u);
  }
  if (pending.empty()) return;
  // An array's indices stay below the cluster's MaxArraySize: a larger
  // campaign is several arrays.
  std::size_t limit = kDefaultMaxArraySize;
  if (auto max = client_.max_array_size(); max && *max > 0) limit = static_cast<std::size_t>(*max);
  for (std::size_t start = 0; start < pending.size(); start += limit) {
    std::size_t end = std::min(pending.size(), start + limit);
    submit(std::vector<std::size_t>(pending.begin() + static_cast<std::ptrdiff_t>(start),
                                    pending.begin() + static_cast<std::ptrdiff_t>(end)));
  }
}

void SlurmCoordinator::submit(std::vector<std::size_t> units) {
  SubmissionRecord record;
  record.number = static_cast<int>(submissions_.size()) + 1;
  record.job_name = fmt::format("kgym-{}-{}", tag_, record.number);
  record.units = std::move(units);
  fs::path dir = RunPaths{options_.run_dir}.slurm_dir();
  fs::path script = dir / fmt::format("submission-{}.sh", record.number);
  auto fail = [&](const std::string& why) {
    printer_.error(fmt::format("kgym: cannot submit to Slurm: {}", why));
    for (std::size_t u : record.units) {
      CaseResult r;
      r.case_id = cases_[units_[u].case_index].c.id();
      r.verdict = Verdict::kHarnessError;
      r.reason = fmt::format("not submitted to Slurm: {}", why);
      r.backend = config_.verifier.backend;
      r.mode = config_.verifier.mode;
      r.lost_task = LostTask{.job = "", .state = "NOT_SUBMITTED", .source = "sbatch", .node = "", .log = ""};
      unit_finished(u, std::move(r));
    }
  };
  if (auto ok = util::make_dirs(dir / "logs"); !ok) return fail(ok.error());
  std::string text =
      batch_script(config_.executor.slurm, options_.kgym_argv0, options_.run_dir.string(), record.number);
  if (auto ok = util::write_file_atomic(script, text); !ok) return fail(ok.error());
  fs::permissions(script, fs::perms::owner_all | fs::perms::group_read | fs::perms::others_read);
  if (auto error = write_submission(record)) return fail(*error);
  Submission submission;
  submission.number = record.number;
  submission.job_name = record.job_name;
  submission.script = script.string();
  submission.log_pattern = (dir / "logs" / "%A_%a.log").string();
  for (std::size_t i = 0; i < record.units.size(); ++i) submission.ids.push_back(static_cast<int>(i));
  auto job = client_.submit(sbatch_args(config_.executor.slurm, submission));
  if (!job) return fail(job.error());
  record.array_job = *job;
  if (auto error = write_submission(record))
    printer_.error(fmt::format("kgym: warning: {} (a resumed run finds the job by its name)", *error));
  for (std::size_t i = 0; i < record.units.size(); ++i) {
    Unit& unit = units_[record.units[i]];
    unit.submission = record.number;
    unit.task = static_cast<int>(i);
    unit.array_job = *job;
    unit.state = "PENDING";
    show_unit(record.units[i], "queued");
  }
  store_.event("submitted", "",
               {{"job", *job},
                {"job_name", record.job_name},
                {"tasks", record.units.size()},
                {"array", array_spec(submission.ids, config_.executor.slurm.max_parallel)}});
  printer_.line(
      fmt::format("  submitted {} task(s) as Slurm job {} ({})", record.units.size(), *job, record.job_name));
  submissions_.push_back(std::move(record));
}

void SlurmCoordinator::show_unit(std::size_t u, const std::string& phase) {
  const Unit& unit = units_[u];
  CaseState& row = store_.case_state(unit.case_index);
  if (row.phase == "done") return;
  if (row.phase != phase || row.job != task_id(unit) || row.node.value_or("") != unit.node) {
    bool changed_phase = row.phase != phase;
    row.phase = phase;
    row.job = task_id(unit);
    row.node = unit.node.empty() ? std::nullopt : std::optional(unit.node);
    if (unit.sample > 0) row.sample = unit.sample;
    if (changed_phase) {
      row.phase_started_at = util::unix_now();
      if (!row.started_at && phase != "queued") row.started_at = row.phase_started_at;
      json data = {{"phase", phase}, {"job", task_id(unit)}};
      if (!unit.node.empty()) data["node"] = unit.node;
      if (unit.sample > 0) data["sample"] = unit.sample;
      store_.event("phase", row.id, data);
    }
    store_.save();
  }
}

void SlurmCoordinator::poll() {
  std::vector<std::string> names;
  for (const SubmissionRecord& s : submissions_) {
    bool any = std::ranges::any_of(s.units, [&](std::size_t u) {
      return u != SIZE_MAX && units_[u].live() && units_[u].submission == s.number;
    });
    if (any) names.push_back(s.job_name);
  }
  auto queued = client_.queue(names);
  if (!queued) {
    if (!queue_warned_)
      printer_.error(fmt::format("kgym: warning: cannot read the queue: {}", queued.error()));
    queue_warned_ = true;
    return;
  }
  queue_warned_ = false;
  std::map<std::pair<std::string, int>, const SlurmTask*> in_queue;  // (job name, task id)
  for (const SlurmTask& task : *queued) {
    if (task.task >= 0) in_queue[{task.job_name, task.task}] = &task;
    for (int id : task.pending_range) in_queue[{task.job_name, id}] = &task;
  }
  for (std::size_t u = 0; u < units_.size(); ++u) {
    Unit& unit = units_[u];
    if (!unit.live()) continue;
    auto it = in_queue.find({submissions_[unit.submission - 1].job_name, unit.task});
    // A task still pending has written nothing (a requeued one that had is
    // seen once it runs or leaves the queue): no file is read for it.
    bool pending = it != in_queue.end() && it->second->state == "PENDING" && unit.state == "PENDING";
    if (!pending) {
      if (auto result = load_result(unit.paths, cases_[unit.case_index].c.id())) {
        unit_finished(u, std::move(*result));
        continue;
      }
    }
    if (it == in_queue.end()) {
      if (++unit.missing >= options_.polls_before_lost) judge_lost(u);
      continue;
    }
    unit.missing = 0;
    unit.state = it->second->state;
    if (!it->second->node.empty()) unit.node = it->second->node;
    std::string phase = "queued";
    if (unit.state == "RUNNING" || unit.state == "COMPLETING") {
      phase = task_phase(unit.paths);
      if (phase.empty() || phase == "pending" || phase == "done") phase = "running";
    }
    show_unit(u, phase);
  }
}

// The task left the queue without a result: its final state says why.
void SlurmCoordinator::judge_lost(std::size_t u) {
  Unit& unit = units_[u];
  std::string state, source;
  auto find = [&](const std::vector<SlurmTask>& tasks) -> const SlurmTask* {
    for (const SlurmTask& t : tasks)
      if (t.array_job == unit.array_job && t.task == unit.task) return &t;
    return nullptr;
  };
  if (!unit.array_job.empty() && !accounting_off_) {
    if (auto records = client_.accounting({unit.array_job}); records) {
      if (const SlurmTask* t = find(*records); t && slurm_state_final(t->state)) {
        state = t->state;
        source = "sacct";
        if (!t->node.empty()) unit.node = t->node;
      }
    } else {
      accounting_off_ = true;
      store_.event("accounting_off", "", {{"why", records.error()}});
    }
  }
  if (state.empty() && !unit.array_job.empty()) {
    if (auto records = client_.show(fmt::format("{}_{}", unit.array_job, unit.task)); records) {
      if (const SlurmTask* t = find(*records); t && slurm_state_final(t->state)) {
        state = t->state;
        source = "scontrol";
        if (!t->node.empty()) unit.node = t->node;
      }
    }
  }
  if (state.empty()) {
    if (auto text = util::read_file(unit.paths.task_exit())) {
      json exit = json::parse(*text, nullptr, false);
      if (exit.is_object()) {
        state = exit.value("exit_code", 1) == 0 ? "COMPLETED" : "FAILED";
        source = "exit record";
        unit.node = exit.value("node", unit.node);
      }
    }
  }
  if (state.empty() && accounting_off_ && unit.state == "PENDING") {
    // Without accounting a pending task that is cancelled leaves no record
    // at all; nothing else takes a task out of the queue before it starts.
    state = "CANCELLED";
    source = "it left the queue before it started";
  }
  if (state.empty()) {
    // sacct lags behind the queue: ask again on the next polls, then give up.
    if (unit.missing < options_.polls_before_lost + 5) return;
    state = "UNKNOWN";
    source = "none";
  }
  fs::path log = task_log(unit);
  CaseResult r;
  r.case_id = cases_[unit.case_index].c.id();
  r.verdict = verdict_of_lost_task(state);
  r.reason = fmt::format("the Slurm task {} ended {} without a result ({}); its log: {}", task_id(unit),
                         state, source, log.string());
  r.backend = config_.verifier.backend;
  r.mode = config_.verifier.mode;
  r.lost_task = LostTask{
      .job = task_id(unit), .state = state, .source = source, .node = unit.node, .log = log.string()};
  if (auto ok = write_result(unit.paths, r); !ok)
    printer_.error(fmt::format("kgym: warning: {}", ok.error()));
  store_.event("task_lost", r.case_id,
               {{"job", task_id(unit)}, {"state", state}, {"source", source}, {"sample", unit.sample}});
  unit_finished(u, std::move(r));
}

void SlurmCoordinator::unit_finished(std::size_t u, CaseResult result) {
  Unit& unit = units_[u];
  unit.result = std::move(result);
  std::size_t c = unit.case_index;
  CaseState& row = store_.case_state(c);
  if (unit.sample == 0) return case_finished(c, *unit.result);
  ++row.samples_done;
  store_.event("sample_finished", row.id,
               {{"sample", unit.sample},
                {"verdict", to_string(unit.result->verdict)},
                {"reason", unit.result->reason},
                {"job", task_id(unit)}});
  store_.save();
  combine_samples(c);
}

// A case run with samples ends when its last sample has a result.
void SlurmCoordinator::combine_samples(std::size_t c) {
  if (cases_[c].result || cases_[c].units.empty()) return;
  std::vector<CaseResult> results;
  const LostTask* lost = nullptr;
  for (std::size_t v : cases_[c].units) {
    if (!units_[v].result) return;
    results.push_back(*units_[v].result);
    if (units_[v].result->lost_task && !lost) lost = &*units_[v].result->lost_task;
  }
  CaseResult combined = case_result_of_samples(results);
  // A case with a lost sample is not final: --resume runs that sample again.
  if (lost) combined.lost_task = *lost;
  case_finished(c, std::move(combined));
}

void SlurmCoordinator::case_finished(std::size_t c, CaseResult result) {
  CaseEntry& entry = cases_[c];
  ++done_;
  // With one sample its task wrote the case's result; with several the
  // combined result is the coordinator's to write.
  if (config_.samples > 1) {
    if (auto ok = write_result(entry.paths, result); !ok)
      printer_.error(fmt::format("kgym: warning: {}", ok.error()));
    // With one sample its task wrote the bundle beside the result.
    if (config_.output_bundles) {
      if (auto ok = write_bundle(entry.paths, result); !ok)
        printer_.error(
            fmt::format("kgym: warning: no reproduction bundle for {}: {}", entry.c.id(), ok.error()));
    }
  }
  CaseState& row = store_.case_state(c);
  show_result(row, result);
  row.finished_at = util::unix_now();
  if (!row.started_at) row.started_at = row.finished_at;
  row.phase = "done";
  row.phase_started_at = row.finished_at;
  store_.event("finished", row.id, {{"verdict", *row.verdict}, {"reason", row.reason}});
  store_.event("phase", row.id, {{"phase", "done"}});
  store_.save();
  printer_.case_finished(done_, cases_.size(), result);
  printer_.progress(store_.state());
  entry.result = std::move(result);
}

bool SlurmCoordinator::wait_or_interrupt(std::chrono::milliseconds timeout) {
  if (!options_.interrupt_fd) {
    ::usleep(static_cast<useconds_t>(timeout.count() * 1000));
    return false;
  }
  pollfd pfd{*options_.interrupt_fd, POLLIN, 0};
  int n = ::poll(&pfd, 1, static_cast<int>(timeout.count()));
  if (n <= 0) return false;
  char buf[16];
  (void)::read(*options_.interrupt_fd, buf, sizeof buf);
  return true;
}

void SlurmCoordinator::cancel_all() {
  std::vector<std::string> jobs;
  for (const SubmissionRecord& s : submissions_) {
    bool live =
        std::ranges::any_of(s.units, [&](std::size_t u) { return u != SIZE_MAX && units_[u].live(); });
    if (live && !s.array_job.empty()) jobs.push_back(s.array_job);
  }
  if (jobs.empty()) return;
  printer_.line(fmt::format("  interrupted: cancelling Slurm job(s) {}", fmt::join(jobs, " ")));
  if (auto ok = client_.cancel(jobs); !ok) printer_.error(fmt::format("kgym: warning: {}", ok.error()));
  store_.event("cancelled", "", {{"jobs", jobs}});
}

RunOutcome SlurmCoordinator::run() {
  store_.state().status = "running";
  store_.event("run_started", "", {{"cases", cases_.size()}, {"executor", "slurm"}});
  // Samples that all ended before an earlier coordinator stopped.
  for (std::size_t c = 0; c < cases_.size(); ++c) {
    if (config_.samples > 1) combine_samples(c);
  }
  adopt();
  submit_unfinished();
  store_.flush(std::chrono::steady_clock::now(), /*force=*/true);
  while (live_count() > 0) {
    if (wait_or_interrupt(config_.executor.slurm.poll)) {
      interrupted_ = true;
      cancel_all();
      break;
    }
    poll();
    store_.flush(std::chrono::steady_clock::now());
    printer_.progress(store_.state());
  }
  RunOutcome outcome;
  outcome.interrupted = interrupted_;
  for (std::size_t c = 0; c < cases_.size(); ++c) {
    if (cases_[c].result) {
      outcome.results.push_back(*cases_[c].result);
    } else {
      ++outcome.not_run;
      store_.case_state(c).phase = "not_run";
    }
  }
  store_.state().status = interrupted_ ? "interrupted" : "finished";
  store_.event("run_finished", "", {{"status", store_.state().status}});
  store_.save();
  store_.flush(std::chrono::steady_clock::now(), /*force=*/true);
  return outcome;
}

}  // namespace kgym::run
