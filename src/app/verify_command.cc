// `kgym verify`: verify one candidate against one problem, outside a run.
#include <cstdio>
#include <filesystem>
#include <memory>
#include <optional>
#include <random>

#include <fmt/format.h>

#include "app/command.h"
#include "app/verify_bundle.h"
#include "core/backend.h"
#include "core/case_paths.h"
#include "core/config.h"
#include "monitor/status_line.h"
#include "util/fs.h"
#include "util/json_text.h"
#include "util/live_terminal.h"
#include "util/sandbox.h"
#include "util/temp_dir.h"
#include "verify/verifier.h"
#include "worker/candidate_sandbox.h"
#include "worker/python_env.h"

namespace kgym::app {
namespace {

namespace fs = std::filesystem;

struct VerifyOptions {
  std::string problem;
  std::string candidate;
  std::string config_file;        // verifier.*, sandbox.*, problem.overrides from a run config
  std::vector<std::string> sets;  // --set KEY=VALUE on that config
  std::string size;               // --size: problem.size
  std::string precision;          // --precision: problem.precision
  std::optional<std::string> backend;
  std::string execution;  // --execution: verifier.execution
  std::string python;
  std::string mode;
  int trials = 0;
  std::vector<std::string> overrides;
  std::string json_out;
  std::string log_out;
  std::string device = "all";
  std::optional<std::uint64_t> seed;
  std::optional<int> timeout_s;
  std::optional<int> call_timeout_s;
  std::string request_file;
  std::string bundle;  // --bundle: a reproduction bundle (docs/repro.md)
  bool candidate_is_reference = false;
  bool skip_static_checks = false;
  bool build_stage = false;  // `kgym build`: the request's build alone
};

std::vector<std::string> backend_choices() {
  std::vector<std::string> names;
  for (std::string_view name : backend_names()) names.emplace_back(name);
  return names;
}

int usage_error(const std::string& message) {
  fmt::print(stderr, "kgym verify: {}\n", message);
  return kExitUsage;
}

std::expected<verify::VerifyRequest, std::string> request_from_file(const std::string& file) {
  auto text = util::read_file(file);
  if (!text) return std::unexpected(text.error());
  try {
    return verify::verify_request_from_json(nlohmann::json::parse(*text));
  } catch (const nlohmann::json::exception& e) {
    return std::unexpected(fmt::format("--request {}: {}", file, e.what()));
  }
}

// `size` is problem.size as configured: whether the reference solves the
// sizes depends on the execution, which run_verify resolves.
std::expected<verify::VerifyRequest, std::string> request_from_flags(const VerifyOptions& o,
                                                                     ProblemSize& size) {
  verify::VerifyRequest req;
  for (auto [flag, path] : {std::pair{"--problem", &o.problem}, std::pair{"--candidate", &o.candidate}}) {
    if (path->empty()) return std::unexpected(fmt::format("{} FILE is required", flag));
    if (!fs::is_regular_file(*path)) {
      return std::unexpected(fmt::format("{} {}: no such file; give the path of a .py file", flag, *path));
    }
  }
  req.problem = fs::absolute(o.problem).lexically_normal();
  req.candidate = fs::absolute(o.candidate).lexically_normal();
  // With a config, its verifier, sandbox and problem overrides are the
  // starting point; the flags below still win. --override is read by the
  // config loader in every case (as for `kgym run` and `kgym lint`); without
  // a config only the overrides are taken from it.
  bool with_config = !o.config_file.empty() || !o.sets.empty();
  BuildConfig build;
  if (with_config || !o.overrides.empty() || !o.size.empty() || !o.precision.empty()) {
    ConfigSource source;
    if (!o.config_file.empty()) source.file = o.config_file;
    source.sets = o.sets;
    if (!o.size.empty()) source.sets.push_back("problem.size=" + o.size);
    if (!o.precision.empty()) source.sets.push_back("problem.precision=" + o.precision);
    // Every flag that names a config key is one more --set, after the
    // user's: the config is checked once, with all of them applied (the
    // assignments below then change nothing).
    if (o.backend) source.sets.push_back("verifier.backend=" + *o.backend);
    if (!o.execution.empty()) source.sets.push_back("verifier.execution=" + o.execution);
    if (!o.python.empty()) source.sets.push_back("verifier.python=" + o.python);
    if (!o.mode.empty()) source.sets.push_back("verifier.mode=" + o.mode);
    if (o.trials > 0) source.sets.push_back(fmt::format("verifier.trials={}", o.trials));
    if (o.timeout_s) source.sets.push_back(fmt::format("verifier.timeout_sec={}", *o.timeout_s));
    if (o.call_timeout_s) source.sets.push_back(fmt::format("verifier.call_timeout_sec={}", *o.call_timeout_s));
    source.overrides = o.overrides;
    auto config = load_config(source);
    if (!config) return std::unexpected(config.error().message);
    if (with_config) {
      req.config = config->verifier;
      req.sandbox = config->sandbox;
      build = config->build;
    }
    req.overrides = config->overrides;
    req.precision = config->precision;
    size = config->size;
  }
  if (o.backend) req.config.backend = *o.backend;
  if (o.execution == "auto") {
    req.config.execution = "device";
    req.config.execution_auto = true;
  } else if (!o.execution.empty()) {
    req.config.execution = o.execution;
    req.config.execution_auto = false;
  }
  if (!find_backend(req.config.backend, req.config.execution)) {
    return std::unexpected(
        fmt::format("backend {} has no {} execution; host_interpreter is for cuda "
                    "(Triton) and npu (PyPTO)",
                    req.config.backend, req.config.execution));
  }
  if (!o.python.empty()) req.config.python = o.python;
  if (!o.mode.empty()) req.config.mode = o.mode;
  if (o.trials > 0) req.config.trials = o.trials;
  if (o.timeout_s) req.config.timeout = std::chrono::seconds(*o.timeout_s);
  if (o.call_timeout_s) req.config.call_timeout = std::chrono::seconds(*o.call_timeout_s);
  req.device = o.device;
  req.candidate_is_reference = o.candidate_is_reference;
  req.static_checks = !o.skip_static_checks;
  req.run_seed = o.seed ? *o.seed : std::random_device{}() * 0x100000000ULL + std::random_device{}();
  if (build.precompiled_header) req.pch_root = worker::kgym_cache_root() / "pch";
  return req;
}

// --bundle carries the problem, the candidate and the case's data; how it
// is checked comes from --config/--set, else kgym's defaults.
bool bundle_alone(const VerifyOptions& o) {
  return o.problem.empty() && o.candidate.empty() && o.size.empty() && o.precision.empty() && !o.backend &&
         o.execution.empty() && o.mode.empty() && o.trials == 0 && o.overrides.empty() && !o.seed &&
         !o.timeout_s && !o.call_timeout_s && o.request_file.empty() && !o.candidate_is_reference &&
         !o.skip_static_checks;
}

// What a bundle is verified with (docs/repro.md "What a bundle may ask
// for"): kgym's defaults, or the verifier, sandbox and build sections of
// --config and --set; the cores of --device, the interpreter of --python.
std::expected<verify::VerifyRequest, std::string> bundle_base(const VerifyOptions& o) {
  verify::VerifyRequest base;
  BuildConfig build;
  if (!o.config_file.empty() || !o.sets.empty()) {
    ConfigSource source;
    if (!o.config_file.empty()) source.file = o.config_file;
    source.sets = o.sets;
    auto config = load_config(source);
    if (!config) return std::unexpected(config.error().message);
    base.config = config->verifier;
    base.sandbox = config->sandbox;
    build = config->build;
  }
  if (build.precompiled_header) base.pch_root = worker::kgym_cache_root() / "pch";
  if (!o.python.empty()) base.config.python = o.python;
  base.device = o.device;
  return base;
}

int run_verify(const VerifyOptions& o, const VerifyFn& verify) {
  ProblemSize size;
  // A bundle's request is then verified like one built from flags: the
  // interpreter, the execution, the sandbox and every check are this
  // verifier's, never the bundle's.
  std::optional<verify::OpenedBundle> bundle;
  if (!o.bundle.empty()) {
    if (!bundle_alone(o))
      return usage_error(
          "--bundle holds the problem, the candidate and the case's data; besides it give only "
          "--config, --set, --python, --device, --json or --log");
    auto base = bundle_base(o);
    if (!base) return usage_error(base.error());
    auto opened = open_bundle_to_verify(o.bundle, *base);
    if (!opened) return usage_error(fmt::format("bad bundle: {}", opened.error()));
    bundle = std::move(*opened);
  }
  auto req = bundle                   ? std::expected<verify::VerifyRequest, std::string>(bundle->request)
             : o.request_file.empty() ? request_from_flags(o, size)
                                      : request_from_file(o.request_file);
  if (!req) return usage_error(req.error());
  if (o.build_stage) req->stage = verify::VerifyStage::kBuild;
  // The interpreter, resolved once: as given (--python, or a run's request),
  // else the config's, else found. A run checked its backend and
  // interpreter once before any case (its children pass --request).
  std::optional<worker::PythonEnv> env;
  if (req->python.empty() || o.request_file.empty()) {
    auto python = worker::resolve_python(req->python.empty() ? req->config.python
                                                             : std::optional<std::string>(req->python));
    if (!python) return usage_error(python.error());
    req->python = python->python;
    env = std::move(*python);
  }
  if (o.request_file.empty()) {
    if (auto usable = worker::resolve_execution(req->python, req->config); !usable) {
      // A CUDA build of torch without a GPU still builds CUDA candidates.
      std::string_view builds_on = backend_of(req->config).builds_on_torch;
      if (builds_on.empty() || !env->torch_build.starts_with(builds_on)) return usage_error(usable.error());
      if (req->stage != verify::VerifyStage::kBuild) {
        req->stage = verify::VerifyStage::kBuildWithoutDevice;
        req->no_device = usable.error();
      }
    } else {
      req->config.execution = usable->execution;
      if (!usable->note.empty()) fmt::print(stderr, "kgym verify: {}\n", usable->note);
    }
    // The reference worker chooses the sizes as it loads the problem.
    if (!bundle && sizes_automatically(size, backend_of(req->config))) req->solve_sizes = size;
    if (auto mode = util::resolve_sandbox_mode(req->sandbox.mode)) {
      if (auto reachable = worker::check_interpreter_reachable(req->sandbox, *mode, req->python); !reachable)
        return usage_error(reachable.error());
    }
  }
  // Without a scratch dir of its own a verification gets a temporary one,
  // kept for its log when the candidate did not pass.
  std::optional<util::TempDir> temporary;
  if (req->scratch_dir.empty()) {
    temporary.emplace("kgym-verify");
    if (temporary->path().empty())
      return usage_error("cannot create a temporary directory in " + fs::temp_directory_path().string());
    req->scratch_dir = temporary->path();
  }
  CaseResult result;
  {
    // On a terminal, what the verification is doing while it works.
    // A run's children (--request) log to files; only a user's verify shows it.
    std::optional<monitor::StatusLine> status;
    if (o.request_file.empty() && util::is_live_terminal(stderr)) {
      status.emplace(stderr, fmt::format("kgym verify {}", req->candidate.filename().string()));
      req->on_progress = [&status](const std::string& line) { status->set(line); };
    }
    result = verify(*req);
    req->on_progress = nullptr;
  }
  std::string line = fmt::format("{}: {}", to_string(result.verdict), result.reason);
  fmt::print("{}\n", line);
  if (!o.json_out.empty()) {
    auto out = fs::absolute(o.json_out);
    if (auto written = util::write_file_atomic(out, util::json_text(to_json(result), 2) + "\n"); !written) {
      fmt::print(stderr, "kgym verify: {}\n", written.error());
      return kExitNotAllPassed;
    }
  }
  if (!o.log_out.empty()) {
    std::error_code ec;
    fs::copy_file(req->scratch_dir / CasePaths::kVerifyLog, fs::absolute(o.log_out),
                  fs::copy_options::overwrite_existing, ec);
    if (ec) fmt::print(stderr, "kgym verify: --log {}: {}\n", o.log_out, ec.message());
  }
  if (result.verdict != Verdict::kPass) {
    fmt::print(stderr, "log: {}\n", (req->scratch_dir / CasePaths::kVerifyLog).string());
    if (temporary) temporary->keep();
  }
  if (bundle) return compare_with_bundle(*bundle, result);
  return result.verdict == Verdict::kPass ? kExitOk : kExitNotAllPassed;
}

}  // namespace

Command add_verify_command(CLI::App& root, VerifyFn verify) {
  auto options = std::make_shared<VerifyOptions>();
  CLI::App* app =
      root.add_subcommand("verify", "verify one candidate (ModelNew) against one problem (Model)");
  app->add_option("--problem", options->problem,
                  "the problem file (defines Model, get_inputs, get_init_inputs)");
  app->add_option("--candidate", options->candidate, "the candidate file (defines ModelNew)");
  app->add_option("--config", options->config_file,
                  "YAML config whose verifier.*, sandbox.* and problem.overrides to use");
  app->add_option("--set", options->sets, "override a config key, KEY=VALUE (repeatable)")
      ->expected(1)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  app->add_option("--backend", options->backend, "cpu | cuda | npu (default: the config's, else cpu)")
      ->check(CLI::IsMember(backend_choices()));
  app->add_option("--execution", options->execution,
                  "device | host_interpreter | auto: cuda's Triton or npu's PyPTO kernels checked on this "
                  "host's CPU (auto: when the device is missing; default: the config's, else device)")
      ->check(CLI::IsMember({"device", "host_interpreter", "auto"}));
  app->add_option("--python", options->python, "interpreter that imports torch (default: auto-detect)");
  app->add_option("--mode", options->mode, "correctness | performance (default: performance)")
      ->check(CLI::IsMember({"correctness", "performance"}));
  app->add_option("--trials", options->trials, "correctness trials (at least 3)")->check(CLI::PositiveNumber);
  app->add_option(
      "--size", options->size,
      "problem sizes: auto (the cpu default), as_written, or a budget '{max_bytes: N, max_forward_ms: MS}'");
  app->add_option("--precision", options->precision,
                  "cast the floating inputs and parameters: as_written, float32, float16 or bfloat16");
  app->add_option("--override", options->overrides, "set a problem constant, NAME=INTEGER (repeatable)");
  app->add_option("--json", options->json_out, "write the result record (result.json schema) to this file");
  app->add_option("--log", options->log_out, "copy the verification's log (verify.log) to this file");
  app->add_option("--device", options->device, "cpu cores to run on, e.g. 0-3 or all")->capture_default_str();
  app->add_option("--seed", options->seed, "run seed for the trial inputs (default: random, recorded)");
  app->add_option("--timeout", options->timeout_s, "seconds for the whole verification (default 600)")
      ->check(CLI::PositiveNumber);
  app->add_option("--call-timeout", options->call_timeout_s, "seconds for one worker request (default 60)")
      ->check(CLI::PositiveNumber);
  app->add_option(
      "--bundle", options->bundle,
      "re-run the verification a reproduction bundle holds (kgym repro) and compare with its result");
  app->add_option("--request", options->request_file, "a VerifyRequest JSON file")->group("");
  app->add_flag("--candidate-is-reference", options->candidate_is_reference,
                "time the candidate file's Model like a reference (A/A timing checks)")
      ->group("");
  // The runtime exploit corpus proves the runtime layer on its own.
  app->add_flag("--skip-static-checks", options->skip_static_checks,
                "run only the runtime checks (for testing the runtime anti-cheat layer)")
      ->group("");
  return Command{app, [options, verify] { return run_verify(*options, verify); }};
}

// The build stage of a run's case (docs/build.md), as the event loop starts
// it off any device lease: `kgym build --request F --json R`; or of one
// candidate given as for `kgym verify`, which fills the compile cache
// (docs/build.md "The compile caches") for the verifications after it.
Command add_build_command(CLI::App& root, VerifyFn verify) {
  auto options = std::make_shared<VerifyOptions>();
  options->build_stage = true;
  CLI::App* app = root.add_subcommand("build", "build one candidate's extensions, without a device");
  app->group("");
  app->add_option("--request", options->request_file, "a VerifyRequest JSON file");
  app->add_option("--problem", options->problem, "the problem file (its init inputs build ModelNew)");
  app->add_option("--candidate", options->candidate, "the candidate file (defines ModelNew)");
  app->add_option("--config", options->config_file, "YAML config whose verifier.*, sandbox.* and build.* to use");
  app->add_option("--set", options->sets, "override a config key, KEY=VALUE (repeatable)")
      ->expected(1)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  app->add_option("--python", options->python, "interpreter that imports torch (default: auto-detect)");
  app->add_option("--seed", options->seed, "run seed (of the probe that gives the init inputs)");
  app->add_flag("--skip-static-checks", options->skip_static_checks, "build without the static checks");
  app->add_option("--json", options->json_out, "write the result record to this file");
  app->add_option("--log", options->log_out, "copy the build's log to this file");
  return Command{app, [options, verify] { return run_verify(*options, verify); }};
}

}  // namespace kgym::app
