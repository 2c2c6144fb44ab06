// What `kgym verify --bundle` takes from a bundle's request.json
// (docs/repro.md "What a bundle may ask for"): an allow-list. The request
// is built fresh from the verifier's own (kgym's defaults or --config) and
// only the case's data is copied in; every other field of the file is
// ignored, and a `repro: note:` names each one that asked for something else.
#include <algorithm>
#include <array>
#include <set>

#include <fmt/format.h>

#include "core/backend.h"
#include "verify/repro_bundle.h"

namespace kgym::verify {
namespace {

using nlohmann::json;

constexpr std::array<std::string_view, 4> kPrecisions = {"as_written", "float32", "float16", "bfloat16"};
constexpr std::array<std::string_view, 2> kModes = {"correctness", "performance"};

// The keys read from request.json; "config" only for these of its keys.
const std::set<std::string>& read_keys() {
  static const std::set<std::string> keys = {"case_id",   "problem", "candidate", "run_seed",
                                             "overrides", "sizes",   "precision", "config"};
  return keys;
}
const std::set<std::string>& read_config_keys() {
  static const std::set<std::string> keys = {"backend", "execution", "mode"};
  return keys;
}
// Keys that only ever described the machine that wrote the request (and
// `sandbox`, noted key by key, and `device`, which open_bundle notes);
// they are dropped without a note (docs/repro.md). `init_inputs` is
// probed again.
const std::set<std::string>& machine_keys() {
  static const std::set<std::string> keys = {"scratch_dir", "python",      "prebuilt", "pch_root", "pch_dir",
                                             "warm",        "init_inputs", "sandbox",  "device"};
  return keys;
}

bool is_identifier(const std::string& name) {
  if (name.empty() || std::isdigit(static_cast<unsigned char>(name[0]))) return false;
  return std::ranges::all_of(name,
                             [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; });
}

std::string shown(const json& value) {
  std::string text = value.dump(-1, ' ', false, json::error_handler_t::replace);
  return text.size() > 80 ? text.substr(0, 77) + "..." : text;
}

// A note per ignored key whose value differs from the one used.
void note_ignored(const json& recorded, const json& used, const std::string& prefix,
                  const std::set<std::string>& read, std::vector<std::string>& notes) {
  for (const auto& [key, value] : recorded.items()) {
    if (read.contains(key) || (prefix.empty() && machine_keys().contains(key))) continue;
    if (prefix == "config." && key == "python") continue;
    // A run's verification loads its build stage's output: that is how the
    // machine ran it, not what it checked.
    if (prefix.empty() && key == "stage" && value == "verify_prebuilt") continue;
    if (prefix == "sandbox." && key == "hidden") continue;
    auto it = used.find(key);
    json effective = it == used.end() ? json(nullptr) : *it;
    if (value == effective) continue;
    notes.push_back(fmt::format("request.json's {}{} {} is ignored; this verification uses {}", prefix, key,
                                shown(value), shown(effective)));
  }
}

std::string string_at(const json& j, const char* key, const std::string& fallback) {
  auto it = j.find(key);
  if (it == j.end()) return fallback;
  if (!it->is_string()) throw json::type_error::create(302, fmt::format("'{}' is not a string", key), &j);
  return it->get<std::string>();
}

}  // namespace

std::expected<VerifyRequest, std::string> bundle_request(const json& recorded, const VerifyRequest& base,
                                                         std::vector<std::string>& notes) {
  if (!recorded.is_object()) return std::unexpected("request.json: not a JSON object");
  VerifyRequest req = base;
  // Never from a bundle, whatever the base says: these are how kgym checks.
  req.candidate_is_reference = false;
  req.self_check = false;
  req.untrusted_problem = true;  // the bundle's problem file is its code, not the dataset's
  req.static_checks = true;
  req.op_trace = true;
  req.stage = VerifyStage::kBuildThenVerify;
  req.no_device.clear();
  req.prebuilt.clear();
  req.warm.reset();
  req.solve_sizes.reset();
  req.init_inputs.reset();
  req.pch_dir.reset();
  req.scratch_dir.clear();
  req.sandbox_hidden.clear();
  try {
    req.case_id = string_at(recorded, "case_id", "");
    if (!recorded.contains("problem") || !recorded.contains("candidate"))
      return std::unexpected("request.json: no \"problem\" or no \"candidate\"");
    req.problem = string_at(recorded, "problem", "");
    req.candidate = string_at(recorded, "candidate", "");
    req.run_seed = recorded.value("run_seed", std::uint64_t{0});
    req.overrides = recorded.value("overrides", std::map<std::string, long long>{});
    for (const auto& [name, value] : req.overrides) {
      if (!is_identifier(name))
        return std::unexpected(fmt::format("request.json: overrides: '{}' is not a Python name", name));
    }
    if (auto it = recorded.find("sizes"); it != recorded.end() && it->is_object())
      req.sizes = problem_sizes_from_json(*it);
    req.precision = string_at(recorded, "precision", "as_written");
    if (std::ranges::find(kPrecisions, req.precision) == kPrecisions.end())
      return std::unexpected(
          fmt::format("request.json: precision '{}' is not one of as_written, float32, "
                      "float16, bfloat16",
                      req.precision));
    json config = recorded.value("config", json::object());
    if (!config.is_object()) return std::unexpected("request.json: config is not an object");
    req.config.backend = string_at(config, "backend", req.config.backend);
    req.config.execution = string_at(config, "execution", req.config.execution);
    req.config.execution_auto = false;
    req.config.mode = string_at(config, "mode", req.config.mode);
  } catch (const json::exception& e) {
    return std::unexpected(fmt::format("request.json: {}", e.what()));
  }
  if (!find_backend(req.config.backend, req.config.execution))
    return std::unexpected(fmt::format("request.json: backend '{}' with execution '{}' is not one kgym has",
                                       req.config.backend, req.config.execution));
  if (std::ranges::find(kModes, req.config.mode) == kModes.end())
    return std::unexpected(
        fmt::format("request.json: mode '{}' is not correctness or performance", req.config.mode));

  json used = to_json(req);
  note_ignored(recorded, used, "", read_keys(), notes);
  if (auto it = recorded.find("config"); it != recorded.end() && it->is_object())
    note_ignored(*it, used["config"], "config.", read_config_keys(), notes);
  if (auto it = recorded.find("sandbox"); it != recorded.end() && it->is_object())
    note_ignored(*it, used["sandbox"], "sandbox.", {}, notes);
  return req;
}

}  // namespace kgym::verify
