#include "agent/transcript.h"

#include <gtest/gtest.h>

#include "util/fs.h"

namespace kgym::agent {
namespace {

std::string stream(const std::string& name) {
  auto text = util::read_file(std::filesystem::path(KGYM_SOURCE_DIR) / "tests/data/agent_streams" / name);
  EXPECT_TRUE(text.has_value()) << name;
  return text.value_or("");
}

TEST(Transcript, OpencodeSumsStepsAndCountsTools) {
  Usage u = parse_opencode_stream(stream("opencode.jsonl"));
  EXPECT_EQ(u.tokens_in, 1200 + 800 + 100 + 1900);  // input plus cache reads and writes
  EXPECT_EQ(u.tokens_out, 300 + 50 + 20);           // output plus reasoning
  ASSERT_TRUE(u.cost.has_value());
  EXPECT_DOUBLE_EQ(*u.cost, 0.0125 + 0.0025);
  EXPECT_EQ(u.tool_calls, 2);
  EXPECT_EQ(u.session_id, "ses_4947190a1ffeAbCdEf");
}

TEST(Transcript, ClaudeTakesTheResultEvent) {
  Usage u = parse_claude_stream(stream("claude.jsonl"));
  EXPECT_EQ(u.tokens_in, 22 + 5000 + 12000);
  EXPECT_EQ(u.tokens_out, 440);
  ASSERT_TRUE(u.cost.has_value());
  EXPECT_DOUBLE_EQ(*u.cost, 0.0731);
  EXPECT_EQ(u.tool_calls, 3);
  EXPECT_EQ(u.session_id, "9c2f8a4e-1b3d-4c5e-8f6a-7b8c9d0e1f2a");
}

TEST(Transcript, CodexReportsTokensButNoCost) {
  Usage u = parse_codex_stream(stream("codex.jsonl"));
  EXPECT_EQ(u.tokens_in, 24763);
  EXPECT_EQ(u.tokens_out, 122);
  EXPECT_FALSE(u.cost.has_value());
  EXPECT_EQ(u.tool_calls, 2);  // the command (counted once, when completed) and the file change
  EXPECT_EQ(u.session_id, "0199a213-81c0-7800-8aa1-bbab2a035a53");
}

// The real CLIs' streams, captured by the e2e tests 73 and 74 against local
// model servers that answer every call with 1000 tokens in and 50 out.
std::string captured(const std::string& cli) {
  auto text = util::read_file(std::filesystem::path(KGYM_SOURCE_DIR) / "tests/transcripts" / cli /
                              "honest_write_kernel.jsonl");
  EXPECT_TRUE(text.has_value()) << cli;
  return text.value_or("");
}

TEST(Transcript, ClaudeCode2_1_332Stream) {
  Usage u = parse_claude_stream(captured("claude"));
  EXPECT_EQ(u.tokens_in, 2000);
  EXPECT_EQ(u.tokens_out, 100);
  ASSERT_TRUE(u.cost.has_value());
  EXPECT_DOUBLE_EQ(*u.cost, 0.0075);  // priced by Claude Code as claude-sonnet-4-5
  EXPECT_EQ(u.tool_calls, 1);         // the Write
  EXPECT_TRUE(u.session_id.has_value());
}

TEST(Transcript, Codex0_171Stream) {
  Usage u = parse_codex_stream(captured("codex"));
  EXPECT_EQ(u.tokens_in, 2000);  // 400 of them cached
  EXPECT_EQ(u.tokens_out, 100);
  EXPECT_FALSE(u.cost.has_value());
  EXPECT_EQ(u.tool_calls, 1);  // the apply_patch, a completed file_change item
  EXPECT_TRUE(u.session_id.has_value());
}

TEST(Transcript, Opencode1_18Stream) {
  Usage u = parse_opencode_stream(captured("opencode"));
  EXPECT_EQ(u.tokens_in, 2000);
  EXPECT_EQ(u.tokens_out, 100);
  ASSERT_TRUE(u.cost.has_value());
  EXPECT_DOUBLE_EQ(*u.cost, 0.0075);
  EXPECT_EQ(u.tool_calls, 1);
  EXPECT_TRUE(u.session_id.has_value());
}

TEST(Transcript, NothingReportedStaysAbsent) {
  Usage u = parse_claude_stream("plain text\n{not json\n[1,2]\n");
  EXPECT_FALSE(u.tokens_in.has_value());
  EXPECT_FALSE(u.tokens_out.has_value());
  EXPECT_FALSE(u.cost.has_value());
  EXPECT_FALSE(u.tool_calls.has_value());
}

TEST(Transcript, JsonLinesKeepsOnlyObjects) {
  EXPECT_EQ(json_lines("noise\n{\"a\": 1}\n  {\"b\":2}\r\n{broken\n"), "{\"a\":1}\n{\"b\":2}\n");
}

// Found by fuzzing (fuzz/transcript_fuzz.cc): a field of another type than
// the CLI writes threw out of the parser and took kgym down.
TEST(Transcript, EventsOfAnotherShapeCountForNothing) {
  const std::string hostile =
      "{\"type\": 1}\n"
      "{\"type\": \"assistant\", \"message\": \"text\"}\n"
      "{\"type\": \"assistant\", \"message\": {\"content\": [{\"type\": [\"tool_use\"]}]}}\n"
      "{\"type\": \"result\", \"usage\": [1, 2], \"total_cost_usd\": \"free\"}\n"
      "{\"type\": \"step_finish\", \"part\": {\"tokens\": {\"input\": 1e300}}}\n"
      "{\"type\": \"turn.completed\", \"usage\": {\"input_tokens\": 1e300}}\n"
      "{\"type\": \"item.completed\", \"item\": \"command_execution\"}\n";
  const std::string valid =
      "{\"type\":\"assistant\",\"message\":{\"content\":[{\"type\":\"tool_use\",\"name\":\"Read\","
      "\"input\":{\"file_path\":\"SPEC.md\"}}]}}\n";
  for (auto parse : {parse_opencode_stream, parse_claude_stream, parse_codex_stream}) {
    Usage u = parse(hostile);
    EXPECT_FALSE(u.tokens_in.has_value());
    EXPECT_FALSE(u.cost.has_value());
  }
  Usage u = parse_claude_stream(hostile + valid);
  EXPECT_EQ(u.tool_calls, 1);  // the event after the hostile ones still counts
}

}  // namespace
}  // namespace kgym::agent
