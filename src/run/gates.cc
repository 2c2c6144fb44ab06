#include "run/gates.h"

#include <algorithm>
#include <cctype>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "agent/template.h"
#include "static_check/python_source.h"
#include "util/beneath.h"
#include "util/fs.h"
#include "util/text_cells.h"
#include "verify/static_gate.h"

namespace kgym::run {
namespace {

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::size_t pos = 0;
  while (pos <= text.size()) {
    std::size_t end = text.find('\n', pos);
    std::string line = text.substr(pos, end == std::string::npos ? std::string::npos : end - pos);
    while (!line.empty() && (line.back() == '\r' || line.back() == ' ' || line.back() == '\t'))
      line.pop_back();
    lines.push_back(line);
    if (end == std::string::npos) break;
    pos = end + 1;
  }
  return lines;
}

std::string lower(std::string text) {
  std::ranges::transform(text, text.begin(), [](unsigned char c) { return std::tolower(c); });
  return text;
}

// The Markdown heading lines of `text` (outside ``` fences).
std::vector<std::string> headings_of(const std::string& text) {
  std::vector<std::string> headings;
  bool fenced = false;
  for (const std::string& line : lines_of(text)) {
    if (line.starts_with("```") || line.starts_with("~~~")) fenced = !fenced;
    if (!fenced && line.starts_with("#")) headings.push_back(line);
  }
  return headings;
}

// "## Goal" matches that exact line; "Goal" matches a heading of any level
// whose text is "Goal" (case-insensitive).
bool has_heading(const std::vector<std::string>& headings, const std::string& wanted) {
  return std::ranges::any_of(headings, [&](const std::string& h) {
    if (wanted.starts_with("#")) return h == wanted;
    std::size_t text = h.find_first_not_of('#');
    if (text == std::string::npos) return false;
    std::string title = h.substr(text);
    title.erase(0, title.find_first_not_of(' '));
    return lower(title) == lower(wanted);
  });
}

GateResult fail(GateResult r, std::string detail) {
  r.ok = false;
  r.detail = std::move(detail);
  return r;
}

// A file a gate reads: the agent's, so read without following a link in
// any component of its path (util/beneath.h), and at most this big.
constexpr std::uintmax_t kGateFileBytes = 4 << 20;

std::expected<std::string, std::string> read_nonempty(const std::filesystem::path& workdir,
                                                      const std::string& name) {
  if (!util::exists_beneath(workdir, name)) return std::unexpected(fmt::format("{} does not exist", name));
  // The error names the path and what was wrong, never the content.
  auto text = util::read_file_beneath(workdir, name, kGateFileBytes);
  if (!text) return std::unexpected(text.error());
  if (text->find_first_not_of(" \t\r\n") == std::string::npos)
    return std::unexpected(fmt::format("{} is empty", name));
  return text;
}

GateResult check_symbols(GateResult r, const std::string& text, const GateConfig& gate) {
  static_check::PythonSource src = static_check::parse_python(text);
  if (src.error) return fail(r, fmt::format("{}:{}: {}", gate.file, src.error->line, src.error->message));
  std::vector<std::string> missing;
  for (const std::string& symbol : gate.items) {
    bool defined = src.imported_names.contains(symbol);
    for (const auto& line : src.lines) {
      if (defined || line.depth != 0) continue;
      const auto& t = line.tokens;
      std::size_t at = !t.empty() && static_check::is_name(t[0], "async") ? 1 : 0;
      if (t.size() > at + 1 &&
          (static_check::is_name(t[at], "def") || static_check::is_name(t[at], "class")) &&
          static_check::is_name(t[at + 1], symbol))
        defined = true;
    }
    if (auto it = src.assignments.find(symbol); !defined && it != src.assignments.end()) {
      defined = std::ranges::any_of(it->second, [&](std::size_t i) { return src.lines[i].depth == 0; });
    }
    if (!defined) missing.push_back(symbol);
  }
  if (!missing.empty())
    return fail(r, fmt::format("{} does not define {}", gate.file, fmt::join(missing, ", ")));
  return r;
}

// What a command gate printed: the end of its log, where a verdict line
// and the marker are.
constexpr std::size_t kGateOutputBytes = 64 * 1024;

std::string tail_of(const std::filesystem::path& log) {
  auto text = util::read_file(log);
  if (!text) return "";
  return text->size() > kGateOutputBytes ? text->substr(text->size() - kGateOutputBytes) : *text;
}

}  // namespace

std::string gate_name(const GateConfig& gate) {
  return gate.kind == "command" ? fmt::format("command {}", fmt::join(gate.argv, " "))
                                : fmt::format("{} {}", gate.kind, gate.file);
}

GateCommand gate_command(const GateConfig& gate, const GateContext& context,
                         const std::filesystem::path& log_file) {
  GateCommand command;
  for (const std::string& arg : gate.argv)
    command.spec.argv.push_back(agent::expand_template(arg, context.values));
  command.spec.cwd = context.workdir;
  command.spec.log_file = log_file;
  command.timeout = gate.timeout;
  return command;
}

