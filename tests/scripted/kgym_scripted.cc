// kgym-scripted: kgym with a scripted verification, for the end-to-end
// tests whose subject is not verification — the scheduler, resume, kills,
// a full disk, Slurm, reports, history (tests/e2e/lib.sh `scripted`). It
// is a test binary: built beside kgym, never installed, and kgym itself
// has no scripted path. Everything but the decision of `kgym verify` and
// `kgym build` is kgym's own code: the run loop, its children (the probe,
// the agent, `kgym build` and `kgym verify`, which are this binary again),
// the records and the reports. Where kgym would start Python workers, this
// reads a script instead:
//
//   KGYM_SCRIPTED_VERDICTS=FILE, a JSON object {"rules": [RULE, ...]}; the
//   first rule that matches a request decides it. A RULE's keys:
//     case                the case ("level1/3_SumReduction"), or its file
//                         stem ("3_SumReduction"); absent: any case
//     candidate_contains  a string the candidate's source must contain
//     stage               "verify" (default) or "build": which request
//     verdict             the verdict (default pass)
//     reason              its line (default "scripted: <verdict>")
//     speedup             the median speedup of a pass in performance mode
//                         (default 1.0)
//     seconds             how long the request takes (default 0.2); past
//                         verifier.timeout_sec it ends as a timeout
//     exit                end the process with this code, no result written
//
// The static gate is kgym's own (verify/static_gate.h), run on every
// request that has its static checks, as a verification runs it: a
// candidate without a kernel is fail_cheat whatever the script says.
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <thread>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "app/cli.h"
#include "core/backend.h"
#include "core/case_paths.h"
#include "util/fs.h"
#include "verify/static_gate.h"

namespace {

namespace fs = std::filesystem;
using kgym::CaseResult;
using kgym::Verdict;

CaseResult harness_error(std::string reason) {
  CaseResult r;
  r.verdict = Verdict::kHarnessError;
  r.reason = "kgym-scripted: " + std::move(reason);
  return r;
}

bool rule_matches(const nlohmann::json& rule, const kgym::verify::VerifyRequest& req,
                  const std::string& source) {
  bool build = req.stage == kgym::verify::VerifyStage::kBuild;
  if (rule.value("stage", std::string("verify")) != (build ? "build" : "verify")) return false;
  if (rule.contains("case")) {
    std::string want = rule["case"].get<std::string>();
    if (want != req.case_id && want != req.problem.stem().string()) return false;
  }
  if (rule.contains("candidate_contains") &&
      source.find(rule["candidate_contains"].get<std::string>()) == std::string::npos)
    return false;
  return true;
}

void write_log(const kgym::verify::VerifyRequest& req, const std::string& text) {
  if (req.scratch_dir.empty()) return;
  (void)kgym::util::write_file_atomic(req.scratch_dir / kgym::CasePaths::kVerifyLog, text);
}

CaseResult scripted_verify(const kgym::verify::VerifyRequest& req) {
  auto started = std::chrono::steady_clock::now();
  const char* script_file = std::getenv("KGYM_SCRIPTED_VERDICTS");
  if (script_file == nullptr || *script_file == '\0')
    return harness_error("KGYM_SCRIPTED_VERDICTS names no script (a JSON file of rules)");
  auto script_text = kgym::util::read_file(script_file);
  if (!script_text) return harness_error(script_text.error());
  nlohmann::json script = nlohmann::json::parse(*script_text, nullptr, false);
  if (script.is_discarded() || !script.contains("rules") || !script["rules"].is_array())
    return harness_error(fmt::format("{}: not a JSON object with a \"rules\" array", script_file));
  auto source = kgym::util::read_file(req.candidate);
  if (!source) return harness_error(source.error());

  CaseResult r;
  r.case_id = req.case_id;
  r.mode = req.config.mode;
  r.precision = req.precision;
  r.baseline = req.candidate_is_reference;
  r.backend = req.config.backend;
  r.problem = req.sizes;
  if (req.static_checks && !req.candidate_is_reference) {
    auto gate = kgym::verify::run_static_gate(req.candidate, req.problem, kgym::backend_of(req.config));
    r.static_findings = gate.findings;
    if (gate.cheat) {
      r.verdict = Verdict::kFailCheat;
      r.cheat = gate.cheat;
      r.reason = gate.reason;
      write_log(req, fmt::format("kgym-scripted: the static gate: {}\n", gate.reason));
      return r;
    }
  }
  const nlohmann::json* rule = nullptr;
  std::size_t index = 0;
  for (const auto& candidate_rule : script["rules"]) {
    ++index;
    if (rule_matches(candidate_rule, req, *source)) {
      rule = &candidate_rule;
      break;
    }
  }
  nlohmann::json none = nlohmann::json::object();
  if (rule == nullptr) rule = &none;
  write_log(req, fmt::format("kgym-scripted: a scripted {} (a test binary; no worker ran): {}\n",
                             req.stage == kgym::verify::VerifyStage::kBuild ? "build" : "verification",
                             rule == &none ? std::string("no rule matched: pass")
                                           : fmt::format("rule {} of {}", index, script_file)));

  auto seconds = std::chrono::duration<double>(rule->value("seconds", 0.2));
  auto limit = std::chrono::duration<double>(req.config.timeout);
  bool timed_out = seconds > limit;
  std::this_thread::sleep_for(timed_out ? limit : seconds);
  if (rule->contains("exit")) std::_Exit((*rule)["exit"].get<int>());

  std::string verdict_name = rule->value("verdict", std::string("pass"));
  auto verdict = kgym::parse_verdict(verdict_name);
  if (!verdict) return harness_error(fmt::format("{}: rule {}: no verdict '{}'", script_file, index, verdict_name));
  r.verdict = timed_out ? Verdict::kTimeout : *verdict;
  r.reason = timed_out ? fmt::format("scripted: the verification took over {:.0f} s", limit.count())
                       : rule->value("reason", fmt::format("scripted: {}", verdict_name));
  if (r.verdict == Verdict::kFailCheat)
    r.cheat = kgym::CheatFinding{"runtime.scripted", "runtime", "the script's verdict"};
  double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  if (req.stage == kgym::verify::VerifyStage::kBuild) {
    r.timings.compile_s = elapsed;
    return r;
  }
  r.correctness.trials = req.config.trials;
  r.correctness.trials_passed = r.verdict == Verdict::kPass ? req.config.trials : 0;
  r.timings.verify_s = elapsed;
  if (r.verdict == Verdict::kPass && req.config.mode == "performance") {
    double speedup = rule->value("speedup", 1.0);
    kgym::Performance perf;
    perf.reference.median_ms = 1.0;
    perf.reference.samples = 10;
    perf.candidate.median_ms = 1.0 / speedup;
    perf.candidate.samples = 10;
    perf.speedup.median = speedup;
    perf.speedup.ci95 = kgym::Interval{speedup * 0.95, speedup * 1.05};
    perf.stop_reason = "budget";
    r.performance = perf;
  }
  return r;
}

}  // namespace

int main(int argc, char** argv) { return kgym::app::run_cli(argc, argv, {.verify = scripted_verify}); }
