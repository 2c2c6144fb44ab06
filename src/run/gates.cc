#include "run/gates.h"

#include <algorithm>
#include <cctype>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "agent/template.h"
#include "static_check/python_source.h"
#include "util/fs.h"
#include "verify/child_process.h"
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

std::expected<std::string, std::string> read_nonempty(const std::filesystem::path& path,
                                                      const std::string& name) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec))
    return std::unexpected(fmt::format("{} does not exist", name));
  auto text = util::read_file(path);
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

GateResult check_command(GateResult r, const GateConfig& gate, const GateContext& context) {
  std::vector<std::string> argv{"sh", "-c", "cd \"$0\" && exec \"$@\"", context.workdir.string()};
  for (const std::string& arg : gate.argv) argv.push_back(agent::expand_template(arg, context.values));
  auto run = verify::run_captured(argv, verify::Clock::now() + gate.timeout, 64 * 1024);
  if (!run) return fail(r, run.error());
  std::string output = run->output;
  std::size_t end = output.find_last_not_of("\n ");
  std::size_t start = end == std::string::npos ? 0 : output.find_last_of('\n', end);
  std::string last = end == std::string::npos
                         ? ""
                         : output.substr(start == std::string::npos ? 0 : start + 1,
                                         end - (start == std::string::npos ? 0 : start + 1) + 1);
  if (run->exit.signaled || run->exit.code != 0)
    return fail(r, fmt::format("ended with {}{}", run->exit.describe(), last.empty() ? "" : ": " + last));
  if (!gate.marker.empty() && output.find(gate.marker) == std::string::npos)
    return fail(r, fmt::format("did not print '{}'{}", gate.marker,
                               last.empty() ? "" : " (last line: " + last + ")"));
  return r;
}

}  // namespace

GateResult check_gate(const GateConfig& gate, const GateContext& context) {
  GateResult r;
  r.ok = true;
  r.gate = gate.kind == "command" ? fmt::format("command {}", fmt::join(gate.argv, " "))
                                  : fmt::format("{} {}", gate.kind, gate.file);
  if (gate.kind == "command") return check_command(r, gate, context);
  auto text = read_nonempty(context.workdir / gate.file, gate.file);
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
    verify::StaticGateResult found =
        verify::run_static_gate(context.workdir / gate.file, context.problem, context.backend);
    if (found.cheat) return fail(r, found.reason);
    return r;
  }
  return fail(r, fmt::format("unknown gate kind '{}'", gate.kind));
}

std::vector<GateResult> check_stage(const StageConfig& stage, const GateContext& context) {
  std::vector<GateResult> results;
  for (const std::string& artifact : stage.artifacts) {
    GateConfig exists;
    exists.kind = "non_empty";
    exists.file = artifact;
    results.push_back(check_gate(exists, context));
  }
  for (const GateConfig& gate : stage.gates) results.push_back(check_gate(gate, context));
  return results;
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
