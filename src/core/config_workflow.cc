// Reads and checks the `workflow:` section (docs/workflows.md).
#include <algorithm>
#include <cctype>

#include <fmt/format.h>

#include "core/config_sections.h"

namespace kgym::config_detail {
namespace fs = std::filesystem;

namespace {

constexpr std::string_view kWorkflowKeys[] = {"max_attempts", "stages"};
constexpr std::string_view kStageKeys[] = {"name", "prompt", "artifacts", "gates"};
constexpr std::string_view kGateKeys[] = {"kind",    "file", "headings", "min_sections", "words",
                                          "symbols", "argv", "marker",   "timeout_sec"};
constexpr std::string_view kGateKinds[] = {"non_empty", "headings",       "sections",    "forbidden_words",
                                           "command",   "python_symbols", "static_check"};

// The list key each list-valued gate kind reads its items from.
std::string_view items_key(std::string_view kind) {
  if (kind == "headings") return "headings";
  if (kind == "forbidden_words") return "words";
  if (kind == "python_symbols") return "symbols";
  return "";
}

bool is_relative_inside(const std::string& text) {
  fs::path path(text);
  return !path.is_absolute() && std::ranges::find(path, fs::path("..")) == path.end();
}

std::vector<std::string> read_strings(ConfigReader& reader, const Entry& at, std::string_view fix) {
  std::vector<std::string> values;
  auto items = reader.list(at, true, fix);
  if (!items) return values;
  if (items->empty()) reader.error(at, "is empty", fix);
  for (const Entry& item : *items) {
    if (auto value = reader.text(item, fix)) values.push_back(*value);
  }
  return values;
}

void read_gate(ConfigReader& reader, const Entry& at, GateConfig& gate) {
  Mapping fields = reader.mapping(at, kGateKeys);
  auto kind_entry = fields.get("kind");
  if (!kind_entry) {
    reader.error(fields.missing("kind"), "required",
                 "set one of non_empty, headings, sections, forbidden_words, command, python_symbols, "
                 "static_check");
    return;
  }
  auto kind = reader.choice(*kind_entry, kGateKinds);
  if (!kind) return;
  gate.kind = *kind;
  for (const Entry& entry : fields.entries) {
    std::string key = entry.path.substr(at.path.size() + 1);
    bool used = key == "kind" || (key == "file" && gate.kind != "command") || (key == items_key(gate.kind)) ||
                (key == "min_sections" && gate.kind == "sections") ||
                ((key == "argv" || key == "marker" || key == "timeout_sec") && gate.kind == "command");
    if (!used)
      reader.error(entry, fmt::format("is not used by a {} gate", gate.kind),
                   "remove it (docs/workflows.md lists the keys of each gate kind)");
  }
  if (gate.kind != "command") {
    constexpr std::string_view kFix = "name a file relative to the agent's work dir, e.g. file: PLAN.md";
    if (auto entry = fields.get("file")) {
      if (auto file = reader.text(*entry, kFix)) {
        if (is_relative_inside(*file))
          gate.file = *file;
        else
          reader.error(*entry, fmt::format("'{}' leaves the agent's work dir", *file), kFix);
      }
    } else {
      reader.error(fields.missing("file"), fmt::format("required by a {} gate", gate.kind), kFix);
    }
  }
  if (std::string_view key = items_key(gate.kind); !key.empty()) {
    std::string fix = fmt::format("list them, e.g. {}: [{}]", key,
                                  key == "headings" ? "'## Goal', '## Plan'"
                                  : key == "words"  ? "TBD, TODO, 待定"
                                                    : "ModelNew");
    if (auto entry = fields.get(key))
      gate.items = read_strings(reader, *entry, fix);
    else
      reader.error(fields.missing(key), fmt::format("required by a {} gate", gate.kind), fix);
  }
  if (gate.kind == "sections") {
    constexpr std::string_view kFix = "set the least number of '## ' sections, e.g. min_sections: 3";
    if (auto entry = fields.get("min_sections")) {
      if (auto n = reader.integer(*entry, 1, kFix)) gate.min_count = static_cast<int>(*n);
    } else {
      reader.error(fields.missing("min_sections"), "required by a sections gate", kFix);
    }
  }
  if (gate.kind == "command") {
    constexpr std::string_view kFix =
        "write the command as a list run in the agent's work dir, e.g. argv: [python3, check.py]";
    if (auto entry = fields.get("argv"))
      gate.argv = read_strings(reader, *entry, kFix);
    else
      reader.error(fields.missing("argv"), "required by a command gate", kFix);
    if (auto entry = fields.get("marker")) {
      if (auto marker = reader.text(*entry, "set the text the command must print, e.g. marker: GOLDEN_OK"))
        gate.marker = *marker;
    }
    if (auto entry = fields.get("timeout_sec")) {
      if (auto n = reader.integer(*entry, 1, "set whole seconds, at least 1, e.g. timeout_sec: 120"))
        gate.timeout = std::chrono::seconds(*n);
    }
  }
}

void read_stage(ConfigReader& reader, const Entry& at, StageConfig& stage, std::vector<std::string>& names) {
  Mapping fields = reader.mapping(at, kStageKeys);
  constexpr std::string_view kNameFix = "name the stage with letters, digits, '-' and '_', e.g. name: plan";
  if (auto entry = fields.get("name")) {
    if (auto name = reader.text(*entry, kNameFix)) {
      bool plain = std::ranges::all_of(*name, [](char c) {
        return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '-' || c == '_';
      });
      if (!plain) {
        reader.error(*entry, fmt::format("'{}' is not a plain name", *name), kNameFix);
      } else if (std::ranges::find(names, *name) != names.end()) {
        reader.error(*entry, fmt::format("stage '{}' is defined twice", *name),
                     "give every stage its own name");
      } else {
        stage.name = *name;
        names.push_back(*name);
      }
    }
  } else {
    reader.error(fields.missing("name"), "required", kNameFix);
  }
  constexpr std::string_view kPromptFix =
      "name the stage's prompt template file (relative to this config), e.g. prompt: prompts/plan.md";
  if (auto entry = fields.get("prompt")) {
    if (auto path = reader.path(*entry, kPromptFix)) {
      std::error_code ec;
      if (!fs::is_regular_file(*path, ec))
        reader.error(*entry, fmt::format("'{}' does not exist", path->string()), kPromptFix);
      else
        stage.prompt = *path;
    }
  } else {
    reader.error(fields.missing("prompt"), "required", kPromptFix);
  }
  if (auto entry = fields.get("artifacts")) {
    constexpr std::string_view kFix =
        "list files relative to the agent's work dir, e.g. artifacts: [PLAN.md]";
    for (const std::string& file : read_strings(reader, *entry, kFix)) {
      if (is_relative_inside(file))
        stage.artifacts.push_back(file);
      else
        reader.error(*entry, fmt::format("'{}' leaves the agent's work dir", file), kFix);
    }
  }
  if (auto entry = fields.get("gates")) {
    auto items = reader.list(*entry, false, "list gates, e.g. gates: [{kind: non_empty, file: PLAN.md}]");
    if (!items) return;
    for (const Entry& item : *items) {
      GateConfig gate;
      read_gate(reader, item, gate);
      stage.gates.push_back(std::move(gate));
    }
  }
}

}  // namespace

void read_workflow(ConfigReader& reader, const Entry& at, WorkflowConfig& workflow) {
  Mapping fields = reader.mapping(at, kWorkflowKeys);
  if (auto entry = fields.get("max_attempts")) {
    if (auto n = reader.integer(*entry, 1, "set how often a stage may run, at least 1, e.g. max_attempts: 3"))
      workflow.max_attempts = static_cast<int>(*n);
  }
  constexpr std::string_view kFix =
      "list the stages in order, e.g. stages: [{name: plan, prompt: prompts/plan.md, gates: [...]}]";
  auto stages_entry = fields.get("stages");
  if (!stages_entry) {
    reader.error(fields.missing("stages"), "required in a workflow", kFix);
    return;
  }
  auto items = reader.list(*stages_entry, false, kFix);
  if (!items) return;
  if (items->empty()) reader.error(*stages_entry, "is empty", kFix);
  std::vector<std::string> names;
  for (const Entry& item : *items) {
    StageConfig stage;
    read_stage(reader, item, stage, names);
    workflow.stages.push_back(std::move(stage));
  }
}

}  // namespace kgym::config_detail
