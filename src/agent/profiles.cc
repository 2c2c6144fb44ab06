// The built-in CLI profiles (docs/agents.md): opencode, Claude Code and
// Codex, each run non-interactively in the case's work dir with the prompt
// as its message, printing a JSON event stream into agent.log.
#include <unistd.h>

#include <cstdlib>

#include <fmt/format.h>

#include "agent/command_agent.h"
#include "agent/template.h"
#include "agent/transcript.h"
#include "core/case_paths.h"
#include "util/fs.h"

namespace kgym::agent {
namespace {

// opencode keeps sessions in its own store; after the run the wrapper
// exports the session it just made (the last sessionID it printed) next to
// the transcript. It reads what the run printed from a copy of its own in
// the box: agent.log is written by kgym's relay, outside the box. $1 binary,
// $2 session dir, then the run's arguments.
constexpr const char* kOpencodeWrapper = R"(bin=$1; dir=$2; shift 2
out=$(mktemp) || exit 1
{ "$bin" run "$@"; echo $? >"$out.rc"; } | tee "$out"
rc=$(cat "$out.rc" 2>/dev/null || echo 1)
sid=$(grep -o '"sessionID":"[A-Za-z0-9_-]*"' "$out" | tail -n 1 | cut -d'"' -f4)
rm -f "$out" "$out.rc"
if [ -n "$sid" ]; then mkdir -p "$dir" && "$bin" export "$sid" >"$dir/opencode-export-$sid.json"; fi
exit $rc)";

// The outermost node_modules directory the CLI (its symlinks resolved)
// lies in; empty when it is not in one. An npm-installed CLI is a launcher
// that needs its package and the platform package beside it (codex.js runs
// the binary of @openai/codex-linux-x64), so the box shows the whole tree.
std::filesystem::path npm_tree(const std::filesystem::path& cli) {
  std::error_code ec;
  std::filesystem::path real = std::filesystem::canonical(cli, ec);
  if (ec) return {};
  std::filesystem::path prefix;
  for (const auto& part : real) {
    prefix /= part;
    if (part == "node_modules") return prefix;
  }
  return {};
}

class ProfileAgent : public CommandAgent {
 public:
  using CommandAgent::CommandAgent;
  std::string name() const override { return config().kind; }
  std::optional<std::string> binary() const override { return config().binary; }

  std::optional<Usage> read_usage(const AgentTask& task) const override {
    auto log = util::read_file(CasePaths{task.case_dir}.agent_log());
    if (!log) return std::nullopt;
    std::filesystem::path session = CasePaths{task.case_dir}.session();
    if (util::make_dirs(session))
      (void)util::write_file_atomic(CasePaths{task.case_dir}.transcript(), json_lines(*log));
    // This run's usage: earlier refinement rounds wrote before log_from.
    return parse(std::string_view(*log).substr(std::min<std::size_t>(task.log_from, log->size())));
  }

  // The CLI's event stream, read from agent.log (kgym's relay wrote it
  // outside the box) as the JSON lines session/transcript.jsonl holds; that
  // copy is for readers, the box can write the session dir.
  std::vector<TranscriptSource> transcripts(const std::filesystem::path& case_dir) const override {
    return {{std::string(CasePaths::kTranscript), format(), CasePaths{case_dir}.agent_log(), true}};
  }

  BoxFiles box_files(const std::map<std::string, std::string>& env) const override {
    BoxFiles files;
    if (auto cli = util::find_executable(config().binary)) {
      std::error_code ec;
      std::filesystem::path path = std::filesystem::absolute(*cli, ec);
      std::filesystem::path tree = npm_tree(path);
      files.emplace_back(tree.empty() ? path : tree, std::filesystem::path());
    }
    add_profile_files(env, files);
    std::erase_if(files, [](const auto& file) {
      std::error_code ec;
      return !std::filesystem::is_regular_file(file.first, ec) &&
             !std::filesystem::is_directory(file.first, ec);
    });
    return files;
  }

 protected:
  virtual Usage parse(std::string_view log) const = 0;
  virtual TranscriptFormat format() const = 0;
  // The profile's own flags, before agent.extra_args and the prompt.
  virtual std::vector<std::string> flags(const AgentTask& task) const = 0;
  // What continues the CLI's latest session in the work dir (a refinement
  // round after the first), placed before the prompt.
  virtual std::vector<std::string> resume_args() const = 0;
  // The profile's config and credential files for box_files().
  virtual void add_profile_files(const std::map<std::string, std::string>&, BoxFiles&) const {}

  std::expected<std::vector<std::string>, GenerationFailure> command(
      const AgentTask& task, const std::map<std::string, std::string>& values) const override {
    auto prompt = util::read_file(task.prompt_file);
    if (!prompt) return std::unexpected(GenerationFailure{GenerationOutcome::kLaunchFailed, prompt.error()});
    std::vector<std::string> argv = flags(task);
    for (const std::string& arg : config().extra_args) argv.push_back(expand_template(arg, values));
    if (task.round > 1) {
      std::vector<std::string> resume = resume_args();
      argv.insert(argv.end(), resume.begin(), resume.end());
    }
    argv.push_back(*prompt);
    return argv;
  }
};

class OpencodeAgent final : public ProfileAgent {
 public:
  using ProfileAgent::ProfileAgent;

 protected:
  Usage parse(std::string_view log) const override { return parse_opencode_stream(log); }
  TranscriptFormat format() const override { return TranscriptFormat::kOpencode; }

