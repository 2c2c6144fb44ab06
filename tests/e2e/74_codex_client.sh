#!/usr/bin/env bash
# labels: e2e needs-npm
# The real Codex CLI (npm package @openai/codex, pinned, installed into a
# cache dir next to the kgym binary, never globally) run by `kgym run` with
# the codex profile against a scripted OpenAI Responses API on 127.0.0.1
# (tests/integration/mock_openai_responses_server.py, streamed as
# server-sent events): the server answers with a call of Codex's apply_patch
# tool that adds a stored sample solution, Codex applies it, kgym verifies it
# and reports pass, with the usage from Codex's `turn.completed` events (and
# no cost: Codex reports none). The provider is given with `-c` overrides in
# agent.extra_args, so no config file has to be shown to the box. It runs
# inside the default agent sandbox (bwrap where it works): the CLI in kgym's
# build tree, which the box hides, is shown read-only as the profile's files,
# and Codex keeps its state in the case's private home.
# Skipped (exit 77) when npm or the registry is unavailable or the CLI does
# not run here.
source "$(dirname "$0")/lib.sh"

CODEX="$(npm_cli codex @openai/codex 0.171.0 codex)" || exit 77
VERSION="$("$CODEX" --version 2>/dev/null | head -n 1)"
echo "$VERSION: $CODEX"

S="$SRC/data/sample"
SOLUTION="$S/solutions/level1/1_ReLU/model_new.py"
/usr/bin/python3 "$SRC/tests/integration/mock_openai_responses_server.py" "$SOLUTION" "$TMP/port" "$TMP/requests.jsonl" &
MOCK=$!
# Codex 0.171 will not set up its helpers (apply_patch under its own
# workspace-write sandbox) in a CODEX_HOME below the temp dir: its file
# changes then fail. The case's private home lies in the run dir, so the run
# dir is kept out of /tmp: next to the CLI, or in /var/tmp when the build
# tree itself lies in /tmp.
runs_parent="$(dirname "$(dirname "$(dirname "$(dirname "$CODEX")")")")"  # the test cache
case "$(realpath -m "$runs_parent")/" in /tmp/*) runs_parent=/var/tmp ;; esac
RUNS="$(mktemp -d "$runs_parent/codex-runs.XXXXXX")"
trap 'kill $MOCK 2>/dev/null; [ -n "${KGYM_E2E_KEEP:-}" ] || rm -rf "$TMP" "$RUNS"' EXIT
for _ in $(seq 50); do [ -s "$TMP/port" ] && break; sleep 0.1; done
PORT="$(cat "$TMP/port")"

# gpt-5.5 is a model of Codex's bundled catalog, whose metadata offers the
# apply_patch tool; the mock only answers to the name.
cat >"$TMP/cx.yaml" <<YAML
bench_dir: $S
cases: "1"
output: {root_dir: $RUNS, run_name: cx}
agent:
  kind: codex
  binary: $CODEX
  model: gpt-5.5
  timeout_sec: 300
  extra_args:
    - -c
    - model_provider="kgym_mock"
    - -c
    - model_providers.kgym_mock.name="kgym mock"
    - -c
    - model_providers.kgym_mock.base_url="http://127.0.0.1:$PORT/v1"
    - -c
    - model_providers.kgym_mock.wire_api="responses"
    - -c
    - model_providers.kgym_mock.env_key="KGYM_MOCK_API_KEY"
  env:
    KGYM_MOCK_API_KEY: kgym-test
verifier: {mode: correctness}
YAML
RUN="$RUNS/cx"
C="$RUN/cases/level1/1_ReLU"
T="$C/session/transcript.jsonl"
expect_exit 0 "kgym run with the real Codex CLI" "$KGYM" run --config "$TMP/cx.yaml"
expect_verdict "$C/result.json" pass
check "the mock was asked for a tool call, then answered with text" \
  test "$(sed -nE 's/.*"answer": "(tool_call|text)".*/\1/p' "$TMP/requests.jsonl" | sort -u | tr '\n' ' ')" = "text tool_call "
check "Codex offered apply_patch as a freeform tool" grep -q '"custom:apply_patch"' "$TMP/requests.jsonl"
check "Codex wrote the candidate with apply_patch" cmp -s "$C/candidate/model_new.py" "$SOLUTION"
check "the transcript holds Codex's events" grep -q '"type":"turn.completed"' "$T"
check "the transcript holds the completed file change" grep -q '"status":"completed","type":"file_change"' "$T"
# Two model calls of 1000 tokens in (200 of them cached) and 50 out each.
check "tokens in from turn.completed (cached included)" grep -q '"in": 2000,' "$C/result.json"
check "tokens out" grep -q '"out": 100' "$C/result.json"
check "no cost: Codex reports none" grep -q '"cost": null' "$C/result.json"
check "the tool call was counted" grep -q '"tool_calls": 1' "$C/result.json"
check "the honest session raised no transcript flag" grep -q '"transcript_flags": \[\]' "$C/result.json"
check "the CLI version is recorded" grep -qF "\"agent_version\": \"$VERSION\"" "$C/result.json"
if bwrap --ro-bind / / --dev /dev --proc /proc --unshare-pid --unshare-net true 2>/dev/null; then
  expect_output "isolation: agent bwrap" "the agent ran in the bwrap box"
  check "Codex kept its sessions in the case's private home" test -d "$C/agent_home/.codex/sessions"
fi

# Two refinement rounds (agent.feedback): the mock adds a wrong kernel first
# and replaces it with the right one once kgym's feedback is in the input;
# round 2 continues Codex's session (codex exec ... resume --last), so the
# mock sees round 1's apply_patch call in it.
doubled_relu "$TMP/wrong.py"
/usr/bin/python3 "$SRC/tests/integration/mock_openai_responses_server.py" "$SOLUTION" "$TMP/port2" \
  "$TMP/requests2.jsonl" "$TMP/wrong.py" &
MOCK2=$!
trap 'kill $MOCK $MOCK2 2>/dev/null; [ -n "${KGYM_E2E_KEEP:-}" ] || rm -rf "$TMP" "$RUNS"' EXIT
for _ in $(seq 50); do [ -s "$TMP/port2" ] && break; sleep 0.1; done
sed -e "s/127.0.0.1:$PORT/127.0.0.1:$(cat "$TMP/port2")/" -e 's/run_name: cx}/run_name: rounds}/' \
  -e 's/^  timeout_sec: 300$/  timeout_sec: 300\n  feedback: {rounds: 2}/' "$TMP/cx.yaml" >"$TMP/rounds.yaml"
C="$RUNS/rounds/cases/level1/1_ReLU"
expect_exit 0 "kgym run with two rounds of Codex" "$KGYM" run --config "$TMP/rounds.yaml"
expect_verdict "$C/result.json" pass
check "round 1 failed, round 2 passed" json_true "$C/result.json" \
  '[x["verdict"] for x in r["rounds"]] == ["fail_correctness", "pass"]' \
  '[[x["verdict"], x["reason"]] for x in r["rounds"]]'
check "round 2's prompt reached the mock in the continued session, with round 1's apply_patch" \
  json_lines_any "$TMP/requests2.jsonl" 'r.get("feedback") and r.get("earlier_turn") and r["answer"] == "tool_call"'
check "the agent's tokens add up over both rounds" json_true "$C/result.json" \
  'r["rounds"][0]["tokens"] > 0 and r["rounds"][1]["tokens"] > 0 and r["generation"]["tokens"]["in"] + r["generation"]["tokens"]["out"] == r["rounds"][0]["tokens"] + r["rounds"][1]["tokens"]'
finish
