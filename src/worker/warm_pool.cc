#include "worker/warm_pool.h"

#include <sys/stat.h>

#include <fmt/format.h>

#include "core/backend.h"
#include "util/fs.h"
#include "util/spawn.h"
#include "worker/candidate_sandbox.h"
#include "worker/probe.h"
#include "worker/python_env.h"

namespace kgym::worker {
namespace {

namespace fs = std::filesystem;

std::string_view role_of(bool candidate) { return candidate ? "candidate" : "reference"; }

}  // namespace

bool warm_workers_enabled(const VerifierConfig& config) {
  return config.warm_workers == "on" ||
         (config.warm_workers == "auto" && backend_of(config).forks_workers);
}

std::expected<std::unique_ptr<WarmPool>, std::string> WarmPool::create(WarmPoolOptions options) {
  std::unique_ptr<WarmPool> pool(new WarmPool(std::move(options)));
  if (pool->root_.path().empty()) return std::unexpected(std::string("cannot make a temporary directory"));
  // The unprivileged candidate uid must reach the worker script and its
  // scratch dirs below the (0700) root; the sockets stay in 0700 dirs.
  ::chmod(pool->root_.path().c_str(), 0711);
  fs::path worker = pool->root_.path() / "worker" / "kgym_worker.py";
  if (auto made = util::make_dirs(worker.parent_path()); !made) return std::unexpected(made.error());
  if (auto written = write_worker_script(worker); !written) return std::unexpected(written.error());
  return pool;
}

std::expected<void, std::string> WarmPool::ensure(std::size_t device, bool candidate,
                                                  std::vector<std::string>& notes) {
  Device& d = devices_[device];
  std::optional<Zygote>& zygote = candidate ? d.candidate : d.reference;
  if (zygote && zygote->alive()) return {};
  if (zygote) {
    notes.push_back(fmt::format("the warm {} worker parent of this device had ended ({}); started a new one",
                                role_of(candidate),
                                zygote->exit() ? zygote->exit()->describe() : "unknown status"));
    zygote.reset();
  }
  fs::path dir = root_.path() / std::to_string(device);
  fs::path sockets = dir / "sockets";
  fs::path scratch = dir / "scratch";
  fs::path worker_dir = root_.path() / "worker";
  for (const fs::path& made : {dir, sockets, scratch}) {
    if (auto ok = util::make_dirs(made); !ok) return std::unexpected(ok.error());
  }
  ::chmod(dir.c_str(), 0711);
  ::chmod(sockets.c_str(), 0700);
  std::vector<std::string> env_overrides = worker_base_env();
  std::vector<std::string> argv{options_.python, (worker_dir / "kgym_worker.py").string(), "zygote", "--role",
                                std::string(role_of(candidate))};
  if (candidate) {
    // A new candidate zygote starts from an empty scratch root.
    std::error_code ec;
    for (const auto& entry : fs::directory_iterator(scratch, ec)) fs::remove_all(entry.path(), ec);
    auto box = make_warm_candidate_box(options_.sandbox, options_.sandbox_mode, options_.hidden, scratch,
                                       worker_dir);
    if (!box) return std::unexpected(box.error());
    d.scratch_inside = box->scratch_inside.empty() ? scratch : box->scratch_inside;
    d.candidate_box = box->description;
    if (!box->worker_inside.empty()) argv[1] = (box->worker_inside / "kgym_worker.py").string();
    argv.insert(argv.end(), {"--sandbox", std::string(util::to_string(box->policy.mode))});
    env_overrides.insert(env_overrides.end(), box->env.begin(), box->env.end());
    argv = util::sandboxed_argv(box->policy, argv);
  }
  argv = entering_lease(device, candidate, std::move(argv), notes);
  auto started = Zygote::start(
      argv, util::environment_with(env_overrides), sockets / fmt::format("{}.sock", role_of(candidate)),
      options_.log_dir / fmt::format("zygote-{}-{}.log", device, role_of(candidate)));
  if (!started) return std::unexpected(started.error());
  zygote.emplace(std::move(*started));
  return {};
}

std::vector<std::string> WarmPool::entering_lease(std::size_t device, bool candidate,
                                                  std::vector<std::string> argv,
                                                  std::vector<std::string>& notes) {
  if (!backend_named(options_.backend).devices_are_cores) return argv;
  Device& d = devices_[device];
  std::optional<util::CpuCgroup>& group = candidate ? d.candidate_group : d.reference_group;
  if (!group) {
    std::string cores = device < options_.devices.size() ? options_.devices[device] : "all";
    auto mounts = util::usable_cgroup_mounts();
    std::expected<util::CpuCgroup, std::string> made = std::unexpected(mounts ? "" : mounts.error());
    if (mounts)
      made = util::CpuCgroup::create(*mounts, fmt::format("warm{}-{}", device, role_of(candidate)), cores);
    if (!made) {
      notes.push_back(fmt::format("lease: the warm {} worker parent runs without a cgroup ({})",
                                  role_of(candidate), made.error()));
      return argv;
    }
    group.emplace(std::move(*made));
  }
  return group->entering(argv);
}

std::expected<WarmEndpoints, std::string> WarmPool::endpoints(std::size_t device) {
  WarmEndpoints endpoints;
  for (bool candidate : {false, true}) {
    if (auto ok = ensure(device, candidate, endpoints.notes); !ok) {
      return std::unexpected(
          fmt::format("cannot start the warm {} worker parent: {}", role_of(candidate), ok.error()));
    }
  }
  const Device& d = devices_.at(device);
  endpoints.reference_socket = d.reference->socket_path();
  endpoints.candidate_socket = d.candidate->socket_path();
  endpoints.scratch_root = root_.path() / std::to_string(device) / "scratch";
  endpoints.scratch_inside = d.scratch_inside;
  endpoints.candidate_box = d.candidate_box;
  if (d.reference_group) endpoints.reference_cpu_usage = d.reference_group->usage_file();
  if (d.candidate_group) endpoints.candidate_cpu_usage = d.candidate_group->usage_file();
  endpoints.candidate_zygote_pid = d.candidate->pid();
  endpoints.reference_zygote_pid = d.reference->pid();
  return endpoints;
}

std::expected<fs::path, std::string> WarmPool::reference_socket(std::size_t device) {
  std::vector<std::string> notes;  // a restart is noted by the next verification
  if (auto ok = ensure(device, false, notes); !ok) return std::unexpected(ok.error());
  return devices_.at(device).reference->socket_path();
}

}  // namespace kgym::worker
