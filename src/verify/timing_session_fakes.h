#pragma once
// Scripted workers, cores and clock for the tests of the timing phase
// (timing_session_test.cc, timing_session_probe_test.cc): run_timing
// driven through its Exchange, with no process started.
#include <algorithm>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "util/sealed_memory.h"
#include "verify/timing_session.h"

namespace kgym::verify::scripted {

constexpr double kCallNs = 1e6;  // every scripted call takes 1 ms

// The scripted reference's files of input sets: each set's layout is
// {"seed": S}; a sealed memfd of a few bytes stands for the file.
inline std::shared_ptr<util::UniqueFd> sealed(std::string_view bytes) {
  auto fd = util::make_sealed_memory("test", bytes);
  EXPECT_TRUE(fd.has_value());
  return std::make_shared<util::UniqueFd>(std::move(*fd));
}

// The seed of each call's set of a `time` or `trace` request, as the
// worker that gets it sees it.
inline std::vector<std::string> sets_of(const worker::Message& request) {
  std::vector<std::string> names;
  const auto& files = request.header.at("files");
  EXPECT_EQ(files.size(), request.fds.size());
  for (const auto& fd : request.fds) EXPECT_TRUE(util::is_sealed(fd->get()));
  for (const auto& position : request.header.at("positions")) {
    const auto& layout = files.at(position.at(0).get<std::size_t>()).at(position.at(1).get<std::size_t>());
    names.push_back(std::to_string(layout.at("seed").get<std::uint64_t>()));
  }
  return names;
}

// One core whose busy time is what the scripted workers report using plus
// `foreign_s` of other processes' work (from the second reading on), and
// which idles 1 s between readings.
struct FakeCore {
  double workers_s = 0;
  double foreign_s = 0;
  int readings = 0;
  double workers_at_reading_s = 0;  // workers_s at the last reading
};

// Workers that answer every batch at once: each call kCallNs (times
// `twin_factor` on the reference's twin, `candidate_twin_factor` on the
// candidate's), reporting `cpu_per_call` of CPU per call, which the core
// counts as busy. The reference makes input sets (one payload per group of
// seeds); every worker returns no outputs for the calls fetched.
inline Exchange scripted_workers(std::shared_ptr<FakeCore> core, double cpu_per_call_ns, double twin_factor = 1,
                          double candidate_twin_factor = 1) {
  return [core, cpu_per_call_ns, twin_factor, candidate_twin_factor](
             Role side, const worker::Message& request, std::string_view) -> std::optional<worker::Message> {
    worker::Message reply;
    std::string op = request.header.value("op", "");
    if (op == "bandwidth") {
      reply.header = {{"gbs", 10.0}};
      return reply;
    }
    if (op == "sets") {
      auto groups = nlohmann::json::array();
      for (const auto& group : request.header.at("groups")) {
        auto layouts = nlohmann::json::array();
        for (const auto& seed : group) layouts.push_back({{"seed", seed}});
        groups.push_back({{"sets", layouts}, {"bytes", 8 * group.size()}});
        reply.fds.push_back(sealed(group.dump()));
      }
      reply.header = {{"groups", groups}};
      return reply;
    }
    int calls = request.header.value("calls", 1);
    int warmup = request.header.value("warmup", 0);
    core->workers_s += cpu_per_call_ns * (calls + warmup) / 1e9;
    double ns = side == Role::kTwin            ? kCallNs * twin_factor
                : side == Role::kCandidateTwin ? kCallNs * candidate_twin_factor
                                               : kCallNs;
    // No outputs: every comparison matches.
    reply.header = {{"ns", std::vector<double>(static_cast<std::size_t>(calls), ns)},
                    {"untimed_ns", ns * warmup},
                    {"cpu_ns", cpu_per_call_ns * (calls + warmup)},
                    {"outputs", nlohmann::json::array()}};
    for (int i = 0; i < calls; ++i) reply.header["outputs"].push_back(nlohmann::json::array());
    reply.fds.push_back(sealed(""));
    return reply;
  };
}

// The parent's clock in a test: scripted workers take the time they say
// their calls took (or, when the reply says more, `elapsed_ns`), and
// nothing else does.
struct ScriptedClock {
  double ns = 1e12;
};

inline Exchange on_clock(std::shared_ptr<ScriptedClock> clock, Exchange inner) {
  return [clock, inner](Role side, const worker::Message& request, std::string_view what) -> std::optional<worker::Message> {
    auto reply = inner(side, request, what);
    if (!reply || request.header.value("op", "") != "time") return reply;
    double took = reply->header.value("untimed_ns", 0.0);
    for (const auto& ns : reply->header.value("ns", nlohmann::json::array())) took += ns.get<double>();
    clock->ns += std::max(took + reply->header.value("taken_ns", 0.0), reply->header.value("elapsed_ns", 0.0));
    return reply;
  };
}

// run_timing on scripted workers and the scripted clock.
inline TimingOutcome run_scripted(const VerifierConfig& config, const TimingInputs& inputs, Exchange exchange,
                           std::function<void(const std::string&)> note, const CoreLoadProbe& load) {
  auto clock = std::make_shared<ScriptedClock>();
  return run_timing(config, inputs, on_clock(clock, std::move(exchange)), note, load,
                    [clock] { return clock->ns; });
}

inline CoreLoadProbe scripted_cores(std::shared_ptr<FakeCore> core) {
  CoreLoadProbe probe;
  probe.cores = {0};
  probe.ticks_per_second = 1000;
  probe.own_cpu_s = [] { return 0.0; };
  probe.read_stat = [core]() -> std::optional<util::CpuStat> {
    double foreign = core->readings > 0 ? core->foreign_s : 0;
    auto busy = static_cast<std::uint64_t>((core->workers_s + foreign) * 1000);
    auto idle = static_cast<std::uint64_t>(core->readings * 1000);
    ++core->readings;
    core->workers_at_reading_s = core->workers_s;
    util::CpuStat stat;
    stat.cores = {util::CoreTicks{busy, busy + idle}};
    return stat;
  };
  return probe;
}

inline VerifierConfig short_timing() {
  VerifierConfig config;
  config.timing.warmup = 1;
  config.timing.min_samples = 10;
  config.timing.max_repetitions = 40;
  return config;
}

// The timing against scripted workers whose calls all take kCallNs, but
// for the two twins' factors, on an idle core.
inline std::optional<Performance> timed_with_twins(double twin_factor, double candidate_twin_factor) {
  auto core = std::make_shared<FakeCore>();
  return run_scripted(
             short_timing(), TimingInputs{},
             scripted_workers(core, kCallNs, twin_factor, candidate_twin_factor), [](const std::string&) {},
             scripted_cores(core))
      .performance;
}

inline bool has_flag(const Performance& p, const std::string& flag) {
  return std::find(p.flags.begin(), p.flags.end(), flag) != p.flags.end();
}

}  // namespace kgym::verify::scripted
