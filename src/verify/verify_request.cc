// JSON form of VerifyRequest: the scheduler writes it to a file and runs
// `kgym verify --request FILE` as a child process.
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/config_record.h"
#include "verify/verifier.h"

namespace kgym::verify {
namespace {

using nlohmann::json;

json sandbox_json(const SandboxConfig& s, const std::vector<std::filesystem::path>& hidden) {
  std::vector<std::string> hidden_paths;
  for (const auto& dir : hidden) hidden_paths.push_back(dir.string());
  return {{"mode", s.mode},           {"address_space_mb", s.address_space_mb},
          {"cpu_sec", s.cpu_sec},     {"file_size_mb", s.file_size_mb},
          {"processes", s.processes}, {"drop_privileges", s.drop_privileges},
          {"hidden", hidden_paths}};
}

void sandbox_from(const json& j, VerifyRequest& r) {
  SandboxConfig& s = r.sandbox;
  s.mode = j.value("mode", s.mode);
  s.address_space_mb = j.value("address_space_mb", s.address_space_mb);
  s.cpu_sec = j.value("cpu_sec", s.cpu_sec);
  s.file_size_mb = j.value("file_size_mb", s.file_size_mb);
  s.processes = j.value("processes", s.processes);
  s.drop_privileges = j.value("drop_privileges", s.drop_privileges);
  for (const auto& dir : j.value("hidden", std::vector<std::string>{})) r.sandbox_hidden.emplace_back(dir);
}

json warm_json(const worker::WarmEndpoints& w) {
  return {{"reference_socket", w.reference_socket.string()},
          {"candidate_socket", w.candidate_socket.string()},
          {"scratch_root", w.scratch_root.string()},
          {"scratch_inside", w.scratch_inside.string()},
          {"candidate_box", w.candidate_box},
          {"notes", w.notes},
          {"reference_cpu_usage", w.reference_cpu_usage.string()},
          {"candidate_cpu_usage", w.candidate_cpu_usage.string()},
          {"candidate_zygote_pid", w.candidate_zygote_pid},
          {"reference_zygote_pid", w.reference_zygote_pid}};
}

worker::WarmEndpoints warm_from(const json& j) {
  return {.reference_socket = j.at("reference_socket").get<std::string>(),
          .candidate_socket = j.at("candidate_socket").get<std::string>(),
          .scratch_root = j.at("scratch_root").get<std::string>(),
          .scratch_inside = j.at("scratch_inside").get<std::string>(),
          .candidate_box = j.value("candidate_box", ""),
          .notes = j.value("notes", std::vector<std::string>{}),
          .reference_cpu_usage = j.value("reference_cpu_usage", ""),
          .candidate_cpu_usage = j.value("candidate_cpu_usage", ""),
          .candidate_zygote_pid = j.value("candidate_zygote_pid", 0),
          .reference_zygote_pid = j.value("reference_zygote_pid", 0)};
}

}  // namespace

nlohmann::json to_json(const VerifyRequest& r) {
  json j = {
      {"case_id", r.case_id},
      {"problem", r.problem.string()},
      {"candidate", r.candidate.string()},
      {"scratch_dir", r.scratch_dir.string()},
      {"python", r.python},
      {"config", verifier_record(r.config)},
      {"overrides", r.overrides},
      {"candidate_is_reference", r.candidate_is_reference},
      {"precision", r.precision},
      {"sizes", r.sizes ? to_json(*r.sizes) : json(nullptr)},
      {"solve_sizes", r.solve_sizes ? json{{"max_bytes", r.solve_sizes->max_bytes},
                                           {"max_forward_ms", r.solve_sizes->max_forward_ms}}
                                    : json(nullptr)},
      {"device", r.device},
      {"run_seed", r.run_seed},
      {"sandbox", sandbox_json(r.sandbox, r.sandbox_hidden)},
  };
  if (r.warm) j["warm"] = warm_json(*r.warm);
  // kBuildWithoutDevice is `kgym verify`'s own finding, never written.
  if (r.stage == VerifyStage::kBuild) j["stage"] = "build";
  if (r.stage == VerifyStage::kVerifyPrebuilt) {
    j["stage"] = "verify_prebuilt";
    j["prebuilt"] = r.prebuilt.string();
  }
  if (r.pch_root) j["pch_root"] = r.pch_root->string();
  if (r.pch_dir) j["pch_dir"] = r.pch_dir->string();
  if (r.init_inputs) j["init_inputs"] = *r.init_inputs;
  if (r.self_check) j["self_check"] = true;
  return j;
}

VerifyRequest verify_request_from_json(const nlohmann::json& j) {
  VerifyRequest r;
  r.case_id = j.value("case_id", "");
  r.problem = j.at("problem").get<std::string>();
  r.candidate = j.at("candidate").get<std::string>();
  r.scratch_dir = j.value("scratch_dir", "");
  r.python = j.value("python", "");
  if (auto it = j.find("config"); it != j.end()) r.config = verifier_from_record(*it);
  r.overrides = j.value("overrides", std::map<std::string, long long>{});
  r.candidate_is_reference = j.value("candidate_is_reference", false);
  r.precision = j.value("precision", "as_written");
  if (auto it = j.find("sizes"); it != j.end() && it->is_object()) r.sizes = problem_sizes_from_json(*it);
  if (auto it = j.find("solve_sizes"); it != j.end() && it->is_object()) {
    r.solve_sizes = ProblemSize{.kind = ProblemSize::Kind::kAuto,
                                .max_bytes = it->value("max_bytes", ProblemSize{}.max_bytes),
                                .max_forward_ms = it->value("max_forward_ms", ProblemSize{}.max_forward_ms)};
  }
  r.device = j.value("device", r.device);
  r.run_seed = j.value("run_seed", std::uint64_t{0});
  if (auto it = j.find("sandbox"); it != j.end()) sandbox_from(*it, r);
  if (auto it = j.find("warm"); it != j.end() && !it->is_null()) r.warm = warm_from(*it);
  std::string stage = j.value("stage", "");
  if (stage == "build") {
    r.stage = VerifyStage::kBuild;
  } else if (auto it = j.find("prebuilt"); it != j.end() && it->is_string()) {
    r.stage = VerifyStage::kVerifyPrebuilt;
    r.prebuilt = it->get<std::string>();
  } else if (!stage.empty() && stage != "build_then_verify") {
    throw nlohmann::json::other_error::create(
        501, fmt::format("request \"stage\": {} (build, verify_prebuilt with \"prebuilt\", or none)", stage),
        &j);
  }
  if (auto it = j.find("pch_root"); it != j.end() && it->is_string()) r.pch_root = it->get<std::string>();
  if (auto it = j.find("pch_dir"); it != j.end() && it->is_string()) r.pch_dir = it->get<std::string>();
  if (auto it = j.find("init_inputs"); it != j.end() && it->is_array()) r.init_inputs = *it;
  r.self_check = j.value("self_check", false);
  return r;
}

}  // namespace kgym::verify
