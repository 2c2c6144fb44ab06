#include "worker/probe.h"

#include <sys/stat.h>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "util/fs.h"
#include "worker/worker_script.h"

namespace kgym::worker {
namespace {

TensorInfo tensor_info_from(const nlohmann::json& j) {
  TensorInfo info;
  info.kind = j.value("kind", "other");
  info.dtype = j.value("dtype", "");
  info.shape = j.value("shape", std::vector<long long>{});
  info.repr = j.value("repr", "");
  return info;
}

std::vector<TensorInfo> infos_from(const nlohmann::json& j, const char* key) {
  std::vector<TensorInfo> out;
  if (auto it = j.find(key); it != j.end() && it->is_array()) {
    for (const auto& item : *it) out.push_back(tensor_info_from(item));
  }
  return out;
}

}  // namespace

std::vector<std::string> probe_command(const ProbeRequest& req, const std::filesystem::path& worker_path,
                                       const std::filesystem::path& out_json) {
  std::vector<std::string> argv = {req.python, worker_path.string()};
  std::vector<std::string> args = probe_arguments(req, out_json);
  argv.insert(argv.end(), args.begin(), args.end());
  return argv;
}

std::vector<std::string> problem_arguments(std::string_view op, const std::filesystem::path& problem,
                                           unsigned long long seed, int threads,
                                           const std::map<std::string, long long>& overrides) {
  std::vector<std::string> argv = {std::string(op),      "--problem", problem.string(),       "--seed",
                                   std::to_string(seed), "--threads", std::to_string(threads)};
  for (const auto& [name, value] : overrides) {
    argv.push_back("--override");
    argv.push_back(name + "=" + std::to_string(value));
  }
  return argv;
}

std::vector<std::string> probe_arguments(const ProbeRequest& req, const std::filesystem::path& out_json) {
  std::vector<std::string> argv =
      problem_arguments("probe", req.problem, req.seed, req.threads, req.overrides);
  if (req.size) {
    argv.insert(argv.end(), {"--size-max-bytes", std::to_string(req.size->max_bytes), "--size-max-forward-ms",
                             fmt::format("{}", req.size->max_forward_ms)});
  }
  if (req.precision != "as_written") argv.insert(argv.end(), {"--precision", req.precision});
  argv.insert(argv.end(), {"--out", out_json.string()});
  return argv;
}

std::expected<void, std::string> write_worker_script(const std::filesystem::path& path) {
  for (const WorkerFile& file : worker_files()) {
    // The entry script goes to `path`, its modules beside it.
    std::filesystem::path target =
        file.name == worker_files().front().name ? path : path.parent_path() / file.name;
    std::error_code ec;
    if (std::filesystem::exists(target, ec)) ::chmod(target.c_str(), 0644);  // replace an older copy
    if (auto written = util::write_file_atomic(target, file.source); !written) return written;
    if (::chmod(target.c_str(), 0444) != 0)
      return std::unexpected("cannot make " + target.string() + " read-only");
  }
  return {};
}

std::expected<void, std::string> check_worker_script(const std::filesystem::path& path) {
  for (const WorkerFile& file : worker_files()) {
    std::filesystem::path target =
        file.name == worker_files().front().name ? path : path.parent_path() / file.name;
    std::error_code ec;
    auto text = util::read_file(target);
    if (std::filesystem::is_symlink(target, ec) || !text || *text != file.source) {
      return std::unexpected(fmt::format(
          "{} is not the worker kgym wrote at the start of the run (changed, replaced or gone): nothing "
          "runs it; look at who can write {}",
          target.string(), target.parent_path().string()));
    }
  }
  return {};
}

std::expected<ProbeResult, std::string> read_probe(const std::filesystem::path& out_json) {
  auto text = util::read_file(out_json);
  if (!text) return std::unexpected(text.error());
  auto j = nlohmann::json::parse(*text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) return std::unexpected(out_json.string() + ": not a JSON object");
  if (auto error = j.find("error"); error != j.end()) {
    return std::unexpected(error->is_string() ? error->get<std::string>() : error->dump());
  }
  try {
    ProbeResult result;
    result.init_inputs = infos_from(j, "init_inputs");
    if (auto values = j.find("init_values"); values != j.end() && values->is_array()) result.init_values = *values;
    result.inputs = infos_from(j, "inputs");
    result.outputs = infos_from(j, "outputs");
    result.constants = j.value("constants", std::map<std::string, long long>{});
    result.parameters = j.value("parameters", std::vector<std::string>{});
    result.forward_ms = j.value("forward_ms", 0.0);
    result.torch_version = j.value("torch_version", "");
    if (auto sizes = j.find("sizes"); sizes != j.end() && sizes->is_object())
      result.sizes = problem_sizes_from_json(*sizes);
    return result;
  } catch (const nlohmann::json::exception& e) {
    return std::unexpected(out_json.string() + ": " + e.what());
  }
}

}  // namespace kgym::worker
