#include "core/result.h"

#include <algorithm>

#include <fmt/format.h>

#include "util/json_optional.h"

namespace kgym {
namespace {

using nlohmann::json;

using util::optional_at;
using util::optional_json;

json interval_json(const std::optional<Interval>& i) {
  return i ? json::array({i->lo, i->hi}) : json(nullptr);
}

std::optional<Interval> interval_from(const json& j, const char* key) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return std::nullopt;
  return Interval{it->at(0).get<double>(), it->at(1).get<double>()};
}

json side_json(const TimingSide& s) {
  return {{"median_ms", s.median_ms},
          {"samples", s.samples},
          {"ci95_ms", interval_json(s.ci95_ms)},
          {"mad_ms", optional_json(s.mad_ms)},
          {"outliers", optional_json(s.outliers)}};
}

TimingSide side_from(const json& j) {
  return {j.at("median_ms").get<double>(), j.at("samples").get<int>(), interval_from(j, "ci95_ms"),
          optional_at<double>(j, "mad_ms"), optional_at<int>(j, "outliers")};
}

json speedup_json(const SpeedupEstimate& s) {
  return {{"median", s.median}, {"ci95", interval_json(s.ci95)}};
}

SpeedupEstimate speedup_from(const json& j) {
  return {j.at("median").get<double>(), interval_from(j, "ci95")};
}

}  // namespace

bool StageAttempt::passed() const {
  return outcome == "ok" && std::all_of(gates.begin(), gates.end(), [](const GateResult& g) { return g.ok; });
}

nlohmann::json stages_json(const std::vector<StageRecord>& stages) {
  nlohmann::json out = nlohmann::json::array();
  for (const StageRecord& stage : stages) {
    nlohmann::json attempts = nlohmann::json::array();
    for (const StageAttempt& a : stage.attempts) {
      nlohmann::json gates = nlohmann::json::array();
      for (const GateResult& g : a.gates)
        gates.push_back({{"gate", g.gate}, {"ok", g.ok}, {"detail", g.detail}});
      attempts.push_back({{"attempt", a.attempt}, {"outcome", a.outcome}, {"gates", gates}});
    }
    out.push_back({{"name", stage.name}, {"passed", stage.passed}, {"attempts", attempts}});
  }
  return out;
}

std::vector<StageRecord> stages_from_json(const nlohmann::json& j) {
  std::vector<StageRecord> stages;
  for (const auto& s : j) {
    StageRecord stage;
    stage.name = s.value("name", "");
    stage.passed = s.value("passed", false);
    for (const auto& a : s.value("attempts", nlohmann::json::array())) {
      StageAttempt attempt;
      attempt.attempt = a.value("attempt", 1);
      attempt.outcome = a.value("outcome", "ok");
      for (const auto& g : a.value("gates", nlohmann::json::array()))
        attempt.gates.push_back({g.value("gate", ""), g.value("ok", false), g.value("detail", "")});
      stage.attempts.push_back(std::move(attempt));
    }
    stages.push_back(std::move(stage));
  }
  return stages;
}

std::string_view to_string(GenerationOutcome o) {
  switch (o) {
    case GenerationOutcome::kOk: return "ok";
    case GenerationOutcome::kNonZeroExit: return "nonzero_exit";
    case GenerationOutcome::kTimeout: return "timeout";
    case GenerationOutcome::kMissingArtifact: return "missing_artifact";
    case GenerationOutcome::kLaunchFailed: return "launch_failed";
    case GenerationOutcome::kGateFailed: return "gate_failed";
  }
  return "launch_failed";
}

json samples_json(const SamplesSummary& s) {
  json per_sample = json::array();
  for (const SampleOutcome& o : s.per_sample) {
    per_sample.push_back({{"sample", o.sample},
                          {"verdict", to_string(o.verdict)},
                          {"speedup", optional_json(o.speedup)},
                          {"reason", o.reason}});
  }
  json pass_at_k = json::object();
  for (const auto& [k, value] : s.pass_at_k) pass_at_k[std::to_string(k)] = value;
  auto one = s.pass_at_k.find(1);
  return {{"n", s.n},
          {"passed", s.passed},
          {"chosen", s.chosen},
          {"pass_at_1", one == s.pass_at_k.end() ? json(nullptr) : json(one->second)},
          {"pass_at_k", pass_at_k},
          {"best_speedup", optional_json(s.best_speedup)},
          {"tokens", {{"in", optional_json(s.tokens_in)}, {"out", optional_json(s.tokens_out)}}},
          {"tool_calls", optional_json(s.tool_calls)},
          {"cost", optional_json(s.cost)},
          {"per_sample", per_sample}};
}

