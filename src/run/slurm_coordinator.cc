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
      book_(config, options_.run_dir, store, printer, clock_),
      tag_(run_tag(options_.run_dir.string())) {
  for (const Case& c : cases) add_case(c);
}

void SlurmCoordinator::add_case(const Case& c) {
  std::size_t index = case_units_.size();
  case_units_.emplace_back();
  if (book_.add(c)) return;
  for (int k : book_.entry(index).samples) {
    Unit unit;
    unit.case_index = index;
    unit.sample = k;
    unit.paths = book_.sample_paths(index, k);
    if (k > 0) unit.result = load_result(unit.paths, book_.entry(index).id);
    if (unit.result) book_.resumed_sample(index, k, *unit.result);
    case_units_[index].push_back(units_.size());
    units_.push_back(std::move(unit));
  }
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
    by_key[{book_.entry(units_[u].case_index).id, units_[u].sample}] = u;
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
    units.push_back({{"case", book_.entry(units_[u].case_index).id}, {"sample", units_[u].sample}});
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
      r.case_id = book_.entry(units_[u].case_index).id;
      r.verdict = Verdict::kHarnessError;
      r.reason = fmt::format("not submitted to Slurm: {}", why);
      r.backend = config_.verifier.backend;
      r.mode = config_.verifier.mode;
      r.lost_task = LostTask{.job = "", .state = "NOT_SUBMITTED", .source = "sbatch", .node = "", .log = ""};
      unit_finished(u, std::move(r), /*written=*/false);
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
      if (auto result = load_result(unit.paths, book_.entry(unit.case_index).id)) {
        unit_finished(u, std::move(*result), /*written=*/true);
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
  r.case_id = book_.entry(unit.case_index).id;
  r.verdict = verdict_of_lost_task(state);
  r.reason = fmt::format("the Slurm task {} ended {} without a result ({}); its log: {}", task_id(unit),
                         state, source, log.string());
  r.backend = config_.verifier.backend;
  r.mode = config_.verifier.mode;
  r.lost_task = LostTask{
      .job = task_id(unit), .state = state, .source = source, .node = unit.node, .log = log.string()};
  store_.event("task_lost", r.case_id,
               {{"job", task_id(unit)}, {"state", state}, {"source", source}, {"sample", unit.sample}});
  unit_finished(u, std::move(r), /*written=*/false);
}

void SlurmCoordinator::unit_finished(std::size_t u, CaseResult result, bool written) {
  Unit& unit = units_[u];
  unit.result = result;
  if (auto ok = book_.sample_finished(unit.case_index, unit.sample, std::move(result), written,
                                      {{"job", task_id(unit)}});
      !ok)
    write_failed(ok.error());
}

// As in a local run: a result that cannot be written would be lost, and so
// would every one after it; the run stops as on an interrupt (its tasks
// cancelled), keeping what is on disk, and the case runs again on --resume.
void SlurmCoordinator::write_failed(const std::string& error) {
  if (write_failure_) return;
  write_failure_ = error;
  printer_.error(fmt::format(
      "kgym: cannot write a result: {}; stopping the run (the results already written are kept)", error));
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
  store_.event("run_started", "", {{"cases", book_.size()}, {"executor", "slurm"}});
  // Samples that all ended before an earlier coordinator stopped.
  if (auto ok = book_.finish_complete_cases(); !ok) write_failed(ok.error());
  if (!write_failure_) {
    adopt();
    submit_unfinished();
  }
  store_.flush(std::chrono::steady_clock::now(), /*force=*/true);
  while (live_count() > 0) {
    if (write_failure_ || wait_or_interrupt(config_.executor.slurm.poll)) {
      interrupted_ = true;
      cancel_all();
      break;
    }
    poll();
    store_.flush(std::chrono::steady_clock::now());
    printer_.progress(store_.state());
  }
  interrupted_ = interrupted_ || write_failure_.has_value();
  RunOutcome outcome;
  outcome.interrupted = interrupted_;
  outcome.write_failure = write_failure_;
  for (std::size_t c = 0; c < book_.size(); ++c) {
    if (book_.entry(c).result) continue;
    ++outcome.not_run;
    store_.case_state(c).phase = "not_run";
  }
  outcome.results = book_.take_results();
  store_.state().status = interrupted_ ? "interrupted" : "finished";
  json finished = {{"status", store_.state().status}};
  if (write_failure_) finished["write_failure"] = *write_failure_;
  store_.event("run_finished", "", finished);
  store_.save();
  store_.flush(std::chrono::steady_clock::now(), /*force=*/true);
  return outcome;
}

}  // namespace kgym::run
