#include "core/config_record.h"

#include <cmath>
#include <map>

#include <fmt/format.h>

namespace kgym {
namespace {

using nlohmann::json;

std::vector<std::string> path_strings(const std::vector<std::filesystem::path>& paths) {
  std::vector<std::string> out;
  for (const auto& p : paths) out.push_back(p.string());
  return out;
}

// Leaves of `value` by dotted path.
void flatten(const json& value, const std::string& prefix, std::map<std::string, json>& out) {
  if (value.is_object()) {  // an empty mapping has no leaves: its keys show as "(absent)"
    for (const auto& [key, item] : value.items())
      flatten(item, prefix.empty() ? key : prefix + "." + key, out);
    return;
  }
  out[prefix] = value;
}

// Keys a resumed run may change: how the work is spread, not what it is.
bool operational(const std::string& key) {
  return key == "concurrency" || key == "monitor.poll_sec" || key.starts_with("executor") ||
         key == "output.bundles" || key == "verifier.warm_workers";
}

}  // namespace

json verifier_record(const VerifierConfig& v) {
  json tolerances = json::object();
  for (const auto& [dtype, t] : v.tolerances) tolerances[dtype] = {{"atol", t.atol}, {"rtol", t.rtol}};
  json record = {{"backend", v.backend},
                 {"python", v.python ? json(*v.python) : json(nullptr)},
                 {"mode", v.mode},
                 {"trials", v.trials},
                 {"timeout_sec", v.timeout.count()},
                 {"call_timeout_sec", v.call_timeout.count()},
                 {"threads", v.threads},
                 {"compile_cache", v.compile_cache},
                 {"baselines", v.baselines},
                 {"tolerances", tolerances},
                 {"timing",
                  {{"warmup", v.timing.warmup},
                   {"target_rse", v.timing.target_rse},
                   {"min_samples", v.timing.min_samples},
                   {"max_repetitions", v.timing.max_repetitions},
                   {"budget_sec", std::chrono::duration<double>(v.timing.budget).count()},
                   {"cache_flush", v.timing.cache_flush}}}};
  // Keys recorded only away from their defaults, so run.json of a run that
  // does not use them (and --resume against it) stays as it was.
  VerifierConfig defaults;
  if (v.execution != defaults.execution) record["execution"] = v.execution;
  if (v.execution_auto) record["execution_auto"] = true;
  if (v.warm_workers != defaults.warm_workers) record["warm_workers"] = v.warm_workers;
  return record;
}

VerifierConfig verifier_from_record(const json& j) {
  VerifierConfig v;
  v.backend = j.value("backend", v.backend);
  v.execution = j.value("execution", v.execution);
  v.execution_auto = j.value("execution_auto", v.execution_auto);
  if (auto it = j.find("python"); it != j.end() && !it->is_null()) v.python = it->get<std::string>();
  v.mode = j.value("mode", v.mode);
  v.trials = j.value("trials", v.trials);
  v.timeout = std::chrono::seconds(j.value("timeout_sec", v.timeout.count()));
  v.call_timeout = std::chrono::seconds(j.value("call_timeout_sec", v.call_timeout.count()));
  v.threads = j.value("threads", v.threads);
  v.compile_cache = j.value("compile_cache", v.compile_cache);
  v.warm_workers = j.value("warm_workers", v.warm_workers);
  v.baselines = j.value("baselines", v.baselines);
  if (auto it = j.find("tolerances"); it != j.end()) {
    for (const auto& [dtype, t] : it->items())
      v.tolerances[dtype] = {t.at("atol").get<double>(), t.at("rtol").get<double>()};
  }
  if (auto it = j.find("timing"); it != j.end()) {
    v.timing.warmup = it->value("warmup", v.timing.warmup);
    v.timing.target_rse = it->value("target_rse", v.timing.target_rse);
    v.timing.min_samples = it->value("min_samples", v.timing.min_samples);
    v.timing.max_repetitions = it->value("max_repetitions", v.timing.max_repetitions);
    if (auto budget = it->find("budget_sec"); budget != it->end()) {
      v.timing.budget = std::chrono::milliseconds(std::llround(budget->get<double>() * 1000));
    }
    v.timing.cache_flush = it->value("cache_flush", v.timing.cache_flush);
  }
  return v;
}

json config_record(const Config& c) {
  const AgentConfig& a = c.agent;
  const SandboxConfig& s = c.sandbox;
  json record = {
      {"bench_dir", c.bench_dir.string()},
      {"level", c.level},
      {"cases", c.cases},
      {"devices", c.devices},
      {"concurrency", c.concurrency},
      {"problem",
       {{"overrides", c.overrides},
        {"precision", c.precision},
        {"size",
         {{"policy", c.size.kind == ProblemSize::Kind::kAuto        ? "auto"
                     : c.size.kind == ProblemSize::Kind::kAsWritten ? "as_written"
                                                                    : "by_backend"},
          {"max_bytes", c.size.max_bytes},
          {"max_forward_ms", c.size.max_forward_ms}}}}},
      {"monitor", {{"poll_sec", std::chrono::duration<double>(c.monitor_poll).count()}}},
      {"agent",
       {{"kind", a.kind},
        {"argv", a.argv},
        {"env", a.env},
        {"timeout_sec", a.timeout.count()},
        {"workdir", a.workdir},
        {"artifacts", a.artifacts},
        {"model", a.model ? json(*a.model) : json(nullptr)},
        {"network", a.network},
        {"dir", a.replay_dir.string()}}},
      {"verifier", verifier_record(c.verifier)},
      {"sandbox",
       {{"mode", s.mode},
        {"drop_privileges", s.drop_privileges},
        {"agent_read_only", path_strings(s.agent_read_only)},
        {"agent_writable", path_strings(s.agent_writable)},
        {"limits",
         {{"address_space_mb", s.address_space_mb},
          {"cpu_sec", s.cpu_sec},
          {"file_size_mb", s.file_size_mb},
          {"processes", s.processes}}}}},
  };
  // Keys recorded only away from their defaults, so run.json of a run that
  // does not use them (and --resume against it) stays as it was.
  if (c.samples != 1) record["samples"] = c.samples;
  if (a.needs_device) record["agent"]["needs_device"] = true;
  if (a.self_check) record["agent"]["self_check"] = true;
  if (a.feedback.on()) {
    record["agent"]["feedback"] = {
        {"rounds", a.feedback.rounds},
        {"until", a.feedback.until},
        {"prompt", a.feedback.prompt ? json(a.feedback.prompt->string()) : json(nullptr)}};
  }
  if (c.output_bundles) record["output"] = {{"bundles", true}};
  const BuildConfig& b = c.build;
  if (b.jobs != 0 || b.cores || b.timeout != BuildConfig{}.timeout || !b.precompiled_header) {
    record["build"] = {{"jobs", b.jobs},
                       {"cores", b.cores ? json(*b.cores) : json(nullptr)},
                       {"timeout_sec", b.timeout.count()},
                       {"precompiled_header", b.precompiled_header}};
  }
  if (c.executor.kind != "local") {
    const SlurmConfig& sl = c.executor.slurm;
    record["executor"] = {{"kind", c.executor.kind},
                          {"slurm",
                           {{"partition", sl.partition},
                            {"account", sl.account},
                            {"qos", sl.qos},
                            {"gres_per_task", sl.gres_per_task},
                            {"cpus_per_task", sl.cpus_per_task},
                            {"mem", sl.mem},
                            {"time_limit", sl.time_limit},
                            {"max_parallel", sl.max_parallel},
                            {"extra_args", sl.extra_args},
                            {"setup", sl.setup},
                            {"poll_sec", std::chrono::duration<double>(sl.poll).count()}}}};
  }
  return record;
}

std::vector<std::string> config_differences(const json& recorded, const json& current) {
  std::map<std::string, json> before, after;
  flatten(recorded, "", before);
  flatten(current, "", after);
  std::map<std::string, std::string> lines;
  auto show = [](const std::map<std::string, json>& side, const std::string& key) {
    auto it = side.find(key);
    return it == side.end() ? std::string("(absent)") : it->second.dump();
  };
  for (const auto* side : {&before, &after}) {
    for (const auto& [key, value] : *side) {
      if (operational(key) || lines.contains(key)) continue;
      if (show(before, key) != show(after, key))
        lines[key] = fmt::format("{}: {} -> {}", key, show(before, key), show(after, key));
    }
  }
  std::vector<std::string> out;
  for (auto& [key, line] : lines) out.push_back(std::move(line));
  return out;
}

}  // namespace kgym