SamplesSummary samples_from_json(const json& j) {
  SamplesSummary s;
  s.n = j.at("n").get<int>();
  s.passed = j.at("passed").get<int>();
  s.chosen = j.value("chosen", 1);
  for (const auto& [k, value] : j.at("pass_at_k").items()) s.pass_at_k[std::stoi(k)] = value.get<double>();
  s.best_speedup = optional_at<double>(j, "best_speedup");
  if (auto tokens = j.find("tokens"); tokens != j.end() && tokens->is_object()) {
    s.tokens_in = optional_at<std::int64_t>(*tokens, "in");
    s.tokens_out = optional_at<std::int64_t>(*tokens, "out");
  }
  s.tool_calls = optional_at<std::int64_t>(j, "tool_calls");
  s.cost = optional_at<double>(j, "cost");
  for (const json& o : j.at("per_sample")) {
    auto verdict = parse_verdict(o.at("verdict").get<std::string>());
    if (!verdict) throw json::other_error::create(501, "unknown verdict in samples.per_sample", &o);
    s.per_sample.push_back(
        {o.at("sample").get<int>(), *verdict, optional_at<double>(o, "speedup"), o.value("reason", "")});
  }
  return s;
}

json rounds_json(const std::vector<RoundRecord>& rounds) {
  json list = json::array();
  for (const RoundRecord& r : rounds) {
    list.push_back({{"round", r.round},
                    {"verdict", to_string(r.verdict)},
                    {"speedup", optional_json(r.speedup)},
                    {"speedup_ci95", interval_json(r.speedup_ci95)},
                    {"reason", r.reason},
                    {"tokens", optional_json(r.tokens)},
                    {"cost", optional_json(r.cost)},
                    {"wall_s", optional_json(r.wall_s)}});
  }
  return list;
}

std::vector<RoundRecord> rounds_from_json(const json& j) {
  std::vector<RoundRecord> rounds;
  for (const json& o : j) {
    auto verdict = parse_verdict(o.at("verdict").get<std::string>());
    if (!verdict) throw json::other_error::create(501, "unknown verdict in rounds", &o);
    rounds.push_back({o.at("round").get<int>(), *verdict, optional_at<double>(o, "speedup"),
                      interval_from(o, "speedup_ci95"), o.value("reason", ""),
                      optional_at<std::int64_t>(o, "tokens"), optional_at<double>(o, "cost"),
                      optional_at<double>(o, "wall_s")});
  }
  return rounds;
}

json to_json(const Generation& g) {
  json flags = json::array();
  for (const TranscriptFlag& f : g.transcript_flags)
    flags.push_back({{"rule", f.rule}, {"evidence", f.evidence}, {"file", f.file}, {"line", f.line}});
  return {{"outcome", g.outcome},
          {"exit_code", optional_json(g.exit_code)},
          {"duration_s", optional_json(g.duration_s)},
          {"agent", g.agent},
          {"model", optional_json(g.model)},
          {"tokens", {{"in", optional_json(g.tokens_in)}, {"out", optional_json(g.tokens_out)}}},
          {"cost", optional_json(g.cost)},
          {"tool_calls", optional_json(g.tool_calls)},
          {"agent_version", optional_json(g.agent_version)},
          {"prompt_sha256", optional_json(g.prompt_sha256)},
          {"transcript", optional_json(g.transcript)},
          {"stages", stages_json(g.stages)},
          {"transcript_flags", flags}};
}

Generation generation_from_json(const json& g) {
  Generation gen;
  gen.outcome = g.value("outcome", "ok");
  gen.exit_code = optional_at<int>(g, "exit_code");
  gen.duration_s = optional_at<double>(g, "duration_s");
  gen.agent = g.value("agent", "");
  gen.model = optional_at<std::string>(g, "model");
  if (auto t = g.find("tokens"); t != g.end() && t->is_object()) {
    gen.tokens_in = optional_at<std::int64_t>(*t, "in");
    gen.tokens_out = optional_at<std::int64_t>(*t, "out");
  }
  gen.cost = optional_at<double>(g, "cost");
  gen.tool_calls = optional_at<std::int64_t>(g, "tool_calls");
  gen.agent_version = optional_at<std::string>(g, "agent_version");
  gen.prompt_sha256 = optional_at<std::string>(g, "prompt_sha256");
  gen.transcript = optional_at<std::string>(g, "transcript");
  if (auto st = g.find("stages"); st != g.end() && st->is_array()) gen.stages = stages_from_json(*st);
  if (auto flags = g.find("transcript_flags"); flags != g.end() && flags->is_array()) {
    for (const json& f : *flags) {
      if (!f.is_object()) continue;
      gen.transcript_flags.push_back(
          {f.value("rule", ""), f.value("evidence", ""), f.value("file", ""), f.value("line", 0)});
    }
  }
  return gen;
}

