#!/usr/bin/env bash
# labels: e2e sanitize
# Agent profiles: the CLI is checked before any work (exit 2); a run with
# the claude profile against a stand-in CLI that prints a recorded
# stream-json transcript: the usage lands in result.json and summary.json,
# with provenance (CLI version, model, profile, prompt hash).
source "$(dirname "$0")/lib.sh"

S="$SRC/data/sample"
cat >"$TMP/missing.yaml" <<YAML
bench_dir: $S
cases: "1"
output: {root_dir: $TMP/runs, run_name: missing}
agent: {kind: opencode, binary: $TMP/bin/opencode}
YAML
expect_exit 2 "a profile whose CLI is missing is a config error" "$KGYM" run --config "$TMP/missing.yaml"
expect_output "agent.binary': the opencode CLI '$TMP/bin/opencode' is not an executable file; install it \(npm install -g opencode-ai\)" "the error names the key and how to install"
check "nothing was started" test ! -e "$TMP/runs/missing"

mkdir -p "$TMP/bin"
# A stand-in for `claude -p`: checks its flags, writes the candidate, prints
# a stream-json transcript like the real CLI's.
cat >"$TMP/bin/claude" <<'SH'
#!/usr/bin/env bash
if [ "$1" = "--version" ]; then echo "2.0.14 (Claude Code)"; exit 0; fi
args="$*"
case "$args" in *"--output-format stream-json --verbose"*) ;; *) echo "bad flags: $args" >&2; exit 9 ;; esac
case "$args" in *"--model sonnet-test"*) ;; *) echo "no model: $args" >&2; exit 9 ;; esac
case "$args" in *"-p "*SPEC.md*) ;; *) echo "no prompt: $args" >&2; exit 9 ;; esac
cp "$SOLUTIONS/level1/${KGYM_CASE_ID#level1/}/model_new.py" model_new.py
echo '{"type":"system","subtype":"init","session_id":"s-1","model":"sonnet-test"}'
echo '{"type":"assistant","message":{"content":[{"type":"tool_use","id":"t1","name":"Write","input":{}}]},"session_id":"s-1"}'
echo '{"type":"result","subtype":"success","session_id":"s-1","total_cost_usd":0.25,"usage":{"input_tokens":100,"cache_creation_input_tokens":0,"cache_read_input_tokens":900,"output_tokens":50}}'
SH
chmod +x "$TMP/bin/claude"
cat >"$TMP/claude.yaml" <<YAML
bench_dir: $S
cases: "1,2"
output: {root_dir: $TMP/runs, run_name: claude}
sandbox: {agent_read_only: ["$S/solutions"]}  # the stored answers this scripted agent copies
agent:
  kind: claude
  binary: $TMP/bin/claude
  model: sonnet-test
  env: {SOLUTIONS: "$S/solutions"}
verifier: {mode: correctness}
YAML
RUN="$TMP/runs/claude"
expect_exit 1 "a run with the claude profile (2_LeakyReLU's stored solution is a cheat)" "$KGYM" run --config "$TMP/claude.yaml"
expect_output "agent: +$TMP/bin/claude \(2.0.14 \(Claude Code\)\)" "the CLI version is printed"
R="$RUN/cases/level1/1_ReLU/result.json"
expect_verdict "$R" pass
check "tokens in (cache reads included)" grep -q '"in": 1000' "$R"
check "tokens out" grep -q '"out": 50' "$R"
check "cost" grep -q '"cost": 0.25' "$R"
check "tool calls" grep -q '"tool_calls": 1' "$R"
check "profile" grep -q '"agent": "claude"' "$R"
check "CLI version" grep -q '"agent_version": "2.0.14 (Claude Code)"' "$R"
check "model" grep -q '"model": "sonnet-test"' "$R"
check "prompt hash" grep -qE '"prompt_sha256": "[0-9a-f]{64}"' "$R"
check "prompt hash is the prompt's" grep -q "$(sha256sum "$RUN/cases/level1/1_ReLU/prompt.md" | cut -c1-64)" "$R"
check "the transcript is kept" grep -q '"total_cost_usd":0.25' "$RUN/cases/level1/1_ReLU/session/transcript.jsonl"
check "summary totals the cost" grep -q '"cost": 0.5' "$RUN/summary.json"
expect_verdict "$RUN/cases/level1/2_LeakyReLU/result.json" fail_cheat
check "summary: cost per passed case (0.5 spent, 1 passed)" grep -q '"cost_per_pass": 0.5' "$RUN/summary.json"
check "summary.md shows agent usage" grep -q "## Agent usage" "$RUN/summary.md"
finish
