#pragma once
// Reading what an agent CLI printed: its JSON event stream (one object per
// line, other lines ignored) turned into usage figures. Each parser knows
// one CLI's format (docs/agents.md); a figure the stream does not report
// stays std::nullopt, never 0.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace kgym::agent {

struct Usage {
  std::optional<std::int64_t> tokens_in;   // prompt tokens, cached ones included
  std::optional<std::int64_t> tokens_out;  // completion tokens, reasoning included
  std::optional<double> cost;              // USD, as the CLI computed it
  std::optional<std::int64_t> tool_calls;
  std::optional<std::string> session_id;  // the last one seen
};

// `opencode run --format json`: step_finish parts carry tokens and cost,
// tool_use events count tool calls.
Usage parse_opencode_stream(std::string_view text);
// `claude -p --output-format stream-json --verbose`: result events carry
// usage and total_cost_usd; tool_use blocks of assistant messages count.
Usage parse_claude_stream(std::string_view text);
// `codex exec --json`: turn.completed events carry usage; completed
// command_execution, file_change, mcp_tool_call and web_search items count
// as tool calls. Codex reports no cost.
Usage parse_codex_stream(std::string_view text);

// The lines of `text` that are JSON objects, each ending in '\n'.
std::string json_lines(std::string_view text);

}  // namespace kgym::agent