namespace {

// speedup_vs.NAME: the speedup's own fields (median, ci95) at the top, so
// that it reads like `speedup`; or {"unavailable": why}.
json baseline_json(const BaselineSpeedup& b) {
  if (!b.speedup)
    return {{"unavailable", b.unavailable.empty() ? "not timed" : b.unavailable},
            {"compile_s", optional_json(b.compile_s)}};
  json j = speedup_json(*b.speedup);
  j["reference"] = b.reference ? side_json(*b.reference) : json(nullptr);
  j["noise_floor"] = b.noise_floor ? speedup_json(*b.noise_floor) : json(nullptr);
  j["compile_s"] = optional_json(b.compile_s);
  j["measure_s"] = optional_json(b.measure_s);
  j["flags"] = b.flags;
  return j;
}

BaselineSpeedup baseline_from(const std::string& name, const json& j) {
  BaselineSpeedup b{.name = name};
  b.compile_s = optional_at<double>(j, "compile_s");
  if (auto why = j.find("unavailable"); why != j.end() && why->is_string()) {
    b.unavailable = why->get<std::string>();
    return b;
  }
  b.speedup = speedup_from(j);
  if (auto ref = j.find("reference"); ref != j.end() && !ref->is_null()) b.reference = side_from(*ref);
  if (auto nf = j.find("noise_floor"); nf != j.end() && !nf->is_null()) b.noise_floor = speedup_from(*nf);
  b.measure_s = optional_at<double>(j, "measure_s");
  b.flags = j.value("flags", std::vector<std::string>{});
  return b;
}

}  // namespace

const BaselineSpeedup* Performance::against(std::string_view baseline) const {
  for (const BaselineSpeedup& b : speedup_vs) {
    if (b.name == baseline) return &b;
  }
  return nullptr;
}

