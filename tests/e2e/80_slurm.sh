#!/usr/bin/env bash
# labels: e2e needs-slurm
# executor.kind: slurm against a real single-node Slurm (slurmctld + slurmd +
# munged started under $TMP by tests/slurm/cluster.sh; skipped when Slurm is
# not installed): the demo through the cluster gives the local verdicts; a
# task cancelled with scancel is harness_error naming its state, the others
# finish, and --resume completes it; Ctrl-C cancels the array and exits 130;
# a coordinator killed with -9 is resumed without losing or repeating a case.
source "$(dirname "$0")/lib.sh"
scripted

CLUSTER="$TMP/slurm"
trap '"$SRC/tests/slurm/cluster.sh" stop "$CLUSTER" >/dev/null 2>&1; [ -n "${KGYM_E2E_KEEP:-}" ] || rm -rf "$TMP"' EXIT
started="$("$SRC/tests/slurm/cluster.sh" start "$CLUSTER")"
rc=$?
[ "$rc" -eq 77 ] && { echo "skip: no Slurm here"; exit 77; }
[ "$rc" -eq 0 ] || { echo "FAIL: the test cluster did not start"; exit 1; }
eval "$started"
cd "$TMP" || exit 1

SLURM=(--set executor.kind=slurm --set executor.slurm.poll_sec=0.5 --set executor.slurm.cpus_per_task=1
  --set verifier.mode=correctness --set output.root_dir="$TMP/runs")

# 1. The demo through the cluster: the verdicts the sample set promises locally.
RUN="$TMP/runs/demo"
expect_exit 1 "kgym run with executor slurm on the sample set" "$KGYM" run "${SLURM[@]}" --set output.run_name=demo
echo "$OUT" | tail -n 14
expect_output "submitted 9 task\\(s\\) as Slurm job" "one array of nine tasks"
declare -A WANT=(
  [1_ReLU]=pass [2_LeakyReLU]=fail_cheat [3_SumReduction]=fail_correctness [4_Softmax]=pass
  [5_Matmul]=pass [6_LinearGELU]=pass [7_RMSNorm]=pass [8_ScaleShift]=crash [9_MSELoss]=timeout
)
for stem in "${!WANT[@]}"; do expect_verdict "$RUN/cases/level1/$stem/result.json" "${WANT[$stem]}"; done
check "summary.json written" test -s "$RUN/summary.json"
check "state.json says finished" grep -q '"status": "finished"' "$RUN/state.json"
check "state.json names each case's array task" grep -q '"job": "[0-9]*_[0-9]"' "$RUN/state.json"
check "events.jsonl records the submission" grep -q '"event":"submitted"' "$RUN/events.jsonl"
check "a task's log names its case and node" grep -q "kgym slurm-task: level1/1_ReLU on" "$RUN"/slurm/logs/*_0.log
expect_exit 0 "kgym monitor --once" "$KGYM" monitor "$RUN" --once
expect_output "JOB" "the monitor shows the array task column"
expect_output "NODE" "the monitor shows the node column"

# Samples: each case-sample is a task; the case is combined when both ended.
RUN="$TMP/runs/samples"
expect_exit 0 "kgym run with samples: 2 through the cluster" "$KGYM" run "${SLURM[@]}" --set output.run_name=samples \
  --set cases=1 --set samples=2
expect_output "submitted 2 task\\(s\\)" "one task per sample"
expect_verdict "$RUN/cases/level1/1_ReLU/result.json" pass
check "the case's result counts both samples" grep -q '"n": 2' "$RUN/cases/level1/1_ReLU/result.json"
check "each sample has its own result" test -s "$RUN/cases/level1/1_ReLU/samples/2/result.json"

# Refinement rounds (agent.feedback) run inside the case-sample's task: a
# wrong kernel in round 1, the right one in round 2, one task.
script_rule '{"candidate_contains": "kgym_sample_relu_doubled", "verdict": "fail_correctness", "reason": "scripted: doubled"}'
cat >"$TMP/rounds_agent.sh" <<'SH'
#!/usr/bin/env bash
set -eu
echo "round $KGYM_ROUND on $(hostname)"
if [ "$KGYM_ROUND" = 1 ]; then
  sed -e 's/kgym_sample_relu/kgym_sample_relu_doubled/' "$SOLUTIONS/level1/1_ReLU/model_new.py" >model_new.py
else
  cp "$SOLUTIONS/level1/1_ReLU/model_new.py" model_new.py
fi
SH
chmod +x "$TMP/rounds_agent.sh"
cat >"$TMP/rounds.yaml" <<YAML
bench_dir: $SRC/data/sample
cases: "1"
output: {root_dir: $TMP/runs, run_name: rounds}
agent:
  kind: command
  argv: ["$TMP/rounds_agent.sh"]
  env: {SOLUTIONS: "$SRC/data/sample/solutions"}
  feedback: {rounds: 3}
verifier: {mode: correctness}
sandbox: {agent_read_only: ["$SRC/data/sample/solutions"]}
executor: {kind: slurm, slurm: {poll_sec: 0.5, cpus_per_task: 1}}
YAML
RUN="$TMP/runs/rounds"
expect_exit 0 "kgym run with refinement rounds through the cluster" "$KGYM" run --config "$TMP/rounds.yaml"
expect_output "submitted 1 task\\(s\\)" "one task for the case-sample, its rounds inside"
expect_verdict "$RUN/cases/level1/1_ReLU/result.json" pass
check "both rounds in the result" json_true "$RUN/cases/level1/1_ReLU/result.json" \
  '[x["verdict"] for x in r["rounds"]] == ["fail_correctness", "pass"]' \
  '[[x["verdict"], x["reason"]] for x in r["rounds"]]'

# 2. One pending task cancelled: harness_error with the state; the others finish.
RUN="$TMP/runs/cancel"
"$KGYM" run "${SLURM[@]}" --set output.run_name=cancel --set cases=1,4,5 --set executor.slurm.max_parallel=1 \
  >"$TMP/cancel.out" 2>&1 &
pid=$!
for _ in $(seq 100); do
  job="$(sed -nE 's/.*as Slurm job ([0-9]+).*/\1/p' "$TMP/cancel.out")"
  [ -n "$job" ] && break
  sleep 0.2
