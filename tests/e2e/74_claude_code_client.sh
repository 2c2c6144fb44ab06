#!/usr/bin/env bash
# labels: e2e needs-npm
# The real Claude Code CLI (npm package @anthropic-ai/claude-code, pinned,
# installed into a cache dir next to the kgym binary, never globally) run by
# `kgym run` with the claude profile against a scripted Anthropic Messages
# API on 127.0.0.1 (tests/integration/mock_anthropic_server.py, streamed as
# server-sent events): the server answers with a tool_use of Claude Code's
# Write tool holding a stored sample solution, Claude Code writes it, kgym
# verifies it and reports pass, with the usage and cost from the CLI's
# `result` event. It runs inside the default agent sandbox (bwrap where it
# works): the CLI in kgym's build tree, which the box hides, is shown
# read-only as the profile's file, and Claude Code keeps its state in the
# case's private home.
# Skipped (exit 77) when npm or the registry is unavailable or the CLI does
# not run here.
source "$(dirname "$0")/lib.sh"

CLAUDE="$(npm_cli claude-code @anthropic-ai/claude-code 2.1.332 claude)" || exit 77
VERSION="$("$CLAUDE" --version 2>/dev/null | head -n 1)"
echo "claude $VERSION: $CLAUDE"

S="$SRC/data/sample"
SOLUTION="$S/solutions/level1/1_ReLU/model_new.py"
/usr/bin/python3 "$SRC/tests/integration/mock_anthropic_server.py" "$SOLUTION" "$TMP/port" "$TMP/requests.jsonl" &
MOCK=$!
trap 'kill $MOCK 2>/dev/null; [ -n "${KGYM_E2E_KEEP:-}" ] || rm -rf "$TMP"' EXIT
for _ in $(seq 50); do [ -s "$TMP/port" ] && break; sleep 0.1; done
PORT="$(cat "$TMP/port")"

# Claude Code talks to ANTHROPIC_BASE_URL only; the rest of its traffic
# (telemetry, error reports, update checks) is switched off.
cat >"$TMP/cc.yaml" <<YAML
bench_dir: $S
cases: "1"
output: {root_dir: $TMP/runs, run_name: cc}
agent:
  kind: claude
  binary: $CLAUDE
  model: claude-sonnet-4-5
  timeout_sec: 300
  env:
    ANTHROPIC_BASE_URL: http://127.0.0.1:$PORT
    ANTHROPIC_API_KEY: kgym-test
    CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: "1"
    DISABLE_AUTOUPDATER: "1"
    DISABLE_TELEMETRY: "1"
    DISABLE_ERROR_REPORTING: "1"
verifier: {mode: correctness}
YAML
RUN="$TMP/runs/cc"
C="$RUN/cases/level1/1_ReLU"
T="$C/session/transcript.jsonl"
expect_exit 0 "kgym run with the real Claude Code CLI" "$KGYM" run --config "$TMP/cc.yaml"
expect_verdict "$C/result.json" pass
check "the mock was asked for a tool call, then answered with text" \
  test "$(sed -nE 's/.*"answer": "(tool_use|text)".*/\1/p' "$TMP/requests.jsonl" | sort -u | tr '\n' ' ')" = "text tool_use "
check "Claude Code's Write tool takes file_path and content" \
  grep -q '"answer": "tool_use".*"write_input": \["content", "file_path"\]' "$TMP/requests.jsonl"
check "Claude Code wrote the candidate with its Write tool" cmp -s "$C/candidate/model_new.py" "$SOLUTION"
check "the transcript holds Claude Code's events" grep -q '"type":"result"' "$T"
check "the transcript holds the Write call" grep -q '"name":"Write"' "$T"
# The figures kgym recorded are the result event's (the mock answers every
# request with 1000 tokens in and 50 out; the CLI prices them itself).
read -r IN OUT_TOKENS COST < <(/usr/bin/python3 -c '
import json, sys
for line in open(sys.argv[1]):
    e = json.loads(line)
    if e.get("type") == "result":
        u = e["usage"]
        print(u["input_tokens"] + u["cache_creation_input_tokens"] + u["cache_read_input_tokens"],
              u["output_tokens"], e["total_cost_usd"])' "$T")
check "tokens in from the result event (two model calls)" test "$IN" = 2000
check "tokens out" test "$OUT_TOKENS" = 100
check "kgym recorded the result event's tokens" sh -c "grep -q '\"in\": $IN,' '$C/result.json' && grep -q '\"out\": $OUT_TOKENS' '$C/result.json'"
check "cost as Claude Code computed it" json_true "$C/result.json" \
  "r['generation'].get('cost') is not None and r['generation']['cost'] > 0 and abs(r['generation']['cost'] - $COST) < 1e-12"
check "the tool call was counted" grep -q '"tool_calls": 1' "$C/result.json"
check "the honest session raised no transcript flag" grep -q '"transcript_flags": \[\]' "$C/result.json"
check "the CLI version is recorded" grep -qF "\"agent_version\": \"$VERSION\"" "$C/result.json"
if bwrap --ro-bind / / --dev /dev --proc /proc --unshare-pid --unshare-net true 2>/dev/null; then
  expect_output "isolation: agent bwrap" "the agent ran in the bwrap box"
  check "Claude Code kept its state in the case's private home" test -d "$C/agent_home/.claude"
fi

# Two refinement rounds (agent.feedback): the mock writes a wrong kernel
# first and the right one once kgym's feedback is in the conversation;
# round 2 continues Claude Code's session (claude --continue), so the mock
# sees round 1's Write in it.
doubled_relu "$TMP/wrong.py"
/usr/bin/python3 "$SRC/tests/integration/mock_anthropic_server.py" "$SOLUTION" "$TMP/port2" "$TMP/requests2.jsonl" \
  "$TMP/wrong.py" &
MOCK2=$!
trap 'kill $MOCK $MOCK2 2>/dev/null; [ -n "${KGYM_E2E_KEEP:-}" ] || rm -rf "$TMP"' EXIT
for _ in $(seq 50); do [ -s "$TMP/port2" ] && break; sleep 0.1; done
sed -e "s/127.0.0.1:$PORT/127.0.0.1:$(cat "$TMP/port2")/" -e 's/run_name: cc}/run_name: rounds}/' \
  -e 's/^  timeout_sec: 300$/  timeout_sec: 300\n  feedback: {rounds: 2}/' "$TMP/cc.yaml" >"$TMP/rounds.yaml"
C="$TMP/runs/rounds/cases/level1/1_ReLU"
expect_exit 0 "kgym run with two rounds of Claude Code" "$KGYM" run --config "$TMP/rounds.yaml"
expect_verdict "$C/result.json" pass
check "round 1 failed, round 2 passed" json_true "$C/result.json" \
  '[x["verdict"] for x in r["rounds"]] == ["fail_correctness", "pass"]' \
  '[[x["verdict"], x["reason"]] for x in r["rounds"]]'
check "round 2's prompt reached the mock in the continued session, with round 1's Write" \
  json_lines_any "$TMP/requests2.jsonl" 'r.get("feedback") and r.get("earlier_turn") and r["answer"] == "tool_use"'
check "the agent's tokens add up over both rounds" json_true "$C/result.json" \
  'r["rounds"][0]["tokens"] > 0 and r["rounds"][1]["tokens"] > 0 and r["generation"]["tokens"]["in"] + r["generation"]["tokens"]["out"] == r["rounds"][0]["tokens"] + r["rounds"][1]["tokens"]'
finish