GateResult command_gate_result(const GateConfig& gate, const util::ProcessExit& exit, bool timed_out,
                               const std::string& output) {
  GateResult r;
  r.ok = true;
  r.gate = gate_name(gate);
  std::string last = util::last_line(output);
  if (timed_out) return fail(r, fmt::format("timed out after {} s", gate.timeout.count()));
  if (!exit.ok())
    return fail(r, fmt::format("ended with {}{}", exit.describe(), last.empty() ? "" : ": " + last));
  if (!gate.marker.empty() && output.find(gate.marker) == std::string::npos)
    return fail(r, fmt::format("did not print '{}'{}", gate.marker,
                               last.empty() ? "" : " (last line: " + last + ")"));
  return r;
}

GateResult check_file_gate(const GateConfig& gate, const GateContext& context) {
  GateResult r;
  r.ok = true;
  r.gate = gate_name(gate);
  if (gate.kind == "command") return fail(r, "a command gate runs as a child (StageChecks)");
  auto text = read_nonempty(context.workdir, gate.file);
  if (!text) return fail(r, text.error());
  if (gate.kind == "non_empty") return r;
  if (gate.kind == "headings") {
    std::vector<std::string> headings = headings_of(*text), missing;
    for (const std::string& h : gate.items) {
      if (!has_heading(headings, h)) missing.push_back(fmt::format("'{}'", h));
    }
    if (!missing.empty())
      return fail(r, fmt::format("{} lacks heading {}", gate.file, fmt::join(missing, ", ")));
    return r;
  }
  if (gate.kind == "sections") {
    auto sections =
        std::ranges::count_if(headings_of(*text), [](const std::string& h) { return h.starts_with("## "); });
    if (sections < gate.min_count)
      return fail(r, fmt::format("{} has {} '## ' section(s), needs at least {}", gate.file, sections,
                                 gate.min_count));
    return r;
  }
  if (gate.kind == "forbidden_words") {
    std::vector<std::string> lines = lines_of(*text), found;
    for (const std::string& word : gate.items) {
      for (std::size_t i = 0; i < lines.size(); ++i) {
        if (lower(lines[i]).find(lower(word)) != std::string::npos) {
          found.push_back(fmt::format("'{}' (line {})", word, i + 1));
          break;
        }
      }
    }
    if (!found.empty()) return fail(r, fmt::format("{} contains {}", gate.file, fmt::join(found, ", ")));
    return r;
  }
  if (gate.kind == "python_symbols") return check_symbols(r, *text, gate);
  if (gate.kind == "static_check") {
    // The text read above: the gate never opens the agent's path again.
    verify::StaticGateResult found = verify::run_static_gate_on_source(
        std::filesystem::path(gate.file).filename().string(), *text, context.problem, *context.backend);
    if (found.cheat) return fail(r, found.reason);
    return r;
  }
  return fail(r, fmt::format("unknown gate kind '{}'", gate.kind));
}

StageChecks::StageChecks(const StageConfig& stage, GateContext context, std::filesystem::path log_dir)
    : context_(std::move(context)), log_dir_(std::move(log_dir)) {
  for (const std::string& artifact : stage.artifacts) {
    GateConfig exists;
    exists.kind = "non_empty";
    exists.file = artifact;
    checks_.push_back(exists);
  }
  checks_.insert(checks_.end(), stage.gates.begin(), stage.gates.end());
}

std::optional<GateCommand> StageChecks::next() {
  while (next_ < checks_.size()) {
    const GateConfig& gate = checks_[next_];
    if (gate.kind != "command") {
      results_.push_back(check_file_gate(gate, context_));
      ++next_;
      continue;
    }
    // A fresh log per command: the marker must come from this run.
    std::filesystem::path log = log_dir_ / fmt::format("gate{}.log", next_ + 1);
    std::error_code ec;
    std::filesystem::remove(log, ec);
    if (auto made = util::make_dirs(log_dir_); !made) {
      GateResult r;
      r.gate = gate_name(gate);
      results_.push_back(fail(r, made.error()));
      ++next_;
      continue;
    }
    running_log_ = log;
    return gate_command(gate, context_, log);
  }
  return std::nullopt;
}

void StageChecks::command_ended(const util::ProcessExit& exit, bool timed_out) {
  if (!running_log_ || next_ >= checks_.size()) return;
  results_.push_back(command_gate_result(checks_[next_], exit, timed_out, tail_of(*running_log_)));
  running_log_.reset();
  ++next_;
}

std::string reprompt_text(const std::string& prompt, const std::vector<GateResult>& gates, int attempt,
                          int max_attempts) {
  std::string text = prompt;
  if (!text.empty() && text.back() != '\n') text += '\n';
  text += fmt::format(
      "\n## Checks that failed\n\nThe harness checked your previous attempt at this stage and these checks "
      "failed. Fix them; this is attempt {} of {}.\n\n",
      attempt, max_attempts);
  for (const GateResult& g : gates) {
    if (!g.ok) text += fmt::format("- {}: {}\n", g.gate, g.detail);
  }
  return text;
}

}  // namespace kgym::run
