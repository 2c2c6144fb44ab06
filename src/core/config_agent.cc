// Reads and checks the `agent:` section.
#include <algorithm>
#include <cctype>
#include <set>
#include <system_error>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/config_sections.h"

namespace kgym::config_detail {
namespace fs = std::filesystem;

namespace {

constexpr std::string_view kAgentKeys[] = {"kind",      "argv",  "env", "timeout_sec", "workdir",
                                           "artifacts", "model", "dir", "network"};
constexpr std::string_view kAgentKinds[] = {"command", "replay"};
constexpr std::string_view kPlaceholders[] = {"workspace", "prompt_file", "spec_file",
                                              "case_id",   "model",       "device"};

bool is_identifier_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_'; }

bool is_env_name(std::string_view name) {
  return !name.empty() && std::isdigit(static_cast<unsigned char>(name[0])) == 0 &&
         std::ranges::all_of(name, is_identifier_char);
}

// The names of the "{name}" placeholders in a template. Braces around
// anything other than a plain name (spaces, punctuation) are literal text.
std::vector<std::string> placeholders_in(std::string_view text) {
  std::vector<std::string> names;
  for (size_t open = text.find('{'); open != std::string_view::npos; open = text.find('{', open + 1)) {
    size_t close = text.find('}', open + 1);
    if (close == std::string_view::npos) break;
    std::string_view name = text.substr(open + 1, close - open - 1);
    if (!name.empty() && std::ranges::all_of(name, is_identifier_char)) names.emplace_back(name);
  }
  return names;
}

std::string placeholder_list() {
  std::vector<std::string> braced;
  for (std::string_view name : kPlaceholders) braced.push_back(fmt::format("{{{}}}", name));
  return fmt::format("{}", fmt::join(braced, " "));
}

void check_template(ConfigReader& reader, const Entry& at, std::string_view text, bool model_set) {
  for (const std::string& name : placeholders_in(text)) {
    if (std::ranges::find(kPlaceholders, name) == std::end(kPlaceholders)) {
      std::string nearest = nearest_name(name, kPlaceholders);
      std::string hint = nearest.empty() ? "" : fmt::format("did you mean {{{}}}? ", nearest);
      reader.error(at, fmt::format("unknown placeholder {{{}}}", name),
                   fmt::format("{}known placeholders: {}", hint, placeholder_list()));
    } else if (name == "model" && !model_set) {
      reader.error(at, "uses {model} but agent.model is not set", "set agent.model or remove {model}");
    }
  }
}

void read_argv(ConfigReader& reader, const Mapping& agent_map, AgentConfig& agent) {
  constexpr std::string_view kFix =
      "write the command as a list, one argument per item, e.g. argv: [./my_agent.sh, '{workspace}']";
  std::optional<Entry> at = agent_map.get("argv");
  if (!at) {
    if (agent.kind == "command")
      reader.error(agent_map.missing("argv"), "required when agent.kind is command", kFix);
    return;
  }
  auto items = reader.list(*at, false, kFix);
  if (!items) return;
  if (items->empty() && agent.kind == "command") reader.error(*at, "is empty", kFix);
  for (const Entry& item : *items) {
    if (!item.node.IsScalar()) {
      reader.error(item, fmt::format("expected a string argument, found {}", describe(item.node)), kFix);
      continue;
    }
    check_template(reader, item, item.node.Scalar(), agent.model.has_value());
    agent.argv.push_back(item.node.Scalar());
  }
}

void read_env(ConfigReader& reader, const Entry& at, AgentConfig& agent) {
  Mapping env = reader.mapping(at, {});
  for (const Entry& entry : env.entries) {
    std::string name = entry.path.substr(at.path.size() + 1);
    if (!is_env_name(name)) {
      reader.error(entry, fmt::format("'{}' is not a valid environment variable name", name),
                   "use letters, digits and '_', not starting with a digit");
      continue;
    }
    if (!entry.node.IsScalar() && !entry.node.IsNull()) {
      reader.error(entry, fmt::format("expected a string value, found {}", describe(entry.node)),
                   "quote the value, e.g. FOO: 'a b'");
      continue;
    }
    std::string value = entry.node.IsNull() ? "" : entry.node.Scalar();
    check_template(reader, entry, value, agent.model.has_value());
    agent.env[name] = value;
  }
}

void read_artifacts(ConfigReader& reader, const Entry& at, AgentConfig& agent) {
  constexpr std::string_view kFix =
      "list file paths relative to the agent workspace, candidate first, e.g. artifacts: [model_new.py]";
  auto items = reader.list(at, true, kFix);
  if (!items) return;
  if (items->empty()) {
    reader.error(at, "is empty", kFix);
    return;
  }
  std::vector<std::string> artifacts;
  for (const Entry& item : *items) {
    auto value = reader.text(item, kFix);
    if (!value) continue;
    fs::path path(*value);
    if (path.is_absolute() || std::ranges::find(path, fs::path("..")) != path.end()) {
      reader.error(item, fmt::format("'{}' leaves the agent workspace", *value),
                   "use a relative path without '..'; only files inside the workspace are copied out");
    } else if (std::ranges::find(artifacts, *value) != artifacts.end()) {
      reader.error(item, fmt::format("'{}' is listed twice", *value), "list each artifact once");
    } else {
      artifacts.push_back(*value);
    }
  }
  if (artifacts.size() == items->size()) agent.artifacts = std::move(artifacts);
}

void read_replay_dir(ConfigReader& reader, const Mapping& agent_map, AgentConfig& agent) {
  constexpr std::string_view kFix =
      "set agent.dir to a directory holding <dir>/<level>/<N>_<Name>/model_new.py or "
      "<dir>/<level>_<N>_<Name>.py";
  std::optional<Entry> at = agent_map.get("dir");
  if (!at) {
    if (agent.kind == "replay")
      reader.error(agent_map.missing("dir"), "required when agent.kind is replay", kFix);
    return;
  }
  auto dir = reader.path(*at, kFix);
  if (!dir) return;
  std::error_code ec;
  if (agent.kind == "replay" && !fs::is_directory(*dir, ec)) {
    reader.error(
        *at,
        fmt::format("'{}' {}", dir->string(), fs::exists(*dir, ec) ? "is not a directory" : "does not exist"),
        kFix);
    return;
  }
  agent.replay_dir = *dir;
}

}  // namespace

void read_agent(ConfigReader& reader, const Entry& at, AgentConfig& agent) {
  Mapping agent_map = reader.mapping(at, kAgentKeys);
  bool kind_ok = true;
  if (auto entry = agent_map.get("kind")) {
    auto kind = reader.choice(*entry, kAgentKinds);
    kind_ok = kind.has_value();
    if (kind) agent.kind = *kind;
  }
  if (!kind_ok) agent.kind.clear();  // skip the checks that depend on the kind

  if (auto entry = agent_map.get("model")) {
    if (auto model = reader.text(*entry, "write the model name as a string, e.g. model: my-model"))
      agent.model = *model;
  }
  if (auto entry = agent_map.get("timeout_sec")) {
    if (auto seconds =
            reader.integer(*entry, 1, "set a whole number of seconds, at least 1, e.g. timeout_sec: 1800"))
      agent.timeout = std::chrono::seconds(*seconds);
  }
  if (auto entry = agent_map.get("workdir")) {
    constexpr std::string_view kFix =
        "use an absolute path or one starting with {workspace}, e.g. '{workspace}/src'";
    if (auto workdir = reader.text(*entry, kFix)) {
      if (!workdir->starts_with("{workspace}") && !fs::path(*workdir).is_absolute()) {
        reader.error(*entry, fmt::format("'{}' is relative to nothing", *workdir), kFix);
      } else {
        check_template(reader, *entry, *workdir, agent.model.has_value());
        agent.workdir = *workdir;
      }
    }
  }
  if (auto entry = agent_map.get("network")) {
    if (auto network = reader.boolean(*entry)) agent.network = *network;
  }
  if (auto entry = agent_map.get("env")) read_env(reader, *entry, agent);
  if (auto entry = agent_map.get("artifacts")) read_artifacts(reader, *entry, agent);
  read_argv(reader, agent_map, agent);
  read_replay_dir(reader, agent_map, agent);
  if (!kind_ok) agent.kind = "replay";
}

}  // namespace kgym::config_detail
