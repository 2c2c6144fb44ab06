#include "agent/transcript.h"

#include <functional>

#include <nlohmann/json.hpp>

namespace kgym::agent {
namespace {

using nlohmann::json;

void for_each_event(std::string_view text, const std::function<void(const json&)>& visit) {
  for (std::size_t pos = 0; pos < text.size();) {
    std::size_t end = text.find('\n', pos);
    std::string_view line =
        text.substr(pos, end == std::string_view::npos ? std::string_view::npos : end - pos);
    pos = end == std::string_view::npos ? text.size() : end + 1;
    std::size_t start = line.find_first_not_of(" \t\r");
    if (start == std::string_view::npos || line[start] != '{') continue;
    json event = json::parse(line.substr(start), nullptr, false);
    if (!event.is_object()) continue;
    try {
      visit(event);
    } catch (const json::exception&) {
      // An event not of the shape its CLI documents (a number where a name
      // goes) counts for nothing: the stream is as hostile as the agent.
    }
  }
}

// Adds the integer at `key` of `object` (when there is one) to `total`.
void add(std::optional<std::int64_t>& total, const json& object, const char* key) {
  if (!object.is_object()) return;
  auto it = object.find(key);
  // Integers only: a huge float converted to an integer is undefined.
  if (it == object.end() || !it->is_number_integer()) return;
  total = total.value_or(0) + it->get<std::int64_t>();
}

void add_cost(std::optional<double>& total, const json& object, const char* key) {
  if (!object.is_object()) return;
  auto it = object.find(key);
  if (it == object.end() || !it->is_number()) return;
  total = total.value_or(0.0) + it->get<double>();
}

void count(std::optional<std::int64_t>& total) { total = total.value_or(0) + 1; }

void note_session(Usage& usage, const json& event, const char* key) {
  if (auto it = event.find(key); it != event.end() && it->is_string())
    usage.session_id = it->get<std::string>();
}

}  // namespace

Usage parse_opencode_stream(std::string_view text) {
  Usage usage;
  for_each_event(text, [&](const json& event) {
    note_session(usage, event, "sessionID");
    std::string type = event.value("type", "");
    const json part = event.value("part", json::object());
    if (type == "tool_use") {
      count(usage.tool_calls);
    } else if (type == "step_finish") {
      const json tokens = part.value("tokens", json::object());
      add(usage.tokens_in, tokens, "input");
      add(usage.tokens_out, tokens, "output");
      add(usage.tokens_out, tokens, "reasoning");
      const json cache = tokens.value("cache", json::object());
      if (usage.tokens_in) {
        add(usage.tokens_in, cache, "read");
        add(usage.tokens_in, cache, "write");
      }
      add_cost(usage.cost, part, "cost");
    }
  });
  return usage;
}

Usage parse_claude_stream(std::string_view text) {
  Usage usage;
  for_each_event(text, [&](const json& event) {
    note_session(usage, event, "session_id");
    std::string type = event.value("type", "");
    if (type == "assistant") {
      const json message = event.value("message", json::object());
      for (const json& block : message.value("content", json::array())) {
        if (block.is_object() && block.value("type", "") == "tool_use") count(usage.tool_calls);
      }
    } else if (type == "result") {
      const json u = event.value("usage", json::object());
      add(usage.tokens_in, u, "input_tokens");
      if (usage.tokens_in) {
        add(usage.tokens_in, u, "cache_creation_input_tokens");
        add(usage.tokens_in, u, "cache_read_input_tokens");
      }
      add(usage.tokens_out, u, "output_tokens");
      add_cost(usage.cost, event, "total_cost_usd");
    }
  });
  return usage;
}

Usage parse_codex_stream(std::string_view text) {
  Usage usage;
  for_each_event(text, [&](const json& event) {
    note_session(usage, event, "thread_id");
    std::string type = event.value("type", "");
    if (type == "turn.completed") {
      const json u = event.value("usage", json::object());
      add(usage.tokens_in, u, "input_tokens");  // includes cached_input_tokens
      add(usage.tokens_out, u, "output_tokens");
    } else if (type == "item.completed") {
      const json it = event.value("item", json::object());
      std::string item = it.value("type", it.value("item_type", ""));  // older releases: item_type
      if (item == "command_execution" || item == "file_change" || item == "mcp_tool_call" ||
          item == "web_search")
        count(usage.tool_calls);
    }
  });
  return usage;
}

std::string json_lines(std::string_view text) {
  std::string out;
  for_each_event(text, [&](const json& event) { out += event.dump() + "\n"; });
  return out;
}

}  // namespace kgym::agent