json to_json(const CaseResult& r) {
  json j;
  j["schema_version"] = r.schema_version;
  j["case_id"] = r.case_id;
  j["verdict"] = std::string(to_string(r.verdict));
  j["reason"] = r.reason;
  j["backend"] = r.backend;
  j["execution"] = r.execution;
  j["mode"] = r.mode;
  if (r.cheat) {
    j["cheat"] = {{"rule", r.cheat->rule}, {"layer", r.cheat->layer}, {"evidence", r.cheat->evidence}};
  } else {
    j["cheat"] = nullptr;
  }
  j["static_findings"] = json::array();
  for (const StaticFinding& f : r.static_findings) {
    j["static_findings"].push_back(
        {{"rule", f.rule}, {"severity", f.severity}, {"evidence", f.evidence}, {"message", f.message}});
  }
  const Correctness& c = r.correctness;
  j["correctness"] = {{"trials", c.trials},
                      {"trials_passed", c.trials_passed},
                      {"shapes", c.shapes},
                      {"max_abs_err", optional_json(c.max_abs_err)},
                      {"max_rel_err", optional_json(c.max_rel_err)},
                      {"failed_output", optional_json(c.failed_output)},
                      {"failed_trial", optional_json(c.failed_trial)},
                      {"seeds", c.seeds},
                      {"distributions", c.distributions},
                      {"skipped", c.skipped},
                      {"degenerate", optional_json(c.degenerate)},
                      {"input_dtypes", c.input_dtypes},
                      {"outputs", nlohmann::json::array()}};
  for (const Correctness::Compared& o : c.outputs) {
    j["correctness"]["outputs"].push_back(
        {{"dtype", o.dtype}, {"shape", o.shape}, {"atol", o.atol}, {"rtol", o.rtol}});
  }
  if (r.runtime) {
    j["runtime"] = {{"op_trace_available", r.runtime->available},
                    {"op_trace", r.runtime->ops},
                    {"checks", r.runtime->checks}};
    if (!r.runtime->cpu_profile.is_null()) {
      j["runtime"]["cpu_profile"] = r.runtime->cpu_profile;
    } else if (!r.runtime->cpu_profile_missing.empty()) {
      j["runtime"]["cpu_profile"] = {{"missing", r.runtime->cpu_profile_missing}};
    }
  } else {
    j["runtime"] = nullptr;
  }
  if (r.performance) {
    const Performance& p = *r.performance;
    j["performance"] = {
        {"reference", side_json(p.reference)},
        {"candidate", side_json(p.candidate)},
        {"speedup", speedup_json(p.speedup)},
        {"paired_speedup", p.paired_speedup ? speedup_json(*p.paired_speedup) : json(nullptr)},
        {"noise_floor", p.noise_floor ? speedup_json(*p.noise_floor) : json(nullptr)},
        {"candidate_noise_floor",
         p.candidate_noise_floor ? speedup_json(*p.candidate_noise_floor) : json(nullptr)},
        {"stop_reason", p.stop_reason},
        {"flags", p.flags},
        {"memory_bandwidth_gbs", optional_json(p.memory_bandwidth_gbs)},
        {"measure_s", optional_json(p.measure_s)},
        {"foreign_cpu_share", optional_json(p.foreign_cpu_share)},
        {"rounds_ms", p.rounds_ms}};
    if (!p.clock.empty()) j["performance"]["clock"] = p.clock;
    if (p.inputs) {
      j["performance"]["inputs"] = {{"seed", p.inputs->seed},
                                    {"sets", p.inputs->sets},
                                    {"megabytes", p.inputs->megabytes},
                                    {"make_s", p.inputs->make_s}};
    }
    if (!p.speedup_vs.empty()) {
      json vs = json::object();
      for (const BaselineSpeedup& b : p.speedup_vs) vs[b.name] = baseline_json(b);
      j["performance"]["speedup_vs"] = std::move(vs);
    }
    if (p.roofline) j["performance"]["roofline"] = to_json(*p.roofline);
  } else {
    j["performance"] = nullptr;
  }
  if (const auto& s = r.simulated) {
    if (j["performance"].is_null()) j["performance"] = json::object();
    j["performance"]["simulated"] = {{"value", s->value}, {"unit", s->unit}, {"source", s->source}};
  }
  j["generation"] = r.generation ? to_json(*r.generation) : nlohmann::json(nullptr);
  j["timings"] = {{"generate_s", optional_json(r.timings.generate_s)},
                  {"worker_start_s", optional_json(r.timings.worker_start_s)},
                  {"load_s", optional_json(r.timings.load_s)},
                  {"compile_s", optional_json(r.timings.compile_s)},
                  {"trials_s", optional_json(r.timings.trials_s)},
                  {"timing_s", optional_json(r.timings.timing_s)},
                  {"verify_s", optional_json(r.timings.verify_s)},
                  {"total_s", optional_json(r.timings.total_s)}};
  if (r.samples) j["samples"] = samples_json(*r.samples);
  if (!r.rounds.empty()) j["rounds"] = rounds_json(r.rounds);
  if (const auto& t = r.lost_task) {
    j["lost_task"] = {{"executor", t->executor}, {"job", t->job},   {"state", t->state},
                      {"source", t->source},     {"node", t->node}, {"log", t->log}};
  }
  if (r.problem) j["problem"] = {{"sizes", to_json(*r.problem)}};
  if (r.baseline) j["baseline"] = true;
  j["precision"] = r.precision;
  if (r.environment)
    j["environment"] = {{"python", r.environment->python},
                        {"torch", r.environment->torch_version},
                        {"torch_build", r.environment->torch_build}};
  return j;
}

json to_json(const ProblemSizes& s) {
  return {{"policy", s.policy},
          {"sizes", s.sizes},
          {"original", s.original},
          {"overrides", s.overrides},
          {"factor", s.factor},
          {"fits", s.fits},
          {"bytes", optional_json(s.bytes)},
          {"forward_ms", optional_json(s.forward_ms)}};
}