done
check "the array was submitted" test -n "$job"
scancel "${job}_2"
wait "$pid"
check "the run ends with exit 1 (a case did not pass)" test "$?" -eq 1
expect_verdict "$RUN/cases/level1/5_Matmul/result.json" harness_error
reason="$(grep '"reason"' "$RUN/cases/level1/5_Matmul/result.json")"
if grep -qE 'the Slurm task [0-9]+_2 ended CANCELLED without a result \([a-z ]+\); its log: ' <<<"$reason"; then
  ok "its reason names the state and the log"
else
  bad "its reason names the state and the log" "$reason"
fi
expect_verdict "$RUN/cases/level1/1_ReLU/result.json" pass
expect_verdict "$RUN/cases/level1/4_Softmax/result.json" pass

# 3. --resume runs the cancelled case-sample alone.
expect_exit 0 "kgym run --resume completes the cancelled case" "$KGYM" run --resume "$RUN"
expect_output "submitted 1 task\\(s\\)" "only the unfinished case-sample is submitted"
expect_verdict "$RUN/cases/level1/5_Matmul/result.json" pass

# 4. Ctrl-C on the coordinator cancels the array, writes the summary and exits 130.
RUN="$TMP/runs/interrupted"
"$KGYM" run "${SLURM[@]}" --set output.run_name=interrupted --set cases=1,4 --set executor.slurm.max_parallel=1 \
  >"$TMP/interrupted.out" 2>&1 &
pid=$!
for _ in $(seq 100); do
  grep -q "as Slurm job" "$TMP/interrupted.out" && break
  sleep 0.2
done
kill -INT "$pid"
wait "$pid"
check "the interrupted coordinator exits 130" test "$?" -eq 130
check "it cancelled the array" grep -q "interrupted: cancelling Slurm job" "$TMP/interrupted.out"
check "it wrote the summary" test -s "$RUN/summary.json"
check "state.json says interrupted" grep -q '"status": "interrupted"' "$RUN/state.json"
for _ in $(seq 50); do [ -z "$(squeue -h)" ] && break; sleep 0.2; done
check "no task of the run is left in the queue" test -z "$(squeue -h)"

# 5. kill -9 of the coordinator, then --resume: tasks still queued are
# adopted, none runs twice and every case ends.
RUN="$TMP/runs/killed"
"$KGYM" run "${SLURM[@]}" --set output.run_name=killed --set cases=1,4,5,6 --set executor.slurm.max_parallel=1 \
  >"$TMP/killed.out" 2>&1 &
pid=$!
for _ in $(seq 150); do
  grep -q '"event":"finished"' "$RUN/events.jsonl" 2>/dev/null && break
  sleep 0.2
done
kill -9 "$pid"
wait "$pid" 2>/dev/null
check "tasks are still queued after the coordinator died" test -n "$(squeue -h -n "$(sed -nE 's/.*"job_name": "([^"]+)".*/\1/p' "$RUN/slurm/submission-1.json")")"
expect_exit 0 "kgym run --resume after kill -9" "$KGYM" run --resume "$RUN"
expect_output "adopted [0-9]+ task\(s\) still in the queue" "the resumed coordinator adopts the queued tasks"
check "nothing was submitted again" test ! -e "$RUN/slurm/submission-2.json"
for stem in 1_ReLU 4_Softmax 5_Matmul 6_LinearGELU; do
  expect_verdict "$RUN/cases/level1/$stem/result.json" pass
  runs="$(cat "$RUN"/slurm/logs/*.log | grep -c "kgym slurm-task: level1/$stem on")"
  check "$stem ran once (ran $runs times)" test "$runs" -eq 1
done
check "no task of the run is left in the queue" test -z "$(squeue -h)"

finish
