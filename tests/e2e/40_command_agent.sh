#!/usr/bin/env bash
# labels: e2e sanitize
# The `command` agent kind: a program run in its own work dir, its outcome
# (ok, non-zero exit, timeout, missing artifact) kept apart from the verdict.
source "$(dirname "$0")/lib.sh"

S="$SRC/data/sample"
cat >"$TMP/agent.sh" <<'SH'
#!/usr/bin/env bash
# A scripted "agent": behaves according to the case it is given.
set -eu
case_id="$1"; work="$2"
test -s "$work/SPEC.md" && test -s "$work/task_desc.py" && test -s "$work/prompt.md"
echo "agent working on $case_id in $(pwd)"
case "$case_id" in
  */1_ReLU) cp "$SOLUTIONS/level1/1_ReLU/model_new.py" model_new.py ;;
  */4_Softmax) exit 3 ;;
  */7_RMSNorm) sleep 30 ;;
  */5_Matmul) : ;;  # writes nothing
esac
SH
chmod +x "$TMP/agent.sh"
cat >"$TMP/agent.yaml" <<YAML
bench_dir: $S
cases: "1,4,5,7"
concurrency: 2
output: {root_dir: $TMP/runs, run_name: agent}
agent:
  kind: command
  argv: ["$TMP/agent.sh", "{case_id}", "{workspace}"]
  env: {SOLUTIONS: "$S/solutions"}
  timeout_sec: 2
verifier: {mode: correctness}
sandbox: {agent_read_only: ["$S/solutions"]}  # the stored answers this scripted agent copies
YAML
RUN="$TMP/runs/agent"
expect_exit 1 "a run with a scripted command agent" "$KGYM" run --config "$TMP/agent.yaml"
expect_verdict "$RUN/cases/level1/1_ReLU/result.json" pass
expect_verdict "$RUN/cases/level1/4_Softmax/result.json" generation_failed
expect_verdict "$RUN/cases/level1/5_Matmul/result.json" generation_failed
expect_verdict "$RUN/cases/level1/7_RMSNorm/result.json" generation_failed
check "non-zero exit is its own outcome" grep -q '"outcome": "nonzero_exit"' "$RUN/cases/level1/4_Softmax/result.json"
check "a missing artifact is its own outcome" grep -q '"outcome": "missing_artifact"' "$RUN/cases/level1/5_Matmul/result.json"
check "a timeout is its own outcome" grep -q '"outcome": "timeout"' "$RUN/cases/level1/7_RMSNorm/result.json"
check "the agent's output went to agent.log" grep -q "agent working on level1/1_ReLU" "$RUN/cases/level1/1_ReLU/agent.log"
check "the candidate was copied out of the work dir" test -s "$RUN/cases/level1/1_ReLU/candidate/model_new.py"
check "no agent is left running" no_process "$TMP/agent.sh"
finish
