// Every agent transcript parser (agent/transcript*.cc): the usage read off
// opencode's, Claude Code's and Codex's JSON event streams, and the actions
// read off each transcript format then scanned by every rule. A transcript
// is what an agent printed, so it is as hostile as the agent.
#include "agent/transcript.h"
#include "agent/transcript_scan.h"
#include "fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace kgym::agent;
  std::string_view text = kgym::fuzz::as_text(data, size);
  for (auto parse : {parse_opencode_stream, parse_claude_stream, parse_codex_stream}) {
    Usage usage = parse(text);
    if (usage.tool_calls && *usage.tool_calls < 0) kgym::fuzz::contract_broken("a negative tool call count");
  }
  (void)json_lines(text);

  static const ScanContext context = [] {
    ScanContext c;
    c.workspace = "/runs/r/cases/level1/19_ReLU/workspace";
    c.home = "/runs/r/cases/level1/19_ReLU/home";
    c.case_stem = "19_ReLU";
    c.artifacts = {"model_new.py"};
    c.allowed = {"/opt/solutions"};
    c.off_limits = {"/bench", "/runs", "/usr/local/bin/kgym"};
    return c;
  }();
  for (TranscriptFormat format :
       {TranscriptFormat::kOpencode, TranscriptFormat::kOpencodeExport, TranscriptFormat::kClaude,
        TranscriptFormat::kCodex, TranscriptFormat::kText}) {
    std::vector<AgentAction> actions = read_actions(text, format);
    for (const AgentAction& a : actions) {
      if (a.line < 1) kgym::fuzz::contract_broken("an action off the transcript");
    }
    for (const kgym::TranscriptFlag& flag : scan_actions(actions, context, "agent.log")) {
      if (flag.rule.empty()) kgym::fuzz::contract_broken("a flag without its rule");
    }
  }
  return 0;
}