std::string describe_sizes(const ProblemSizes& s) {
  std::string out = "sizes";
  if (s.sizes.empty()) {
    out += " as written";
  } else {
    std::string sep = " ";
    for (const auto& [name, value] : s.sizes) {
      auto original = s.original.find(name);
      out += sep + fmt::format("{}={}", name, value);
      if (original != s.original.end()) out += fmt::format(" (as written {})", original->second);
      sep = ", ";
    }
  }
  if (s.policy != "auto") return out;
  std::vector<std::string> facts;
  if (s.factor < 1) facts.push_back(fmt::format("factor 1/{:.0f}", 1 / s.factor));
  if (s.bytes) facts.push_back(fmt::format("{:.1f} MB", static_cast<double>(*s.bytes) / (1 << 20)));
  if (s.forward_ms) facts.push_back(fmt::format("forward {:.2f} ms on one core (best of 3)", *s.forward_ms));
  if (!s.fits) facts.push_back("over the budget even at the smallest sizes that run");
  for (std::size_t i = 0; i < facts.size(); ++i) out += (i == 0 ? ": " : ", ") + facts[i];
  return out;
}

ProblemSizes problem_sizes_from_json(const json& j) {
  ProblemSizes s;
  s.policy = j.value("policy", "as_written");
  s.sizes = j.value("sizes", std::map<std::string, long long>{});
  s.original = j.value("original", std::map<std::string, long long>{});
  s.overrides = j.value("overrides", std::map<std::string, long long>{});
  s.factor = j.value("factor", 1.0);
  s.fits = j.value("fits", true);
  s.bytes = optional_at<unsigned long long>(j, "bytes");
  s.forward_ms = optional_at<double>(j, "forward_ms");
  return s;
}

