#!/usr/bin/env bash
# labels: e2e needs-npm
# The real opencode CLI (npm package opencode-ai 1.18.33, pinned, installed into a cache dir
# next to the kgym binary, never globally) run by `kgym run` with the
# opencode profile against a scripted OpenAI-compatible server on 127.0.0.1
# (tests/integration/mock_openai_server.py): the server answers with a
# `write` tool call holding a stored sample solution, opencode writes it,
# kgym verifies it and reports pass, with the usage opencode reported. It
# runs inside the default agent sandbox (bwrap where it works): the config
# file lies in the host's /tmp, which the box replaces by its own, and the
# CLI in kgym's build tree, which the box hides; both are shown read-only as
# the profile's files, and opencode keeps its data in the case's private home.
# Skipped (exit 77) when npm or the registry is unavailable.
source "$(dirname "$0")/lib.sh"

OPENCODE="$(npm_cli opencode opencode-ai 1.18.33 opencode)" || exit 77
VERSION="$("$OPENCODE" --version 2>/dev/null)"
echo "opencode $VERSION: $OPENCODE"

S="$SRC/data/sample"
/usr/bin/python3 "$SRC/tests/integration/mock_openai_server.py" "$S/solutions/level1/1_ReLU/model_new.py" \
  "$TMP/port" "$TMP/requests.jsonl" &
MOCK=$!
trap 'kill $MOCK 2>/dev/null; rm -rf "$TMP"' EXIT
for _ in $(seq 50); do [ -s "$TMP/port" ] && break; sleep 0.1; done
PORT="$(cat "$TMP/port")"

cat >"$TMP/opencode.json" <<JSON
{
  "\$schema": "https://opencode.ai/config.json",
  "provider": {
    "mock": {
      "npm": "@ai-sdk/openai-compatible",
      "name": "kgym mock",
      "options": {"baseURL": "http://127.0.0.1:$PORT/v1", "apiKey": "kgym-test"},
      "models": {"kgym-mock": {"name": "kgym mock", "tool_call": true, "cost": {"input": 3, "output": 15}}}
    }
  },
  "small_model": "mock/kgym-mock",
  "permission": {"edit": "allow", "bash": "allow"},
  "autoupdate": false,
  "share": "disabled"
}
JSON
cat >"$TMP/oc.yaml" <<YAML
bench_dir: $S
cases: "1"
output: {root_dir: $TMP/runs, run_name: oc}
agent:
  kind: opencode
  binary: $OPENCODE
  model: mock/kgym-mock
  opencode_agent: build
  timeout_sec: 300
  env:
    OPENCODE_CONFIG: $TMP/opencode.json
    OPENCODE_DISABLE_MODELS_FETCH: "1"
verifier: {mode: correctness}
YAML
RUN="$TMP/runs/oc"
C="$RUN/cases/level1/1_ReLU"
expect_exit 0 "kgym run with the real opencode CLI" "$KGYM" run --config "$TMP/oc.yaml"
expect_verdict "$C/result.json" pass
check "the mock was asked for a tool call, then answered with text" \
  test "$(sed -nE 's/.*"answer": "([a-z_]+)".*/\1/p' "$TMP/requests.jsonl" | sort -u | tr '\n' ' ')" = "text tool_call "
check "opencode wrote the candidate with its write tool" cmp -s "$C/candidate/model_new.py" "$S/solutions/level1/1_ReLU/model_new.py"
check "the transcript holds opencode's events" grep -q '"type":"tool_use"' "$C/session/transcript.jsonl"
check "the session export was kept" sh -c "grep -q '\"title\": \"kgym level1/1_ReLU\"' '$C'/session/opencode-export-ses_*.json"
check "tokens in from opencode's two steps" grep -q '"in": 2000' "$C/result.json"
check "tokens out" grep -q '"out": 100' "$C/result.json"
check "the tool call was counted" grep -q '"tool_calls": 1' "$C/result.json"
check "the honest session raised no transcript flag" grep -q '"transcript_flags": \[\]' "$C/result.json"
check "cost as opencode computed it" grep -q '"cost": 0.0075' "$C/result.json"
check "the CLI version is recorded" grep -q "\"agent_version\": \"$VERSION\"" "$C/result.json"
if bwrap --ro-bind / / --dev /dev --proc /proc --unshare-pid --unshare-net true 2>/dev/null; then
  expect_output "isolation: agent bwrap" "the agent ran in the bwrap box"
  check "opencode kept its data in the case's private home" test -d "$C/agent_home/.local/share/opencode"
fi
finish
