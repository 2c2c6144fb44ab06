// `kgym self-check --request FILE [CANDIDATE]`: what `kgym-check` runs in an
// agent's box (agent.self_check, docs/agents.md "A check in the box"). It
// checks a candidate the way the verification will begin to: kgym's static
// rules for the run's backend, the build, and the correctness trials on the
// problem as the agent sees it (one on get_inputs(), one on signed normal
// values, at the sizes of SPEC.md), with kgym's tolerances. It runs in the
// agent's box with the agent's rights, under seeds of its own, writes only
// a temporary directory of the box, and is never a verdict of the run.
#include <random>

#include <fmt/format.h>

#include "app/command.h"
#include "core/case_paths.h"
#include "util/fs.h"
#include "util/temp_dir.h"
#include "verify/verifier.h"

namespace kgym::app {
namespace {

namespace fs = std::filesystem;

struct SelfCheckOptions {
  std::string request_file;
  std::string candidate = "model_new.py";
};

// "ok (…)", or the verdict (for a cheat its rule) and its reason.
std::string verdict_line(const CaseResult& result) {
  if (result.verdict == Verdict::kPass)
    return "ok (correctness only; timing and held-out shapes are checked at verification)";
  std::string what = result.verdict == Verdict::kFailCheat && result.cheat
                         ? result.cheat->rule
                         : std::string(to_string(result.verdict));
  // A static finding's reason names its rule already: "static.no_kernel — …".
  std::string_view reason = result.reason;
  if (reason.starts_with(what + " — ")) reason.remove_prefix(what.size() + std::string_view(" — ").size());
  return fmt::format("{} — {}", what, reason);
}

int run_self_check(const SelfCheckOptions& o, const VerifyFn& verify) {
  auto text = util::read_file(o.request_file);
  if (!text) {
    fmt::print(stderr, "kgym-check: {}\n", text.error());
    return kExitUsage;
  }
  verify::VerifyRequest req;
  try {
    req = verify::verify_request_from_json(nlohmann::json::parse(*text));
  } catch (const nlohmann::json::exception& e) {
    fmt::print(stderr, "kgym-check: {}: {}\n", o.request_file, e.what());
    return kExitUsage;
  }
  std::error_code ec;
  req.candidate = fs::absolute(o.candidate, ec);
  if (!fs::is_regular_file(req.candidate, ec)) {
    fmt::print(stderr, "kgym-check: no candidate at {} (usage: kgym-check [FILE], default model_new.py)\n",
               req.candidate.string());
    return kExitUsage;
  }
  // How kgym-check runs, whatever the file says: correctness only, the
  // agent's own box (no box of its own, no cache of kgym's), its own seeds.
  req.self_check = true;
  req.config.mode = "correctness";
  req.config.compile_cache = false;
  req.stage = verify::VerifyStage::kBuildThenVerify;
  req.sandbox.mode = "none";
  req.warm.reset();
  req.pch_root.reset();
  req.pch_dir.reset();
  req.prebuilt.clear();
  req.static_checks = true;
  req.op_trace = true;
  req.run_seed = std::random_device{}() * 0x100000000ULL + std::random_device{}();
  util::TempDir scratch("kgym-check");
  if (scratch.path().empty()) {
    fmt::print(stderr, "kgym-check: cannot create a temporary directory in {}\n",
               fs::temp_directory_path(ec).string());
    return kExitUsage;
  }
  req.scratch_dir = scratch.path();
  CaseResult result = verify(req);
  fmt::print("{}\n", verdict_line(result));
  if (result.verdict == Verdict::kPass) return kExitOk;
  scratch.keep();
  fmt::print("details: {}\n", (scratch.path() / CasePaths::kVerifyLog).string());
  return kExitNotAllPassed;
}

}  // namespace

Command add_self_check_command(CLI::App& root, VerifyFn verify) {
  auto options = std::make_shared<SelfCheckOptions>();
  CLI::App* app = root.add_subcommand("self-check", "kgym-check in an agent's box (agent.self_check)");
  app->group("");  // internal: the box's kgym-check runs it
  app->add_option("--request", options->request_file, "the check's request, written by kgym run")->required();
  app->add_option("CANDIDATE", options->candidate, "the candidate file (default: model_new.py)");
  return Command{app, [options, verify] { return run_self_check(*options, verify); }};
}

}  // namespace kgym::app
