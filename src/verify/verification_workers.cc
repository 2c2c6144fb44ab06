// Starting the workers of a verification: forked from the device's warm
// zygotes when the request names them (worker/warm_pool.h), else — or when
// a zygote fails — spawned cold. Either way the reference is trusted and
// the candidate runs boxed (worker/candidate_sandbox.h), and the startup
// requests (load, import, build) are the same. So are the twins a timing
// starts: a second reference and a second candidate worker.
#include <unistd.h>

#include <cstdlib>

#include <fmt/format.h>

#include "core/backend.h"
#include "util/fs.h"
#include "util/sandbox.h"
#include "verify/verification.h"
#include "worker/candidate_sandbox.h"
#include "worker/python_env.h"
#include "worker/worker_process.h"

namespace kgym::verify::detail {
namespace {

namespace fs = std::filesystem;

// How long a zygote may take to accept a fork: its first one waits for
// torch to finish importing.
constexpr auto kWarmForkWait = std::chrono::seconds(60);

util::SandboxMode resolved_mode(const std::string& mode) {
  if (mode == "bwrap") return util::SandboxMode::kBwrap;
  if (mode == "unshare") return util::SandboxMode::kUnshare;
  if (mode == "none") return util::SandboxMode::kNone;
  return util::resolve_sandbox_mode(mode).value_or(util::SandboxMode::kNone);
}

}  // namespace

fs::path Verification::candidate_view(const fs::path& host) const {
  if (candidate_inside_root_.empty()) return host;
  auto relative = host.lexically_relative(candidate_host_root_);
  if (relative.empty() || *relative.begin() == "..") return host;
  return candidate_inside_root_ / relative;
}

std::vector<std::string> Verification::serve_args(Role role, const fs::path& scratch, int threads) const {
  bool candidate = is_candidate(role) && !req_.candidate_is_reference;
  return {
      "serve", "--role", candidate ? "candidate" : "reference", "--backend",
      // Without a device the candidate only builds, on the host.
      req_.stage == VerifyStage::kBuildWithoutDevice || building_ ? std::string("cpu") : std::string(backend_of(req_.config).worker_name()),
      "--threads", std::to_string(threads), "--cores", req_.device, "--scratch", scratch.string(),
      "--compile-cache", req_.config.compile_cache ? "on" : "off"};
}

std::optional<worker::WorkerProcess> Verification::fork_warm(Role role, int threads,
                                                     const std::vector<std::string>& env_overrides) {
  const worker::WarmEndpoints& warm = *req_.warm;
  auto log = req_.scratch_dir / fmt::format("{}.log", role_name(role));
  worker::Deadline deadline = std::min(deadline_, worker::Clock::now() + kWarmForkWait);
  worker::ForkRequest request;
  if (!is_candidate(role)) {
    auto dir = req_.scratch_dir / std::string(role_name(role));
    request = {serve_args(role, dir, threads), env_overrides, dir};
    auto worker = worker::WorkerProcess::fork_warm(warm.reference_socket, request, log, deadline);
    if (worker) return std::move(*worker);
    note(fmt::format("warm {} worker unavailable ({}); starting it cold", role_name(role), worker.error()));
    return std::nullopt;
  }
  auto uid = worker::candidate_uid(req_.sandbox, resolved_mode(req_.sandbox.mode));
  if (role == Role::kCandidateTwin) {
    // In the candidate's directory, which holds its sources and the state.
    std::vector<std::string> env = env_overrides;
    if (uid) env.push_back("HOME=" + candidate_inside_root_.string());
    request = {serve_args(role, candidate_inside_root_, threads), env, candidate_inside_root_};
    auto worker = worker::WorkerProcess::fork_warm(warm.candidate_socket, request, log, deadline);
    if (worker) return std::move(*worker);
    note(fmt::format("warm candidate twin unavailable ({})", worker.error()));
    return std::nullopt;
  }
  // A fresh directory under the candidate zygote's scratch root, the only
  // place the candidate may write; removed when the verification ends.
  auto dir = warm.scratch_root / fmt::format("v{}", ::getpid());
  std::error_code ec;
  fs::remove_all(dir, ec);
  auto inside = warm.scratch_inside / dir.filename();
  if (auto made = util::make_dirs(dir); !made) {
    note(fmt::format("warm candidate worker unavailable ({}); starting it cold", made.error()));
    return std::nullopt;
  }
  warm_dir_ = dir;
  if (uid && ::chown(dir.c_str(), *uid, *uid) != 0) {
    note(fmt::format("warm candidate worker unavailable (cannot hand {} to uid {}); starting it cold",
                     dir.string(), *uid));
    return std::nullopt;
  }
  std::vector<std::string> env = env_overrides;
  if (uid) env.push_back("HOME=" + inside.string());
  request = {serve_args(role, inside, threads), env, inside};
  auto worker = worker::WorkerProcess::fork_warm(warm.candidate_socket, request, log, deadline);
  if (!worker) {
    note(fmt::format("warm candidate worker unavailable ({}); starting it cold", worker.error()));
    return std::nullopt;
  }
  note(warm.candidate_box);
  candidate_host_root_ = dir;
  candidate_inside_root_ = inside;
  state_dir_ = dir;
  return std::move(*worker);
}

int Verification::worker_threads() const {
  return req_.config.threads > 0 ? req_.config.threads : core_count(req_.device);
}

std::vector<std::string> Verification::worker_env_overrides(int threads) const {
  std::string thread_count = std::to_string(threads);
  std::vector<std::string> env_overrides = worker::worker_base_env();
  for (const char* name : {"OMP_NUM_THREADS=", "MKL_NUM_THREADS=", "OPENBLAS_NUM_THREADS="})
    env_overrides.push_back(name + thread_count);
  // A host interpreter is switched on before anything is imported
  // (TRITON_INTERPRET=1); both sides get it, so that the reference runs in
  // the same process set-up as the candidate.
  for (std::string_view variable : backend_of(req_.config).worker_env) env_overrides.emplace_back(variable);
  // Kernels that take their device from a variable (PyPTO: TILE_FWK_DEVICE_ID)
  // get the leased one.
  if (!req_.device.empty() && req_.device != "all") {
    for (std::string_view variable : backend_of(req_.config).worker_device_env)
      env_overrides.push_back(std::string(variable) + "=" + req_.device);
  }
  return env_overrides;
}

worker::WorkerSpec Verification::cold_spec(Role role, int threads) const {
  auto env_overrides = worker_env_overrides(threads);
  // A candidate twin shares the candidate's directory.
  auto dir = req_.scratch_dir / std::string(role_name(is_candidate(role) ? Role::kCandidate : role));
  bool boxed = is_candidate(role) && !req_.candidate_is_reference;
  std::vector<std::string> argv{req_.python,
                                (boxed ? candidate_view(worker_script_) : worker_script_).string()};
  auto args = serve_args(role, boxed ? candidate_view(dir) : dir, threads);
  argv.insert(argv.end(), args.begin(), args.end());
  std::vector<std::string> worker_env = util::environment_with(env_overrides);
  // A bundle's problem is untrusted code: its reference runs boxed like a
  // candidate (uid 65534, no capabilities, seccomp, no network; under
  // bubblewrap it sees the scratch dir and the problem read-only and writes
  // only its own dir), docs/repro.md.
  if (!boxed && req_.untrusted_problem) {
    util::SandboxPolicy policy;
    policy.mode = resolved_mode(req_.sandbox.mode);
    if (policy.mode == util::SandboxMode::kNone) policy.mode = util::SandboxMode::kUnshare;
    policy.run_as = util::box_uid(true, policy.mode);
    policy.limits.no_core_dumps = true;
    (void)util::make_dirs(dir);
    if (policy.run_as) (void)util::hand_over(dir, *policy.run_as);
    if (policy.mode == util::SandboxMode::kBwrap) {
      policy.hidden = req_.sandbox_hidden;
      policy.read_only = {req_.scratch_dir, req_.problem.parent_path()};
      policy.writable.emplace_back(dir, fs::path());
      util::cover_unreachable(policy);
      policy.cwd = dir;
    }
    argv = util::sandboxed_argv(policy, argv);
    std::vector<std::string> boxed_env = env_overrides;
    boxed_env.push_back("HOME=" + dir.string());
    worker_env = util::environment_with(boxed_env);
  }
  if (boxed) {
    std::vector<std::string> boxed_env = env_overrides;
    boxed_env.insert(boxed_env.end(), box_.env.begin(), box_.env.end());
    worker_env = util::environment_with(boxed_env);
    argv = util::sandboxed_argv(box_.policy, argv);
  }
  return worker::WorkerSpec{
      .argv = entering_lease(role, std::move(argv)),
      .env = worker_env,
      .cwd = dir,
      .log_path = req_.scratch_dir / fmt::format("{}.log", role_name(role)),
  };
}

std::expected<void, Failure> Verification::start_workers() {
  int threads = worker_threads();
  auto env_overrides = worker_env_overrides(threads);
  state_dir_ = req_.scratch_dir / "reference";
  if (req_.warm) {
    for (const auto& line : req_.warm->notes) note(line);
    slot(Role::kReference) = fork_warm(Role::kReference, threads, env_overrides);
    if (!req_.candidate_is_reference) slot(Role::kCandidate) = fork_warm(Role::kCandidate, threads, env_overrides);
  }
  // The reference is trusted (the dataset's own code); the candidate is boxed.
  if (!req_.candidate_is_reference && !workers_.has(Role::kCandidate)) {
    if (auto boxed = make_box(); !boxed) return boxed;
  }
  if (!workers_.has(Role::kReference) || !workers_.has(Role::kCandidate)) ensure_lease_groups();
  // Both start now so their Python/torch startup overlaps.
  if (!workers_.has(Role::kReference)) {
    auto reference = worker::WorkerProcess::spawn(cold_spec(Role::kReference, threads));
    if (!reference) return std::unexpected(Failure{Verdict::kHarnessError, reference.error()});
    slot(Role::kReference).emplace(std::move(*reference));
  }
  if (!workers_.has(Role::kCandidate)) {
    auto candidate = worker::WorkerProcess::spawn(cold_spec(Role::kCandidate, threads));
    if (!candidate) return std::unexpected(Failure{Verdict::kHarnessError, candidate.error()});
    slot(Role::kCandidate).emplace(std::move(*candidate));
  }
  note(fmt::format("reference worker {}, candidate worker {}",
                   worker(Role::kReference).warm() ? "forked warm" : "spawned cold",
                   worker(Role::kCandidate).warm() ? "forked warm" : "spawned cold"));
  // The candidate imports its own copy, from where it may read.
  // A warm candidate reads from its own dir in the zygote's box; its
  // sibling sources go along so that it can import them.
  auto& candidate_file = candidate_import_;
  candidate_file = candidate_copy_;
  if (worker(Role::kCandidate).warm()) {
    candidate_file = state_dir_ / candidate_copy_.filename();
    for (const auto& file : candidate_files_) {
      if (auto copied = util::copy_regular_file(file, state_dir_ / file.filename()); !copied)
        return std::unexpected(
            Failure{Verdict::kHarnessError, "cannot use the candidate: " + copied.error()});
    }
  }
  if (!req_.candidate_is_reference) {
    if (auto taken = take_prebuilt(worker(Role::kCandidate).warm() ? state_dir_ : req_.scratch_dir); !taken) return taken;
  }
  return load_and_import(candidate_file);
}

std::expected<void, Failure> Verification::make_box() {
  auto made = worker::make_candidate_box(req_.sandbox, req_.sandbox_hidden, req_.scratch_dir);
  if (!made) return std::unexpected(Failure{Verdict::kHarnessError, made.error()});
  box_ = std::move(*made);
  candidate_boxed_ = box_.policy.mode != util::SandboxMode::kNone;
  if (!box_.scratch_inside.empty()) {
    candidate_host_root_ = req_.scratch_dir;
    candidate_inside_root_ = box_.scratch_inside;
  }
  note(box_.description);
  return {};
}

std::expected<void, Failure> Verification::receive_import() {
  auto hello = receive(Role::kCandidate, "startup", deadline_);
  if (!hello) return std::unexpected(hello.error());
  note_hello(Role::kCandidate, *hello);
  auto import_start = worker::Clock::now();
  auto imported = receive(Role::kCandidate, "importing the candidate", deadline_);
  if (!imported) return std::unexpected(imported.error());
  double import_s = imported->header.value("import_s", seconds_since(import_start));
  note(fmt::format("candidate imported in {:.2f} s{}", import_s,
                   prebuilt_dir_.empty() ? "" : ", its extensions loaded from the build stage"));
  return {};
}

nlohmann::json Verification::load_header(const fs::path& problem,
                                         const std::map<std::string, long long>& overrides,
                                         const fs::path& state_out) const {
  return {{"op", "load"},
          {"problem", problem.string()},
          {"overrides", overrides},
          {"seed", derive_seed(req_.run_seed, 0)},
          {"precision", req_.precision},
          {"state_out", state_out.string()}};
}

std::expected<void, Failure> Verification::load_and_import(const fs::path& candidate_file) {
  auto state = model_state(state_dir_ / "state.pt");
  state_file_ = state;
  worker::Message load;
  load.header = load_header(req_.problem, overrides_, state);
  worker::Message import;
  import.header = import_header(candidate_file);
  if (req_.candidate_is_reference) {
    import.header =
        load_header(candidate_file, overrides_, model_state(req_.scratch_dir / "candidate" / "state.pt"));
  }
  if (req_.solve_sizes) {
    load.header["size"] = {{"max_bytes", req_.solve_sizes->max_bytes},
                           {"max_forward_ms", req_.solve_sizes->max_forward_ms}};
  }
  // Queue both requests before waiting: the candidate compiles while the
  // reference builds its model. When the reference first solves the sizes,
  // an A/A candidate (which loads the problem itself) waits for them.
  bool candidate_waits = req_.solve_sizes && req_.candidate_is_reference;
  if (auto sent = worker(Role::kReference).send(load, deadline_); !sent)
    return std::unexpected(channel_failure(Role::kReference, sent.error(), "startup", true));
  if (!candidate_waits) {
    if (auto sent = worker(Role::kCandidate).send(import, deadline_); !sent)
      return std::unexpected(channel_failure(Role::kCandidate, sent.error(), "startup", true));
  }
  auto hello_ref = receive(Role::kReference, "startup", deadline_);
  if (!hello_ref) return std::unexpected(hello_ref.error());
  note_hello(Role::kReference, *hello_ref);
  auto load_start = worker::Clock::now();
  auto loaded = receive(Role::kReference, "loading the problem", deadline_);
  if (!loaded) return std::unexpected(loaded.error());
  result_.timings.load_s = loaded->header.value("load_s", seconds_since(load_start));
  constants_ = loaded->header.value("constants", nlohmann::json::object());
  declared_cases_ = loaded->header.value("cases", nlohmann::json::array());
  size_keys_ = loaded->header.value("size_keys", nlohmann::json(nullptr));
  if (auto sizes = loaded->header.find("sizes"); sizes != loaded->header.end() && sizes->is_object()) {
    ProblemSizes solved = problem_sizes_from_json(*sizes);
    for (const auto& [name, value] : solved.sizes) overrides_.emplace(name, value);
    note(fmt::format("problem {}", describe_sizes(solved)));
    result_.problem = std::move(solved);
  }
  note("reference loaded");
  if (candidate_waits) {
    import.header["overrides"] = overrides_;
    if (auto sent = worker(Role::kCandidate).send(import, deadline_); !sent)
      return std::unexpected(channel_failure(Role::kCandidate, sent.error(), "startup", true));
  }
  if (auto imported = receive_import(); !imported) return imported;

  if (req_.candidate_is_reference) return {};  // built by its own load
  worker::Message build;
  build.header = {{"op", "build"}, {"state", candidate_view(state).string()}};
  auto built = call(Role::kCandidate, build, "building ModelNew", false);
  if (!built) return std::unexpected(built.error());
  note(fmt::format("ModelNew built; {} of {} reference state entries loaded",
                   built->header.value("loaded", 0), built->header.value("reference_entries", 0)));
  return {};
}

std::expected<void, Failure> Verification::start_twins() {
  int threads = worker_threads();
  auto env_overrides = worker_env_overrides(threads);
  auto twin_dir = req_.scratch_dir / std::string(role_name(Role::kTwin));
  if (auto made = util::make_dirs(twin_dir); !made)
    return std::unexpected(Failure{Verdict::kHarnessError, made.error()});
  if (req_.warm) slot(Role::kTwin) = fork_warm(Role::kTwin, threads, env_overrides);
  // A candidate forked warm has its files in the zygote's box: its twin
  // must come from there too.
  if (worker(Role::kCandidate).warm()) {
    slot(Role::kCandidateTwin) = fork_warm(Role::kCandidateTwin, threads, env_overrides);
    if (!workers_.has(Role::kCandidateTwin))
      return std::unexpected(Failure{Verdict::kHarnessError, "cannot fork the candidate's twin for timing"});
  }
  for (Role role : {Role::kTwin, Role::kCandidateTwin}) {
    if (slot(role)) continue;
    ensure_lease_groups();
    auto spawned = worker::WorkerProcess::spawn(cold_spec(role, threads));
    if (!spawned) return std::unexpected(Failure{Verdict::kHarnessError, spawned.error()});
    slot(role).emplace(std::move(*spawned));
  }
  // The reference's own load (seed, overrides), so the twin holds the same
  // model and weights; its state goes to its own dir.
  worker::Message load;
  load.header = load_header(req_.problem, overrides_, model_state(twin_dir / "state.pt"));
  worker::Message import;
  import.header = import_header(candidate_import_);
  if (req_.candidate_is_reference) {
    import.header = load.header;
    import.header["problem"] = candidate_import_.string();
    import.header["state_out"] = model_state(req_.scratch_dir / "candidate" / "state_twin.pt").string();
  }
  constexpr std::string_view kStarting = "starting the twins for timing";
  if (auto sent = worker(Role::kTwin).send(load, deadline_); !sent)
    return std::unexpected(channel_failure(Role::kTwin, sent.error(), kStarting, true));
  if (auto sent = worker(Role::kCandidateTwin).send(import, deadline_); !sent)
    return std::unexpected(channel_failure(Role::kCandidateTwin, sent.error(), kStarting, true));
  for (Role role : {Role::kTwin, Role::kCandidateTwin}) {
    auto hello = receive(role, kStarting, deadline_);
    if (!hello) return std::unexpected(hello.error());
    note_hello(role, *hello);
    auto ready = receive(role, kStarting, deadline_);
    if (!ready) return std::unexpected(ready.error());
  }
  if (!req_.candidate_is_reference) {
    worker::Message build;
    build.header = {{"op", "build"}, {"state", candidate_view(state_file_).string()}};
    auto built = call(Role::kCandidateTwin, build, "building the candidate twin's ModelNew", false);
    if (!built) return std::unexpected(built.error());
  }
  note(fmt::format("twins ready for timing: reference twin {}, candidate twin {}",
                   worker(Role::kTwin).warm() ? "forked warm" : "spawned cold",
                   worker(Role::kCandidateTwin).warm() ? "forked warm" : "spawned cold"));
  return {};
}

}  // namespace kgym::verify::detail
