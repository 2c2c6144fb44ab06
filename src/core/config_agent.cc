// Reads and checks the `agent:` section.
#include <algorithm>
#include <cctype>
#include <set>
#include <system_error>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/config_sections.h"
#include "util/fs.h"

namespace kgym::config_detail {
namespace fs = std::filesystem;

namespace {

constexpr std::string_view kAgentKeys[] = {
    "kind",           "argv",      "env",     "timeout_sec",  "workdir",
    "artifacts",      "model",     "dir",     "binary",       "extra_args",
    "opencode_agent", "work_repo", "network", "needs_device", "transcript_policy",
    "feedback",       "self_check"};
constexpr std::string_view kFeedbackKeys[] = {"rounds", "until", "prompt"};
constexpr std::string_view kAgentKinds[] = {"command", "replay", "reference", "opencode", "claude", "codex"};

// The kinds that run no process of their own.
bool runs_nothing(const std::string& kind) { return kind == "replay" || kind == "reference"; }

bool is_profile(std::string_view kind) { return kind == "opencode" || kind == "claude" || kind == "codex"; }

// How to get each profile's CLI, for the "not found" message.
std::string_view install_hint(std::string_view kind) {
  if (kind == "opencode") return "npm install -g opencode-ai";
  if (kind == "claude") return "npm install -g @anthropic-ai/claude-code";
  return "npm install -g @openai/codex";
}
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
  if (at && is_profile(agent.kind)) {
    reader.error(*at, fmt::format("is built by the {} profile", agent.kind),
                 "remove agent.argv and add your own flags with agent.extra_args (docs/agents.md)");
    return;
  }
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
  // A bare program name is looked up on PATH now, not after hours of work.
  if (agent.kind == "command" && !items->empty() && (*items)[0].node.IsScalar()) {
    const std::string& program = agent.argv.front();
    if (program.find_first_of("/{") == std::string::npos && !util::find_executable(program)) {
      reader.error((*items)[0], fmt::format("'{}' is not found on PATH", program),
                   "install it, or give its path (absolute, or relative to the agent's work dir)");
    }
  }
}

void read_extra_args(ConfigReader& reader, const Entry& at, AgentConfig& agent) {
  constexpr std::string_view kFix = "list extra flags, one per item, e.g. extra_args: ['--verbose']";
  if (!is_profile(agent.kind)) {
    reader.error(at, "is only used by the opencode, claude and codex profiles",
                 "put the arguments into agent.argv");
    return;
  }
  auto items = reader.list(at, true, kFix);
  if (!items) return;
  for (const Entry& item : *items) {
    if (auto value = reader.text(item, kFix)) {
      check_template(reader, item, *value, agent.model.has_value());
      agent.extra_args.push_back(*value);
    }
  }
}

// The profile's CLI must exist before any work starts (exit 2 otherwise).
void read_binary(ConfigReader& reader, const Mapping& agent_map, AgentConfig& agent) {
  std::optional<Entry> at = agent_map.get("binary");
  if (!is_profile(agent.kind)) {
    if (at)
      reader.error(*at, "is only used by the opencode, claude and codex profiles",
                   "name the program as the first item of agent.argv");
    return;
  }
  std::string name = agent.kind;
  if (at) {
    auto value = reader.text(*at, "name the CLI on PATH or give its path, e.g. binary: /opt/bin/opencode");
    if (!value) return;
    name = *value;
    if (name.find('/') != std::string::npos) {
      auto path = reader.path(*at, "give the path of the CLI");
      if (!path) return;
      name = path->string();
    }
  }
  auto found = util::find_executable(name);
  if (!found) {
    Entry where = at ? *at : agent_map.get("kind").value_or(agent_map.self);
    reader.error(where,
                 fmt::format("the {} CLI '{}' is not {}", agent.kind, name,
                             name.find('/') != std::string::npos ? "an executable file" : "found on PATH"),
                 fmt::format("install it ({}) or set agent.binary to its path", install_hint(agent.kind)));
    return;
  }
  agent.binary = name.find('/') != std::string::npos ? found->string() : name;
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
    if (agent.kind == "replay" && agent_map.entries.empty()) {
      reader.error(agent_map.missing("dir"),
                   "the config has no agent section, so kgym replays stored candidates from agent.dir, which "
                   "is not set",
                   "set agent.dir to the stored candidates, or agent.kind (opencode, claude, codex or command) "
                   "and its keys to run an agent (docs/agents.md)");
    } else if (agent.kind == "replay") {
      reader.error(agent_map.missing("dir"), "required when agent.kind is replay", kFix);
    }
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

// agent.feedback: {rounds, until, prompt}.
void read_feedback(ConfigReader& reader, const Entry& at, AgentConfig& agent,
                   std::string_view verifier_mode) {
  Mapping feedback = reader.mapping(at, kFeedbackKeys);
  if (runs_nothing(agent.kind)) {
    reader.error(at,
                 fmt::format("needs an agent that runs; agent.kind {} writes no new candidate", agent.kind),
                 "remove agent.feedback or set agent.kind to command, opencode, claude or codex");
    return;
  }
  if (auto entry = feedback.get("rounds")) {
    if (auto rounds = reader.integer(
            *entry, 1, "set the rounds in all, the first included, e.g. rounds: 3 (1 = no feedback)")) {
      if (*rounds > 20)
        reader.error(*entry, fmt::format("{} rounds is more than kgym runs (20)", *rounds),
                     "set rounds: 20 or fewer");
      else
        agent.feedback.rounds = static_cast<int>(*rounds);
    }
  } else {
    reader.error(feedback.missing("rounds"), "is required",
                 "set the rounds in all, the first included, e.g. rounds: 3");
  }
  if (auto entry = feedback.get("until")) {
    constexpr std::string_view kUntil[] = {"pass", "fast_1", "fast_2"};
    if (auto value = reader.choice(*entry, kUntil)) {
      if (*value != "pass" && verifier_mode == "correctness")
        reader.error(*entry,
                     fmt::format("{} needs a speedup, and verifier.mode correctness times nothing", *value),
                     "set until: pass, or verifier.mode: performance");
      else
        agent.feedback.until = *value;
    }
  }
  if (auto entry = feedback.get("prompt")) {
    constexpr std::string_view kFix = "name a Markdown template file, e.g. prompt: prompts/feedback.md";
    if (auto path = reader.path(*entry, kFix)) {
      std::error_code ec;
      if (!fs::is_regular_file(*path, ec))
        reader.error(*entry, fmt::format("'{}' is not a file", path->string()), kFix);
      else
        agent.feedback.prompt = *path;
    }
  }
}

}  // namespace

void read_agent(ConfigReader& reader, const Entry& at, AgentConfig& agent, std::string_view verifier_mode) {
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
  if (auto entry = agent_map.get("needs_device")) {
    if (auto needs = reader.boolean(*entry)) {
      if (*needs && runs_nothing(agent.kind))
        reader.error(*entry, "needs an agent that runs",
                     "remove it or set agent.kind to command, opencode, claude or codex");
      else
        agent.needs_device = *needs;
    }
  }
  if (auto entry = agent_map.get("transcript_policy")) {
    constexpr std::string_view kPolicies[] = {"warn", "fail"};
    if (auto value = reader.choice(*entry, kPolicies)) agent.transcript_policy = *value;
  }
  if (auto entry = agent_map.get("env")) read_env(reader, *entry, agent);
  if (auto entry = agent_map.get("artifacts")) read_artifacts(reader, *entry, agent);
  read_argv(reader, agent_map, agent);
  read_binary(reader, agent_map, agent);
  if (auto entry = agent_map.get("extra_args")) read_extra_args(reader, *entry, agent);
  if (auto entry = agent_map.get("opencode_agent")) {
    if (agent.kind != "opencode") {
      reader.error(*entry, "is only used by the opencode profile", "remove it or set agent.kind: opencode");
    } else if (auto value = reader.text(*entry, "name an opencode agent, e.g. opencode_agent: build")) {
      agent.opencode_agent = *value;
    }
  }
  if (auto entry = agent_map.get("work_repo")) {
    constexpr std::string_view kFix =
        "name an existing repository directory, e.g. work_repo: /home/me/.cache/kgym/pypto "
        "(scripts/download_pypto.sh fetches one)";
    if (runs_nothing(agent.kind)) {
      reader.error(*entry, "needs an agent that runs",
                   "set agent.kind to command, opencode, claude or codex");
    } else if (auto repo = reader.path(*entry, kFix)) {
      std::error_code ec;
      if (!fs::is_directory(*repo, ec))
        reader.error(*entry, fmt::format("'{}' is not a directory", repo->string()), kFix);
      else
        agent.work_repo = *repo;
    }
  }
  read_replay_dir(reader, agent_map, agent);
  if (auto entry = agent_map.get("feedback"); entry && kind_ok)
    read_feedback(reader, *entry, agent, verifier_mode);
  if (auto entry = agent_map.get("self_check")) {
    if (auto on = reader.boolean(*entry)) {
      if (*on && runs_nothing(agent.kind))
        reader.error(*entry, "needs an agent that runs",
                     "remove it or set agent.kind to command, opencode, claude or codex");
      else
        agent.self_check = *on;
    }
  }
  if (!kind_ok) agent.kind = "replay";
}

}  // namespace kgym::config_detail
