#!/usr/bin/env bash
# labels: e2e sanitize
# Transcript scanning in a run: a scripted command agent that inspects the
# processes (`ps`, echoed by set -x into its output) is flagged with
# transcript.process_tampering; under agent.transcript_policy warn the case
# still passes with the flag recorded and counted, under fail it is
# fail_cheat by the transcript layer. An honest agent raises nothing.
source "$(dirname "$0")/lib.sh"

S="$SRC/data/sample"
cat >"$TMP/agent.sh" <<'SH'
#!/usr/bin/env bash
set -eu
case "$KGYM_CASE_ID" in
  */1_ReLU) set -x; ps >/dev/null 2>&1 || true ;;
esac
cp "$SOLUTIONS/level1/$(basename "$KGYM_CASE_ID")/model_new.py" model_new.py
SH
chmod +x "$TMP/agent.sh"
config() {  # RUN_NAME POLICY
  cat >"$TMP/$1.yaml" <<YAML
bench_dir: $S
cases: "1,5"
output: {root_dir: $TMP/runs, run_name: $1}
agent:
  kind: command
  argv: ["$TMP/agent.sh"]
  env: {SOLUTIONS: "$S/solutions"}
  transcript_policy: $2
verifier: {mode: correctness}
sandbox: {agent_read_only: ["$S/solutions"]}
YAML
}

config warn warn
expect_exit 0 "a run whose agent inspects processes, policy warn" "$KGYM" run --config "$TMP/warn.yaml"
W="$TMP/runs/warn"
expect_verdict "$W/cases/level1/1_ReLU/result.json" pass
check "the flag is recorded with its evidence and place" test \
  "$(json_get "$W/cases/level1/1_ReLU/result.json" '[(f["rule"], f["evidence"], f["file"], f["line"] > 0) for f in r["generation"]["transcript_flags"]]')" \
  = '[["transcript.process_tampering", "output: ps", "agent.log", true]]'
check "the honest agent raised nothing" test \
  "$(json_get "$W/cases/level1/5_Matmul/result.json" 'r["generation"]["transcript_flags"]')" = "[]"
check "summary.json counts it" test \
  "$(json_get "$W/summary.json" '[r["totals"]["transcript_flagged_cases"], r["totals"]["transcript_flags"]]')" \
  = '[1, {"transcript.process_tampering": 1}]'
check "summary.md lists it" grep -q '| `transcript.process_tampering` | 1 |' "$W/summary.md"
check "report.html shows it" grep -q "transcript flags" "$W/report.html"

config fail fail
expect_exit 1 "the same run, policy fail" "$KGYM" run --config "$TMP/fail.yaml"
F="$TMP/runs/fail"
expect_verdict "$F/cases/level1/1_ReLU/result.json" fail_cheat
check "by the transcript layer" test \
  "$(json_get "$F/cases/level1/1_ReLU/result.json" 'r["cheat"]["rule"] + " " + r["cheat"]["layer"]')" \
  = "transcript.process_tampering transcript"
expect_verdict "$F/cases/level1/5_Matmul/result.json" pass
finish