CaseResult result_from_json(const json& j) {
  CaseResult r;
  r.schema_version = j.at("schema_version").get<int>();
  // A newer layout is refused rather than misread (core/record_files.h).
  if (r.schema_version > kResultSchemaVersion) {
    throw json::other_error::create(
        501,
        fmt::format("written by a newer kgym (schema_version {}; this kgym reads up to {}): open the run "
                    "with that kgym or a newer one",
                    r.schema_version, kResultSchemaVersion),
        &j);
  }
  r.case_id = j.at("case_id").get<std::string>();
  auto verdict = parse_verdict(j.at("verdict").get<std::string>());
  if (!verdict) throw json::other_error::create(501, "unknown verdict " + j.at("verdict").dump(), &j);
  r.verdict = *verdict;
  r.reason = j.value("reason", "");
  r.backend = j.value("backend", "");
  r.execution = j.value("execution", "device");
  r.mode = j.value("mode", "");
  if (auto it = j.find("cheat"); it != j.end() && !it->is_null()) {
    r.cheat = CheatFinding{it->at("rule").get<std::string>(), it->at("layer").get<std::string>(),
                           it->at("evidence").get<std::string>()};
  }
  for (const json& f : j.value("static_findings", json::array())) {
    r.static_findings.push_back(StaticFinding{f.at("rule").get<std::string>(),
                                              f.at("severity").get<std::string>(),
                                              f.at("evidence").get<std::string>(), f.value("message", "")});
  }
  if (auto it = j.find("correctness"); it != j.end() && !it->is_null()) {
    const json& c = *it;
    r.correctness.trials = c.value("trials", 0);
    r.correctness.trials_passed = c.value("trials_passed", 0);
    r.correctness.shapes = c.value("shapes", std::vector<std::string>{});
    r.correctness.max_abs_err = optional_at<double>(c, "max_abs_err");
    r.correctness.max_rel_err = optional_at<double>(c, "max_rel_err");
    r.correctness.failed_output = optional_at<int>(c, "failed_output");
    r.correctness.failed_trial = optional_at<int>(c, "failed_trial");
    r.correctness.seeds = c.value("seeds", std::vector<std::uint64_t>{});
    r.correctness.distributions = c.value("distributions", std::vector<std::string>{});
    r.correctness.skipped = c.value("skipped", std::vector<std::string>{});
    r.correctness.degenerate = optional_at<std::string>(c, "degenerate");
    r.correctness.input_dtypes = c.value("input_dtypes", std::vector<std::string>{});
    if (auto outputs = c.find("outputs"); outputs != c.end() && outputs->is_array()) {
      for (const auto& o : *outputs) {
        r.correctness.outputs.push_back({o.value("dtype", ""), o.value("shape", std::vector<std::int64_t>{}),
                                         o.value("atol", 0.0), o.value("rtol", 0.0)});
      }
    }
  }
  if (auto it = j.find("runtime"); it != j.end() && !it->is_null()) {
    RuntimeTrace trace;
    trace.available = it->value("op_trace_available", false);
    trace.ops = it->value("op_trace", std::map<std::string, std::int64_t>{});
    trace.checks = it->value("checks", std::vector<std::string>{});
    if (auto p = it->find("cpu_profile"); p != it->end() && p->is_object()) {
      if (p->contains("missing") && (*p)["missing"].is_string())
        trace.cpu_profile_missing = (*p)["missing"].get<std::string>();
      else
        trace.cpu_profile = *p;
    }
    r.runtime = std::move(trace);
  }
  if (auto it = j.find("performance"); it != j.end() && it->is_object() && it->contains("simulated")) {
    const json& s = it->at("simulated");
    r.simulated = SimulatedTime{s.at("value").get<double>(), s.value("unit", ""), s.value("source", "")};
  }
  if (auto it = j.find("performance"); it != j.end() && !it->is_null() && it->contains("speedup")) {
    const json& p = *it;
    Performance perf;
    perf.reference = side_from(p.at("reference"));
    perf.candidate = side_from(p.at("candidate"));
    perf.speedup = speedup_from(p.at("speedup"));
    if (auto ps = p.find("paired_speedup"); ps != p.end() && !ps->is_null())
      perf.paired_speedup = speedup_from(*ps);
    if (auto nf = p.find("noise_floor"); nf != p.end() && !nf->is_null())
      perf.noise_floor = speedup_from(*nf);
    if (auto nf = p.find("candidate_noise_floor"); nf != p.end() && !nf->is_null())
      perf.candidate_noise_floor = speedup_from(*nf);
    perf.stop_reason = p.value("stop_reason", "");
    perf.flags = p.value("flags", std::vector<std::string>{});
    perf.memory_bandwidth_gbs = optional_at<double>(p, "memory_bandwidth_gbs");
    perf.measure_s = optional_at<double>(p, "measure_s");
    perf.foreign_cpu_share = optional_at<double>(p, "foreign_cpu_share");
    perf.rounds_ms = p.value("rounds_ms", std::vector<std::vector<double>>{});
    perf.clock = p.value("clock", "");
    if (auto in = p.find("inputs"); in != p.end() && in->is_object()) {
      perf.inputs = TimedInputs{.seed = in->value("seed", ""),
                                .sets = in->value("sets", 0),
                                .megabytes = in->value("megabytes", 0.0),
                                .make_s = in->value("make_s", 0.0)};
    }
    if (auto vs = p.find("speedup_vs"); vs != p.end() && vs->is_object()) {
      for (const auto& [name, entry] : vs->items()) perf.speedup_vs.push_back(baseline_from(name, entry));
    }
    if (auto roof = p.find("roofline"); roof != p.end() && roof->is_object())
      perf.roofline = roofline_from_json(*roof);
    r.performance = perf;
  }
  if (auto it = j.find("generation"); it != j.end() && !it->is_null())
    r.generation = generation_from_json(*it);
  if (auto it = j.find("timings"); it != j.end() && !it->is_null()) {
    r.timings.generate_s = optional_at<double>(*it, "generate_s");
    r.timings.worker_start_s = optional_at<double>(*it, "worker_start_s");
    r.timings.load_s = optional_at<double>(*it, "load_s");
    r.timings.compile_s = optional_at<double>(*it, "compile_s");
    r.timings.trials_s = optional_at<double>(*it, "trials_s");
    r.timings.timing_s = optional_at<double>(*it, "timing_s");
    r.timings.verify_s = optional_at<double>(*it, "verify_s");
    r.timings.total_s = optional_at<double>(*it, "total_s");
  }
  if (auto it = j.find("samples"); it != j.end() && !it->is_null()) r.samples = samples_from_json(*it);
  if (auto it = j.find("rounds"); it != j.end() && it->is_array()) r.rounds = rounds_from_json(*it);
  if (auto it = j.find("lost_task"); it != j.end() && it->is_object()) {
    r.lost_task = LostTask{it->value("executor", "slurm"), it->value("job", ""),  it->value("state", ""),
                           it->value("source", ""),        it->value("node", ""), it->value("log", "")};
  }
  r.baseline = j.value("baseline", false);
  r.precision = j.value("precision", "as_written");
  if (auto it = j.find("environment"); it != j.end() && it->is_object())
    r.environment =
        TorchEnvironment{it->value("python", ""), it->value("torch", ""), it->value("torch_build", "")};
  if (auto it = j.find("problem"); it != j.end() && it->is_object() && it->contains("sizes"))
    r.problem = problem_sizes_from_json(it->at("sizes"));
  return r;
}

}  // namespace kgym
