// Reading a transcript into the agent's actions, one reader per format
// (docs/agents.md): the tool calls of a CLI's JSON stream or session
// export, or the lines of a command agent's output.
#include <functional>
#include <set>

#include <nlohmann/json.hpp>

#include "agent/transcript_scan.h"

namespace kgym::agent {
namespace {

using nlohmann::json;
using Kind = AgentAction::Kind;

std::string text_at(const json& object, std::initializer_list<const char*> keys) {
  if (!object.is_object()) return "";
  for (const char* key : keys) {
    auto it = object.find(key);
    if (it != object.end() && it->is_string()) return it->get<std::string>();
  }
  return "";
}

// Each JSON object on a line of `text`, with its 1-based line number.
void for_each_line_event(std::string_view text, const std::function<void(const json&, int)>& visit) {
  int line = 0;
  for (std::size_t pos = 0; pos < text.size();) {
    ++line;
    std::size_t end = text.find('\n', pos);
    std::string_view piece =
        text.substr(pos, end == std::string_view::npos ? std::string_view::npos : end - pos);
    pos = end == std::string_view::npos ? text.size() : end + 1;
    std::size_t start = piece.find_first_not_of(" \t\r");
    if (start == std::string_view::npos || piece[start] != '{') continue;
    json event = json::parse(piece.substr(start), nullptr, false);
    if (!event.is_object()) continue;
    try {
      visit(event, line);
    } catch (const json::exception&) {
      // An event not of the shape its CLI documents is no action: no real
      // CLI writes one, and a hostile line must not take the scan down.
    }
  }
}

// A tool call by its tool's name and input, as Claude Code and opencode
// name them (case-insensitively: Claude's `Read`, opencode's `read`).
void tool_action(std::string tool, const json& input, int line, std::vector<AgentAction>& out) {
  for (char& c : tool) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  std::string path = text_at(input, {"file_path", "filePath", "notebook_path", "path"});
  if (tool == "bash" || tool == "shell" || tool == "local_shell") {
    std::string command = text_at(input, {"command", "cmd"});
    if (command.empty() && input.is_object() && input.contains("command") && input["command"].is_array()) {
      for (const json& part : input["command"])
        if (part.is_string()) command += (command.empty() ? "" : " ") + part.get<std::string>();
    }
    out.push_back({Kind::kShell, command, "", line});
  } else if (tool == "read" || tool == "view" || tool == "cat") {
    out.push_back({Kind::kRead, path, "", line});
  } else if (tool == "write" || tool == "create") {
    out.push_back({Kind::kWrite, path, text_at(input, {"content", "text"}), line});
  } else if (tool == "edit" || tool == "multiedit" || tool == "notebookedit" || tool == "patch") {
    std::string content = text_at(input, {"new_string", "newString", "new_source", "patch"});
    if (input.is_object() && input.contains("edits") && input["edits"].is_array()) {
      for (const json& edit : input["edits"]) content += text_at(edit, {"new_string", "newString"}) + "\n";
    }
    out.push_back({Kind::kEdit, path, content, line});
  } else if (tool == "ls" || tool == "list") {
    out.push_back({Kind::kList, path.empty() ? "." : path, "", line});
  } else if (tool == "glob" || tool == "grep" || tool == "search" || tool == "find") {
    std::string pattern = text_at(input, {"pattern", "query", "glob"});
    out.push_back({Kind::kSearch, path.empty() ? pattern : path + " " + pattern, "", line});
  } else if (tool == "webfetch" || tool == "fetch" || tool == "websearch" || tool == "web_search") {
    out.push_back({Kind::kFetch, text_at(input, {"url", "query"}), "", line});
  }
}

std::vector<AgentAction> claude_actions(std::string_view text) {
  std::vector<AgentAction> out;
  for_each_line_event(text, [&](const json& event, int line) {
    if (event.value("type", "") != "assistant") return;
    const json message = event.value("message", json::object());
    for (const json& block : message.value("content", json::array())) {
      if (block.is_object() && block.value("type", "") == "tool_use")
        tool_action(block.value("name", ""), block.value("input", json::object()), line, out);
    }
  });
  return out;
}

std::vector<AgentAction> opencode_actions(std::string_view text) {
  std::vector<AgentAction> out;
  for_each_line_event(text, [&](const json& event, int line) {
    if (event.value("type", "") != "tool_use") return;
    const json part = event.value("part", json::object());
    const json state = part.value("state", json::object());
    tool_action(part.value("tool", ""), state.value("input", json::object()), line, out);
  });
  return out;
}

// An export is one document: messages, each with parts; a tool part holds
// its call's input. Its line is the part's 1-based position in the session.
std::vector<AgentAction> opencode_export_actions(std::string_view text) {
  std::vector<AgentAction> out;
  json doc = json::parse(text, nullptr, false);
  if (!doc.is_object()) return out;
  int position = 0;
  auto messages = doc.find("messages");
  if (messages == doc.end() || !messages->is_array()) return out;
  for (const json& message : *messages) {
    if (!message.is_object()) continue;
    auto parts = message.find("parts");
    if (parts == message.end() || !parts->is_array()) continue;
    for (const json& part : *parts) {
      ++position;
      try {
        if (!part.is_object() || part.value("type", "") != "tool") continue;
        const json state = part.value("state", json::object());
        tool_action(part.value("tool", ""), state.value("input", json::object()), position, out);
      } catch (const json::exception&) {
        // A part not of the documented shape is no action (see for_each_line_event).
      }
    }
  }
  return out;
}

std::vector<AgentAction> codex_actions(std::string_view text) {
  std::vector<AgentAction> out;
  std::set<std::string> seen;  // an item is started, then completed: once
  for_each_line_event(text, [&](const json& event, int line) {
    std::string type = event.value("type", "");
    if (type != "item.started" && type != "item.completed") return;
    const json item = event.value("item", json::object());
    std::string id = item.value("id", "");
    std::string kind = item.value("type", item.value("item_type", ""));
    if (!id.empty() && !seen.insert(id + "/" + kind).second) return;
    if (kind == "command_execution") {
      out.push_back({Kind::kShell, item.value("command", ""), "", line});
    } else if (kind == "file_change") {
      for (const json& change : item.value("changes", json::array()))
        out.push_back({Kind::kEdit, text_at(change, {"path"}), "", line});
    } else if (kind == "web_search") {
      out.push_back({Kind::kFetch, item.value("query", ""), "", line});
    } else if (kind == "mcp_tool_call") {
      tool_action(item.value("tool", ""), item.value("arguments", json::object()), line, out);
    }
  });
  return out;
}

// A command agent's output: each line may be a command it echoed (set -x)
// or something it printed; each is read as a shell line.
std::vector<AgentAction> text_actions(std::string_view text) {
  std::vector<AgentAction> out;
  int line = 0;
  for (std::size_t pos = 0; pos < text.size();) {
    ++line;
    std::size_t end = text.find('\n', pos);
    std::string_view piece =
        text.substr(pos, end == std::string_view::npos ? std::string_view::npos : end - pos);
    pos = end == std::string_view::npos ? text.size() : end + 1;
    if (piece.find_first_not_of(" \t\r") == std::string_view::npos) continue;
    if (piece.starts_with('+'))
      piece.remove_prefix(std::min(piece.size(), piece.find_first_not_of("+ ")));  // set -x
    out.push_back({Kind::kShell, std::string(piece), "", line, /*printed=*/true});
  }
  return out;
}

}  // namespace

std::vector<AgentAction> read_actions(std::string_view text, TranscriptFormat format) {
  switch (format) {
    case TranscriptFormat::kOpencode: return opencode_actions(text);
    case TranscriptFormat::kOpencodeExport: return opencode_export_actions(text);
    case TranscriptFormat::kClaude: return claude_actions(text);
    case TranscriptFormat::kCodex: return codex_actions(text);
    case TranscriptFormat::kText: return text_actions(text);
  }
  return {};
}

}  // namespace kgym::agent
