#include "core/run_state.h"

#include <algorithm>
#include <string_view>

#include "util/json_optional.h"
#include "util/json_text.h"

#include <fmt/format.h>

namespace kgym {
namespace {

using nlohmann::json;

using util::optional_at;
using util::optional_json;

json case_json(const CaseState& c) {
  json j = {{"id", c.id},
            {"phase", c.phase},
            {"stage", c.stage},
            {"attempt", c.attempt},
            {"failed_gates", c.failed_gates},
            {"pid", optional_json(c.pid)},
            {"device", optional_json(c.device)},
            {"started_at", optional_json(c.started_at)},
            {"phase_started_at", optional_json(c.phase_started_at)},
            {"finished_at", optional_json(c.finished_at)},
            {"verdict", optional_json(c.verdict)},
            {"speedup", optional_json(c.speedup)},
            {"reason", c.reason}};
  if (c.samples > 1) {
    j["sample"] = c.sample;
    j["samples"] = c.samples;
    j["samples_done"] = c.samples_done;
  }
  if (c.round > 1) j["round"] = c.round;
  if (c.job) j["job"] = *c.job;
  if (c.node) j["node"] = *c.node;
  return j;
}

CaseState case_from(const json& j) {
  CaseState c;
  c.id = j.at("id").get<std::string>();
  c.phase = j.value("phase", "pending");
  c.stage = j.value("stage", "");
  c.attempt = j.value("attempt", 0);
  c.round = j.value("round", 0);
  c.failed_gates = j.value("failed_gates", std::vector<std::string>{});
  c.pid = optional_at<int>(j, "pid");
  c.device = optional_at<std::string>(j, "device");
  c.started_at = optional_at<double>(j, "started_at");
  c.phase_started_at = optional_at<double>(j, "phase_started_at");
  c.finished_at = optional_at<double>(j, "finished_at");
  c.verdict = optional_at<std::string>(j, "verdict");
  c.speedup = optional_at<double>(j, "speedup");
  c.reason = j.value("reason", "");
  c.sample = j.value("sample", 0);
  c.samples = j.value("samples", 0);
  c.samples_done = j.value("samples_done", 0);
  c.job = optional_at<std::string>(j, "job");
  c.node = optional_at<std::string>(j, "node");
  return c;
}

// The document without its case rows ("cases": []).
json head_json(const RunState& s) {
  json j = {
      {"schema_version", s.schema_version},     {"run_dir", s.run_dir},       {"status", s.status},
      {"harness_pid", s.harness_pid},           {"started_at", s.started_at}, {"updated_at", s.updated_at},
      {"monitor_poll_sec", s.monitor_poll_sec}, {"devices", s.devices},       {"cases", json::array()}};
  if (s.device_holders) j["device_holders"] = *s.device_holders;
  return j;
}

// A row as dump(2) writes it at depth 2 (an element of the top-level
// "cases"): four more spaces on every line. Every '\n' of a dump is
// layout; newlines inside strings are escaped.
std::string row_text(const CaseState& c) {
  std::string text = util::json_text(case_json(c), 2);
  std::string out = "    ";
  out.reserve(text.size() + 4 * static_cast<std::size_t>(std::ranges::count(text, '\n')));
  for (char ch : text) {
    out += ch;
    if (ch == '\n') out += "    ";
  }
  return out;
}

}  // namespace

json to_json(const RunState& s) {
  json j = head_json(s);
  json& cases = j["cases"];
  for (const CaseState& c : s.cases) cases.push_back(case_json(c));
  return j;
}

std::string RunStateWriter::text(const RunState& s) {
  std::string head = util::json_text(head_json(s), 2);
  if (rows_.size() > s.cases.size()) rows_.resize(s.cases.size());
  std::size_t rows_bytes = 0;
  for (std::size_t i = 0; i < s.cases.size(); ++i) {
    if (i == rows_.size()) {
      rows_.push_back({s.cases[i], row_text(s.cases[i])});
    } else if (!(rows_[i].state == s.cases[i])) {
      rows_[i] = {s.cases[i], row_text(s.cases[i])};
    }
    rows_bytes += rows_[i].text.size() + 2;
  }
  // "cases" sorts first among the keys, but its place is found, not assumed:
  // a newline and two spaces before a quote occur only in the layout.
  static constexpr std::string_view kEmpty = "\n  \"cases\": []";
  std::size_t at = head.find(kEmpty);
  if (s.cases.empty()) return head + "\n";
  if (at == std::string::npos)
    return util::json_text(to_json(s), 2) + "\n";  // not reached: the layout has it
  std::size_t open = at + kEmpty.size() - 2;       // the "[]"
  std::string out;
  out.reserve(head.size() + rows_bytes + 16);
  out.append(head, 0, open);
  out += "[\n";
  for (std::size_t i = 0; i < rows_.size(); ++i) {
    if (i > 0) out += ",\n";
    out += rows_[i].text;
  }
  out += "\n  ]";
  out.append(head, open + 2);
  out += "\n";
  return out;
}

RunState run_state_from_json(const json& j) {
  RunState s;
  s.schema_version = j.at("schema_version").get<int>();
  // A newer harness may add fields (ignored here) but a new major layout is
  // refused rather than misread.
  if (s.schema_version > kStateSchemaVersion) {
    throw json::other_error::create(
        501,
        fmt::format("state schema_version {} is newer than this kgym understands ({})", s.schema_version,
                    kStateSchemaVersion),
        &j);
  }
  s.run_dir = j.value("run_dir", "");
  s.status = j.value("status", "running");
  s.harness_pid = j.value("harness_pid", 0);
  s.started_at = j.value("started_at", 0.0);
  s.updated_at = j.value("updated_at", 0.0);
  s.monitor_poll_sec = j.value("monitor_poll_sec", 1.0);
  s.devices = j.value("devices", std::vector<std::string>{});
  if (auto it = j.find("device_holders"); it != j.end() && it->is_object())
    s.device_holders = it->get<std::map<std::string, std::string>>();
  if (auto it = j.find("cases"); it != j.end() && !it->is_null()) {
    for (const json& c : it->get_ref<const json::array_t&>()) s.cases.push_back(case_from(c));
  }
  return s;
}

}  // namespace kgym
