// The build stage (docs/build.md): the candidate imported once in its box,
// with no device and no lease, every extension it builds kept with a
// manifest in scratch_dir/prebuilt; and, at verification, that directory
// handed to the candidate workers, which load from it and never build.
// The precompiled header of torch's extension headers is made here, by
// the trusted side, before the candidate's build includes it.
#include <cstdlib>
#include <regex>
#include <thread>

#include <fmt/format.h>

#include "util/file_lock.h"
#include "util/fs.h"
#include "verify/verification.h"
#include "worker/candidate_sandbox.h"
#include "worker/compile_cache.h"
#include "worker/probe.h"
#include "worker/python_env.h"

namespace kgym::verify::detail {
namespace {

namespace fs = std::filesystem;

constexpr std::string_view kPrebuilt = "prebuilt";
constexpr std::string_view kDefaultCudaArch = "TORCH_CUDA_ARCH_LIST=9.0";
const fs::path kPchInside = "/tmp/kgym-pch";

// Waits for the lock until `deadline` (another build may be making the
// header the first time).
std::expected<util::FileLock, std::string> lock_until(const fs::path& path, worker::Deadline deadline) {
  for (;;) {
    auto lock = util::FileLock::acquire(path);
    if (lock || worker::Clock::now() >= deadline) return lock;
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
}

// Whether a build's manifest names an extension built without the header.
bool lacks_header(const fs::path& manifest) {
  auto text = util::read_file(manifest);
  if (!text) return false;
  auto j = nlohmann::json::parse(*text, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return false;
  for (const auto& entry : j.value("extensions", nlohmann::json::array())) {
    if (entry.is_object() && !entry.value("pch", true)) return true;
  }
  return false;
}

}  // namespace

std::expected<void, Failure> Verification::build_stage() {
  auto init_inputs = init_inputs_for_builds();
  if (auto boxed = make_box(); !boxed) return boxed;
  if (reuse_cached_build(init_inputs)) return {};
  fs::path out = req_.scratch_dir / "candidate" / std::string(kPrebuilt);
  nlohmann::json pch_inside = nullptr;
  std::optional<fs::path> pch = req_.pch_dir;
  if (!pch && req_.pch_root) {
    auto found = precompiled_headers(req_.python, worker_script_, *req_.pch_root, {}, deadline_);
    if (found) pch = found->dir;
    if (!found) note(fmt::format("no precompiled header: {}", found.error()));
  }
  if (pch) {
    // The box sees the header read-only at a fixed place; without bwrap the
    // candidate's uid must reach it where it is, which a dropped uid may not.
    if (box_.policy.mode == util::SandboxMode::kBwrap) {
      box_.policy.read_only_at.emplace_back(*pch, kPchInside);
      pch_inside = kPchInside.string();
    } else if (!box_.policy.run_as) {
      pch_inside = pch->string();
    }
  }
  building_ = true;
  worker::WorkerSpec spec = cold_spec(Role::kCandidate, 1);
  building_ = false;
  // nvcc builds for the architectures torch names, or, with no device to
  // ask, for the one kgym's CUDA machines have (sm_90) unless the
  // environment chose.
  if (!std::getenv("TORCH_CUDA_ARCH_LIST")) spec.env.push_back(std::string(kDefaultCudaArch));
  auto candidate = worker::WorkerProcess::spawn(spec);
  if (!candidate) return std::unexpected(Failure{Verdict::kHarnessError, candidate.error()});
  slot(Role::kCandidate).emplace(std::move(*candidate));
  note(fmt::format("build stage: candidate worker spawned cold, no device{}",
                   pch_inside.is_null() ? "" : ", with the precompiled headers"));
  worker::Message import;
  import.header = {{"op", "import"},
                   {"candidate", candidate_view(candidate_copy_).string()},
                   {"builds", {{"mode", "build"}, {"dir", candidate_view(out).string()}, {"pch", pch_inside}}}};
  if (init_inputs) import.header["init_inputs"] = *init_inputs;
  if (auto sent = worker(Role::kCandidate).send(import, deadline_); !sent)
    return std::unexpected(channel_failure(Role::kCandidate, sent.error(), "building", true));
  auto hello = receive(Role::kCandidate, "starting the build", deadline_);
  if (!hello) return std::unexpected(hello.error());
  auto compile_start = worker::Clock::now();
  auto imported = receive(Role::kCandidate, "building the candidate", deadline_);
  if (!imported) return std::unexpected(imported.error());
  result_.timings.compile_s = imported->header.value("import_s", seconds_since(compile_start));
  note(fmt::format("build stage: candidate imported in {:.2f} s, {} extension(s) built",
                   *result_.timings.compile_s, imported->header.value("extensions", 0)));
  worker(Role::kCandidate).shutdown(worker::Clock::now() + std::chrono::seconds(5));
  slot(Role::kCandidate).reset();
  // Out of the directory the candidate may write, before anything loads it.
  fs::path kept = req_.scratch_dir / std::string(kPrebuilt);
  std::error_code ec;
  fs::remove_all(kept, ec);
  fs::rename(out, kept, ec);
  if (ec)
    return std::unexpected(Failure{Verdict::kHarnessError,
                                   fmt::format("cannot keep the build in {}: {}", kept.string(), ec.message())});
  prebuilt_dir_ = kept;
  keep_cached_build(kept);
  // Variants of the header for the flags this candidate used, for the
  // builds after it (compiled here, outside the box, from allowed flags only).
  if (req_.pch_root && lacks_header(kept / "manifest.json")) {
    auto made = precompiled_headers(req_.python, worker_script_, *req_.pch_root, kept / "manifest.json", deadline_);
    if (!made) note(fmt::format("no precompiled header made: {}", made.error()));
    for (const auto& cflags : made ? made->built : std::vector<std::string>{})
      note(fmt::format("precompiled torch/extension.h for the flags {} ({:.1f} s), for the builds after this one",
                       cflags, made->built_s));
  }
  return {};
}

bool Verification::reuse_cached_build(const std::optional<nlohmann::json>& init_inputs) {
  if (!req_.config.compile_cache) return false;
  // A box that runs as kgym's uid on kgym's filesystem could write the cache itself.
  if (box_.policy.mode != util::SandboxMode::kBwrap && !box_.policy.run_as) {
    note("compile caches: not used (the candidate's box could write them: no bubblewrap, kgym's own uid)");
    return false;
  }
  auto start = worker::Clock::now();
  worker::BuildInputs inputs{.candidate_dir = req_.scratch_dir / "candidate",
                     .candidate = candidate_copy_.filename().string(),
                     .python = req_.python,
                     .backend = req_.config.backend,
                     .execution = req_.config.execution,
                     .init_inputs = init_inputs.value_or(nullptr),
                     .env = {}};
  if (!std::getenv("TORCH_CUDA_ARCH_LIST")) inputs.env.emplace_back(kDefaultCudaArch);
  auto key = worker::build_key(inputs, deadline_);
  if (!key) {
    note(fmt::format("compile caches: not used ({})", key.error()));
    return false;
  }
  build_key_ = *key;
  fs::path kept = req_.scratch_dir / std::string(kPrebuilt);
  if (worker::restore_build(worker::build_cache_root(), build_key_, kept)) {
    prebuilt_dir_ = kept;
    result_.timings.compile_s = seconds_since(start);
    note(fmt::format("build stage: the build of these sources (key {}) taken from the compile cache in "
                     "{:.2f} s; nothing imported, nothing compiled",
                     build_key_.substr(0, 16), *result_.timings.compile_s));
    return true;
  }
  auto ccache = worker::keyed_ccache_dir(worker::ccache_cache_root(), build_key_);
  bool given = ccache && worker::give_box_ccache(box_, ccache->path());
  if (given) ccache_ = std::move(*ccache);
  note(fmt::format("build stage: key {} not in the compile cache; {}", build_key_.substr(0, 16),
                   given    ? "ccache in this key's own directory"
                   : ccache ? "no ccache (bubblewrap only)"
                            : fmt::format("no ccache ({})", ccache.error())));
  return false;
}

void Verification::keep_cached_build(const fs::path& kept) {
  if (build_key_.empty()) return;
  if (auto stored = worker::store_build(worker::build_cache_root(), build_key_, kept); !stored)
    note(fmt::format("build stage: not kept in the compile cache: {}", stored.error()));
  // The build cache holds what the key's ccache would give a later build;
  // a build of the same key still running keeps the directory.
  ccache_.reset();
  worker::remove_ccache_dir(worker::ccache_cache_root(), build_key_);
}

std::expected<void, Failure> Verification::take_prebuilt(const fs::path& into) {
  fs::path to = into / std::string(kPrebuilt);
  fs::path from = req_.stage == VerifyStage::kVerifyPrebuilt ? req_.prebuilt : prebuilt_dir_;
  if (from.empty()) return {};
  if (fs::absolute(from).lexically_normal() == fs::absolute(to).lexically_normal()) {
    prebuilt_dir_ = to;
    return {};
  }
  if (auto copied = worker::copy_build_dir(from, to); !copied)
    return std::unexpected(
        Failure{Verdict::kHarnessError, fmt::format("cannot use the build stage's output: {}", copied.error())});
  prebuilt_dir_ = to;
  return {};
}

// Whether a source may build outside its module level: a build call on an
// indented line (in a function or a class).
static bool builds_below_module_level(const std::vector<fs::path>& files) {
  static const std::regex indented_build(R"(^[ \t]+.*\b(load_inline|load|cpp_extension)\b)",
                                         std::regex::multiline);
  for (const auto& file : files) {
    auto text = util::read_file(file);
    if (text && std::regex_search(*text, indented_build)) return true;
  }
  return false;
}

std::optional<nlohmann::json> Verification::init_inputs_for_builds() {
  if (req_.init_inputs) return req_.init_inputs;
  if (!builds_below_module_level(candidate_files_)) return std::nullopt;
  // The trusted probe (the problem alone, outside the box) says them.
  worker::ProbeRequest probe{req_.python, req_.problem, req_.overrides, derive_seed(req_.run_seed, 0), 1};
  probe.size = req_.solve_sizes;
  probe.precision = req_.precision;
  fs::path out = req_.scratch_dir / "build_probe.json";
  auto run = worker::run_captured(worker::probe_command(probe, worker_script_, out), deadline_);
  std::expected<worker::ProbeResult, std::string> probed = std::unexpected(std::string("the probe did not run"));
  if (run) probed = worker::read_probe(out);
  if (!probed || !probed->init_values) {
    note("build stage: no init inputs for ModelNew (the probe gave none); only the import builds");
    return std::nullopt;
  }
  return probed->init_values;
}

nlohmann::json Verification::import_header(const fs::path& candidate_file) const {
  nlohmann::json header = {{"op", "import"}, {"candidate", candidate_view(candidate_file).string()}};
  if (!prebuilt_dir_.empty())
    header["builds"] = {{"mode", "prebuilt"}, {"dir", candidate_view(prebuilt_dir_).string()}};
  return header;
}

}  // namespace kgym::verify::detail

namespace kgym::verify {

namespace fs = std::filesystem;

std::expected<PrecompiledHeaders, std::string> precompiled_headers(const std::string& python,
                                                                   const fs::path& worker_script,
                                                                   const fs::path& root, const fs::path& wanted,
                                                                   worker::Deadline deadline) {
  if (auto made = util::make_dirs(root); !made) return std::unexpected(made.error());
  auto lock = detail::lock_until(root / "lock", deadline);
  if (!lock) return std::unexpected(lock.error());
  // Trusted: torch's own headers, compiled outside the candidate's box.
  std::vector<std::string> argv{python, worker_script.string(), "pch", "--root", root.string()};
  if (!wanted.empty()) argv.insert(argv.end(), {"--wanted", wanted.string()});
  auto run = worker::run_captured(argv, deadline);
  if (!run) return std::unexpected(run.error());
  if (run->exit.signaled || run->exit.code != 0)
    return std::unexpected(fmt::format("{}: {}", run->exit.describe(), run->output));
  auto brace = run->output.find_last_of('{');
  auto reply = nlohmann::json::parse(run->output.substr(brace == std::string::npos ? 0 : brace), nullptr, false);
  if (reply.is_discarded() || !reply.contains("dir") || !reply["dir"].is_string())
    return std::unexpected("an unreadable reply: " + run->output);
  PrecompiledHeaders out{.dir = reply["dir"].get<std::string>(), .built_s = reply.value("built_s", 0.0)};
  for (const auto& cflags : reply.value("built", nlohmann::json::array())) out.built.push_back(cflags.dump());
  return out;
}

}  // namespace kgym::verify
