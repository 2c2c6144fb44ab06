// The transcript rules (docs/anti-cheat.md "Transcripts"): each looks at
// one action of the agent and says whether it tried to game the grader.
#include "agent/transcript_scan.h"

#include <algorithm>
#include <array>
#include <regex>
#include <set>
#include <utility>

#include <fmt/format.h>

#include "util/text_cells.h"

namespace kgym::agent {
namespace {

namespace fs = std::filesystem;
using Kind = AgentAction::Kind;

constexpr std::string_view kOutside = "transcript.outside_workspace";
constexpr std::string_view kLookup = "transcript.reference_lookup";
constexpr std::string_view kNetwork = "transcript.network_fetch";
constexpr std::string_view kProcesses = "transcript.process_tampering";
constexpr std::string_view kSpecEdit = "transcript.spec_edit";
constexpr std::string_view kChecksOff = "transcript.checks_off";

// Outside the workspace, but the system's: libraries, headers, tools, the
// box's own /tmp, and what a program asks of its machine.
constexpr std::array kSystemPaths = {
    "/usr",          "/lib",          "/lib32",        "/lib64",
    "/bin",          "/sbin",         "/etc",          "/opt",
    "/tmp",          "/var/tmp",      "/dev/null",     "/dev/zero",
    "/dev/random",   "/dev/urandom",  "/dev/stdin",    "/dev/stdout",
    "/dev/stderr",   "/dev/fd",       "/dev/shm",      "/proc/self",
    "/proc/cpuinfo", "/proc/meminfo", "/proc/version", "/sys/devices/system/cpu"};

// Files the agent is given and must not change.
const std::set<std::string, std::less<>> kGiven = {"SPEC.md", "task_desc.py", "prompt.md"};

// Programs that inspect or signal other processes.
const std::set<std::string, std::less<>> kProcessTools = {
    "kill",   "pkill",  "killall", "ps",   "pgrep", "pidof",   "top",    "htop",
    "strace", "ltrace", "gdb",     "lsof", "fuser", "nsenter", "pstree", "kill.sh"};

// Programs that fetch from the network.
const std::set<std::string, std::less<>> kFetchTools = {
    "curl", "wget", "aria2c", "scp", "sftp", "ftp", "ssh", "nc", "ncat", "netcat", "telnet", "lynx", "w3m"};

// Programs that search or list a tree.
const std::set<std::string, std::less<>> kSearchTools = {
    "find", "locate", "mlocate", "fd", "fdfind", "tree", "du", "rg", "grep", "egrep", "ls", "ag"};

// Programs that change a file named among their arguments.
const std::set<std::string, std::less<>> kChangeTools = {
    "rm", "mv", "truncate", "tee", "chmod", "chown", "touch", "ln", "cp", "install", "unlink", "shred"};

// Words before the program that only wrap it.
const std::set<std::string, std::less<>> kWrappers = {
    "sudo", "env", "nohup", "nice", "time", "command", "exec", "stdbuf", "xargs", "timeout", "setsid"};

std::string lower(std::string_view text) {
  std::string out(text);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

bool under(const fs::path& path, const fs::path& dir) {
  if (dir.empty()) return false;
  auto relative = path.lexically_relative(dir);
  return !relative.empty() && *relative.begin() != "..";
}

bool strictly_above(const fs::path& path, const fs::path& dir) { return path != dir && under(dir, path); }

// One command line as the shell would split it: segments (between ;, |,
// &&, ||, newlines and subshell brackets) of words, quotes removed; the
// word after > or >> is a redirection target.
struct Word {
  std::string text;
  bool redirect = false;
};
using Segment = std::vector<Word>;

std::vector<Segment> split_command(std::string_view command) {
  std::vector<Segment> segments(1);
  std::string word;
  bool in_word = false, redirect_next = false;
  char quote = 0;
  auto end_word = [&] {
    if (in_word) segments.back().push_back({word, std::exchange(redirect_next, false)});
    word.clear();
    in_word = false;
  };
  for (std::size_t i = 0; i < command.size(); ++i) {
    char c = command[i];
    if (quote) {
      if (c == quote) {
        quote = 0;
      } else {
        word += c;
      }
      continue;
    }
    if (c == '\'' || c == '"') {
      quote = c;
      in_word = true;
    } else if (c == '\\' && i + 1 < command.size()) {
      word += command[++i];
      in_word = true;
    } else if (c == ' ' || c == '\t') {
      end_word();
    } else if (c == '>' || c == '<') {
      end_word();
      if (c == '>' && i + 1 < command.size() && command[i + 1] == '&') {  // 2>&1: no file
        ++i;
        while (i + 1 < command.size() &&
               (std::isdigit(static_cast<unsigned char>(command[i + 1])) != 0 || command[i + 1] == '-'))
          ++i;
        continue;
      }
      if (c == '>') redirect_next = true;
      if (i + 1 < command.size() && command[i + 1] == '>') ++i;
    } else if (c == ';' || c == '|' || c == '&' || c == '\n' || c == '(' || c == ')' || c == '`') {
      end_word();
      redirect_next = false;
      if (!segments.back().empty()) segments.emplace_back();
    } else {
      word += c;
      in_word = true;
    }
  }
  end_word();
  if (segments.back().empty()) segments.pop_back();
  return segments;
}

// The program a segment runs (wrappers and VAR=value assignments skipped)
// and the index of its first argument.
std::pair<std::string, std::size_t> program_of(const Segment& segment) {
  for (std::size_t i = 0; i < segment.size(); ++i) {
    const std::string& w = segment[i].text;
    if (segment[i].redirect || w.empty()) continue;
    if (w.find('=') != std::string::npos && w.front() != '-' && w.front() != '/') continue;
    std::string name = fs::path(w).filename().string();
    if (kWrappers.contains(name)) {
      if (name == "timeout" && i + 1 < segment.size()) ++i;  // its duration
      continue;
    }
    if (name.starts_with('-')) continue;  // a wrapper's option
    return {name, i + 1};
  }
  return {"", segment.size()};
}

// Path-like pieces of free text (a command, a Python one-liner): absolute,
// home-relative and parent-relative paths. URLs are not paths.
std::vector<std::string> paths_in(const std::string& text) {
  static const std::regex path(R"((?:^|[\s'"=(,\[{])((?:~|\.\.)?/[^\s'"),;|&<>\]}*?]*|\.\.(?=$|[\s'"/])))");
  std::vector<std::string> out;
  for (auto it = std::sregex_iterator(text.begin(), text.end(), path); it != std::sregex_iterator(); ++it) {
    std::string p = (*it)[1].str();
    if (p.starts_with("//") || p == "/") {
      if (p == "/") out.push_back(p);
      continue;
    }
    out.push_back(p);
  }
  return out;
}

class Scanner {
 public:
  Scanner(const ScanContext& context, const std::string& file) : context_(context), file_(file) {
    workspace_ = context.workspace.lexically_normal();
  }

  void scan(const AgentAction& action) {
    action_ = &action;
    flagged_.clear();
    switch (action.kind) {
      case Kind::kShell: shell(action.target); break;
      case Kind::kRead:
      case Kind::kList: look_at(action.target, /*searching=*/action.kind == Kind::kList); break;
      case Kind::kSearch: search(action.target); break;
      case Kind::kWrite:
      case Kind::kEdit: change(action.target, action.content); break;
      case Kind::kFetch: flag(kNetwork); break;
    }
  }

  std::vector<TranscriptFlag> flags;

 private:
  fs::path resolve(const std::string& text) const {
    if (text.starts_with("~"))
      return (context_.home / text.substr(std::min<std::size_t>(2, text.size()))).lexically_normal();
    fs::path p(text);
    return (p.is_absolute() ? p : workspace_ / p).lexically_normal();
  }

  // A path the agent read, listed or searched.
  void look_at(const std::string& text, bool searching) {
    if (text.empty()) return;
    fs::path p = resolve(text);
    if (p == workspace_ || under(p, workspace_)) return;
    if (searching && strictly_above(p, workspace_)) {
      flag(kLookup);  // a tree that holds other cases, runs or the problems
      return;
    }
    for (const auto& dir : context_.allowed)
      if (p == dir || under(p, dir)) return;
    for (const auto& dir : context_.off_limits) {
      if (p == dir || under(p, dir)) {
        flag(kLookup);
        return;
      }
    }
    std::string s = p.string();
    for (std::string_view system : kSystemPaths) {
      if (s == system || s.starts_with(std::string(system) + "/")) {
        process_path(s);
        return;
      }
    }
    if (s.starts_with("/proc/")) {
      process_path(s);
      return;
    }
    flag(kOutside);
  }

  // /proc/<pid>/...: another process's state.
  void process_path(const std::string& s) {
    static const std::regex pid(R"(^/proc/[0-9]+(/|$))");
    if (std::regex_search(s, pid)) flag(kProcesses);
  }

  void search(const std::string& target) {
    // "PATH PATTERN" or "PATTERN": the pattern names what is looked for.
    auto space = target.find(' ');
    std::string where = space == std::string::npos ? "" : target.substr(0, space);
    std::string pattern = space == std::string::npos ? target : target.substr(space + 1);
    if (!where.empty()) look_at(where, /*searching=*/true);
    for (const std::string& p : paths_in(" " + pattern)) look_at(p, /*searching=*/true);
    names(pattern);
  }

  // Names that only a look for the grader's files would use.
  void names(const std::string& text) {
    std::string scrubbed = scrub(text);
    std::string l = lower(scrubbed);
    for (std::string_view name :
         {"kernelbench", "kgym", "result.json", "state.json", "events.jsonl", "run.json", "verify_request"}) {
      if (l.find(name) != std::string::npos) {
        flag(kLookup);
        return;
      }
    }
    if (!context_.case_stem.empty() && scrubbed.find(context_.case_stem + ".py") != std::string::npos)
      flag(kLookup);
  }

  // `text` without the paths the agent may name freely (its workspace, its
  // home, what it was shown): a workspace under /tmp/kgym-... names nothing.
  std::string scrub(std::string text) const {
    std::vector<std::string> free{workspace_.string()};
    for (const auto& dir : context_.allowed) free.push_back(dir.string());
    for (const std::string& prefix : free) {
      if (prefix.size() < 2) continue;
      for (auto at = text.find(prefix); at != std::string::npos; at = text.find(prefix, at))
        text.erase(at, prefix.size());
    }
    return text;
  }

  void change(const std::string& path, const std::string& content) {
    if (path.empty()) return;
    fs::path p = resolve(path);
    if (kGiven.contains(p.filename().string())) flag(kSpecEdit);
    if (!(p == workspace_ || under(p, workspace_))) look_at(path, false);
    std::string relative = p.lexically_relative(workspace_).string();
    bool candidate = std::ranges::find(context_.artifacts, relative) != context_.artifacts.end() ||
                     p.extension() == ".py" || p.extension() == ".cpp" || p.extension() == ".cu";
    // kgym's internals: its variables, its worker's modules, its run files
    // (a name such as an extension's "kgym_relu" is no internal).
    static const std::regex internals(R"(\bKGYM_[A-Z]|\bkgym_worker|\.kgym/|\b(import|from)\s+kgym\b)");
    if (candidate && std::regex_search(scrub(content), internals)) flag(kChecksOff);
  }

  void shell(const std::string& command) {
    const bool printed = action_->printed;
    for (const Segment& segment : split_command(command)) {
      auto [program, first] = program_of(segment);
      if (program.empty()) continue;
      if (kProcessTools.contains(program)) flag(kProcesses);
      if (kFetchTools.contains(program)) flag(kNetwork);
      if (program == "git" && first < segment.size()) {
        const std::string& verb = segment[first].text;
        if (verb == "clone" || verb == "fetch" || verb == "pull" || verb == "ls-remote") flag(kNetwork);
      }
      if (printed) continue;  // output: its first word only
      // sh -c 'CMD': CMD is a command line of its own.
      if ((program == "sh" || program == "bash" || program == "dash" || program == "zsh") &&
          first < segment.size()) {
        for (std::size_t i = first; i + 1 < segment.size(); ++i) {
          const std::string& option = segment[i].text;
          if (option.starts_with("-") && option.find('c') != std::string::npos) {
            shell(segment[i + 1].text);
            break;
          }
        }
      }
      bool searching = kSearchTools.contains(program);
      bool changes = kChangeTools.contains(program);
      bool in_place = (program == "sed" || program == "perl") &&
                      std::ranges::any_of(segment, [](const Word& w) { return w.text.starts_with("-i"); });
      for (std::size_t i = first; i < segment.size(); ++i) {
        const Word& w = segment[i];
        std::string name = fs::path(w.text).filename().string();
        bool target = w.redirect || in_place || (changes && (program != "cp" && program != "install")) ||
                      ((program == "cp" || program == "install") && i + 1 == segment.size());
        if (target && kGiven.contains(name)) flag(kSpecEdit);
        if (w.redirect && !w.text.starts_with("&")) {
          if (!w.text.starts_with("/dev/")) look_at(w.text, false);
          continue;
        }
        if (searching && !w.text.starts_with("-") && (w.text == "." || w.text == "..")) look_at(w.text, true);
      }
      // Paths anywhere in the segment (arguments, code in a string).
      std::string text;
      for (std::size_t i = first; i < segment.size(); ++i) text += " " + segment[i].text;
      for (const std::string& p : paths_in(text)) look_at(p, searching);
      names(text);
      if (text.find("--skip-static-checks") != std::string::npos) flag(kChecksOff);
    }
    if (printed) return;
    static const std::regex url(R"(\b(?:https?|ftp)://)");
    if (std::regex_search(command, url)) flag(kNetwork);
    static const std::regex signal(R"(\bos\.kill\(|\bpsutil\b|\bos\.killpg\()");
    if (std::regex_search(command, signal)) flag(kProcesses);
    static const std::regex kgym_env(R"((\bexport|\bunset)\s+KGYM_|\bKGYM_[A-Z_]+=)");
    if (std::regex_search(command, kgym_env)) flag(kChecksOff);
  }

  void flag(std::string_view rule) {
    if (!flagged_.insert(std::string(rule)).second) return;
    std::string evidence = action_->target;
    if (auto nl = evidence.find('\n'); nl != std::string::npos) evidence = evidence.substr(0, nl) + " ...";
    // Cut whole code points: the evidence is stored in result.json.
    evidence = util::truncate_cells(evidence, 200);
    std::string_view kind;
    switch (action_->kind) {
      case Kind::kShell: kind = action_->printed ? "output" : "shell"; break;
      case Kind::kRead: kind = "read"; break;
      case Kind::kWrite: kind = "write"; break;
      case Kind::kEdit: kind = "edit"; break;
      case Kind::kList: kind = "list"; break;
      case Kind::kSearch: kind = "search"; break;
      case Kind::kFetch: kind = "fetch"; break;
    }
    flags.push_back({std::string(rule), fmt::format("{}: {}", kind, evidence), file_, action_->line});
  }

  const ScanContext& context_;
  std::string file_;
  fs::path workspace_;
  const AgentAction* action_ = nullptr;
  std::set<std::string> flagged_;
};

}  // namespace

std::vector<TranscriptFlag> scan_actions(const std::vector<AgentAction>& actions, const ScanContext& context,
                                         const std::string& file) {
  Scanner scanner(context, file);
  for (const AgentAction& action : actions) scanner.scan(action);
  return std::move(scanner.flags);
}

const std::vector<std::string>& transcript_rules() {
  static const std::vector<std::string> rules{std::string(kOutside),  std::string(kLookup),
                                              std::string(kNetwork),  std::string(kProcesses),
                                              std::string(kSpecEdit), std::string(kChecksOff)};
  return rules;
}

}  // namespace kgym::agent