  // Also the sessions the wrapper exported into the session dir, which is
  // the box's: a link there is never followed.
  std::vector<TranscriptSource> transcripts(const std::filesystem::path& case_dir) const override {
    std::vector<TranscriptSource> sources = ProfileAgent::transcripts(case_dir);
    std::error_code ec;
    std::filesystem::path session = CasePaths{case_dir}.session();
    if (!std::filesystem::is_directory(session, ec)) return sources;
    for (const auto& entry : std::filesystem::directory_iterator(session, ec)) {
      std::string name = entry.path().filename().string();
      if (name.starts_with("opencode-export-") && name.ends_with(".json") && entry.is_regular_file(ec) &&
          !entry.is_symlink(ec))
        sources.push_back({"session/" + name, TranscriptFormat::kOpencodeExport, entry.path()});
    }
    return sources;
  }

  // OPENCODE_CONFIG (a custom provider) where it is, and the user's own
  // credentials (`opencode auth login`) and global config at the places the
  // boxed opencode looks for them: below its private XDG directories.
  void add_profile_files(const std::map<std::string, std::string>& env, BoxFiles& files) const override {
    auto value = [&env](const char* name) -> std::string {
      if (auto it = env.find(name); it != env.end()) return it->second;
      const char* host = std::getenv(name);
      return host != nullptr ? host : "";
    };
    if (std::string config = value("OPENCODE_CONFIG"); !config.empty() && config.front() == '/')
      files.emplace_back(config, std::filesystem::path());
    auto host_dir = [](const char* xdg, const char* below_home) -> std::filesystem::path {
      if (const char* dir = std::getenv(xdg); dir != nullptr && *dir == '/') return dir;
      const char* home = std::getenv("HOME");
      return home != nullptr && *home == '/' ? std::filesystem::path(home) / below_home
                                             : std::filesystem::path();
    };
    auto show = [&](const char* xdg, const char* below_home, const char* file) {
      std::filesystem::path from = host_dir(xdg, below_home);
      auto box = env.find(xdg);
      if (from.empty() || box == env.end()) return;
      std::filesystem::path to = std::filesystem::path(box->second) / "opencode" / file;
      if (from / "opencode" / file != to) files.emplace_back(from / "opencode" / file, to);
    };
    show("XDG_DATA_HOME", ".local/share", "auth.json");
    show("XDG_CONFIG_HOME", ".config", "opencode.json");
    show("XDG_CONFIG_HOME", ".config", "opencode.jsonc");
  }
  std::vector<std::string> flags(const AgentTask& task) const override {
    std::vector<std::string> argv{"sh",
                                  "-c",
                                  kOpencodeWrapper,
                                  "kgym-opencode",
                                  config().binary,
                                  CasePaths{task.case_dir}.session().string(),
                                  "--format",
                                  "json",
                                  "--title",
                                  fmt::format("kgym {}", task.case_id)};
    if (config().model) argv.insert(argv.end(), {"--model", *config().model});
    if (config().opencode_agent) argv.insert(argv.end(), {"--agent", *config().opencode_agent});
    return argv;
  }
  // `opencode run --continue`: the last session of its store, the box's own.
  std::vector<std::string> resume_args() const override { return {"--continue"}; }
};

class ClaudeAgent final : public ProfileAgent {
 public:
  using ProfileAgent::ProfileAgent;

 protected:
  Usage parse(std::string_view log) const override { return parse_claude_stream(log); }
  TranscriptFormat format() const override { return TranscriptFormat::kClaude; }
  std::vector<std::string> flags(const AgentTask&) const override {
    // stream-json in print mode needs --verbose; without a person to ask,
    // tool permissions are granted up front (the work dir is the agent's own).
    std::vector<std::string> argv{config().binary, "--output-format",   "stream-json",
                                  "--verbose",     "--permission-mode", "bypassPermissions"};
    if (config().model) argv.insert(argv.end(), {"--model", *config().model});
    argv.push_back("-p");
    return argv;
  }
  // `claude --continue -p`: the most recent conversation in the work dir,
  // kept under the box's private home.
  std::vector<std::string> resume_args() const override { return {"--continue"}; }
  // Claude Code refuses bypassPermissions as root unless told it runs in a
  // sandbox; kgym runs it in its own (sandbox.mode), as root in containers.
  std::map<std::string, std::string> profile_env() const override {
    if (::geteuid() == 0) return {{"IS_SANDBOX", "1"}};
    return {};
  }
};

class CodexAgent final : public ProfileAgent {
 public:
  using ProfileAgent::ProfileAgent;

 protected:
  Usage parse(std::string_view log) const override { return parse_codex_stream(log); }
  TranscriptFormat format() const override { return TranscriptFormat::kCodex; }
  std::vector<std::string> flags(const AgentTask& task) const override {
    // The work dir is not a git repository. In kgym's box Codex's own sandbox
    // (namespaces of its own, which the box refuses) is off: the box is the
    // sandbox. Without one, the workspace-write sandbox lets it edit files
    // in the work dir and run commands. Exec mode never asks for approval.
    std::vector<std::string> argv{
        config().binary,         "exec",      "--json",
        "--skip-git-repo-check", "--sandbox", task.in_kgym_box ? "danger-full-access" : "workspace-write"};
    if (config().model) argv.insert(argv.end(), {"--model", *config().model});
    return argv;
  }
  // `codex exec [options] resume --last PROMPT`: its latest session, kept
  // under the box's private home; exec's options stay before the subcommand.
  std::vector<std::string> resume_args() const override { return {"resume", "--last"}; }
};

}  // namespace

std::unique_ptr<Agent> make_profile_agent(const AgentConfig& config) {
  if (config.kind == "opencode") return std::make_unique<OpencodeAgent>(config);
  if (config.kind == "claude") return std::make_unique<ClaudeAgent>(config);
  if (config.kind == "codex") return std::make_unique<CodexAgent>(config);
  return nullptr;
}

}  // namespace kgym::agent
