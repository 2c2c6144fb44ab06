#!/usr/bin/env bash
# labels: e2e sanitize
# Refinement rounds (agent.feedback): a scripted command agent writes a
# wrong kernel, reads the verification's feedback and writes the right one
# (pass in round 2, both rounds in result.json, solved in round 2 and not
# round 1 in the summaries); one that cheats after a wrong round ends
# fail_cheat with rounds left; a kill during round 2 keeps round 1 and runs
# round 2 again.
source "$(dirname "$0")/lib.sh"
scripted
script_rule '{"candidate_contains": "kgym_sample_relu_doubled", "verdict": "fail_correctness", "reason": "trial 3 (normal inputs) output 0: 9 of 16 elements outside atol=1e-05 rtol=1e-05; worst at [2]: 2 vs reference 1"}'

S="$SRC/data/sample"
cat >"$TMP/agent.sh" <<'SH'
#!/usr/bin/env bash
# Round 1: a kernel that doubles positive values. A later round reads the
# feedback in its prompt: on a fail_correctness it writes the stored correct
# kernel, or (CHEAT=1) a candidate that calls the library op.
set -eu
echo "round $KGYM_ROUND of $KGYM_CASE_ID, prompt $1"
if [ "$KGYM_ROUND" = 1 ]; then
  cp "$DOUBLED" model_new.py
elif grep -q '^## Verification of your previous candidate' "$1" && grep -q '`fail_correctness`' "$1" \
    && grep -q 'worst at \[2\]: 2 vs reference 1' "$1"; then
  if [ "${CHEAT:-0}" = 1 ]; then cp "$SOLUTIONS/level1/2_LeakyReLU/model_new.py" model_new.py
  else
    while [ -e "$SLOW" ]; do sleep 0.2; done  # the kill test holds round 2 here
    cp "$SOLUTIONS/level1/1_ReLU/model_new.py" model_new.py
  fi
else
  echo "no feedback in the prompt"; exit 3
fi
SH
chmod +x "$TMP/agent.sh"
config() {  # NAME ROUNDS CHEAT
  cat >"$TMP/$1.yaml" <<YAML
bench_dir: $S
cases: "1"
output: {root_dir: $TMP/runs, run_name: $1}
agent:
  kind: command
  argv: ["$TMP/agent.sh", "{prompt_file}"]
  env: {SOLUTIONS: "$S/solutions", DOUBLED: "$TMP/hold/relu_doubled.py", CHEAT: "$3", SLOW: "$TMP/hold/slow"}
  feedback: {rounds: $2, until: pass}
verifier: {mode: correctness}
sandbox: {agent_read_only: ["$S/solutions", "$TMP/hold"]}  # the box has a /tmp of its own
YAML
}
mkdir -p "$TMP/hold" && doubled_relu "$TMP/hold/relu_doubled.py"

# Wrong, then right.
config learn 3 0
RUN="$TMP/runs/learn"
CASE="$RUN/cases/level1/1_ReLU"
expect_exit 0 "a run whose agent learns from the feedback" "$KGYM" run --config "$TMP/learn.yaml"
expect_verdict "$CASE/result.json" pass
check "result.json keeps both rounds" json_true "$CASE/result.json" \
  '[x["verdict"] for x in r["rounds"]] == ["fail_correctness", "pass"] and [x["round"] for x in r["rounds"]] == [1, 2]' \
  '[[x["verdict"], x["reason"]] for x in r["rounds"]]'
check "round 1's reason is kept" json_true "$CASE/result.json" '"worst at [2]" in r["rounds"][0]["reason"]'
check "the agent ran twice, round 2 with the feedback prompt" \
  grep -q "round 2 of level1/1_ReLU, prompt $CASE/work/.kgym/round.2.md" "$CASE/agent.log"
check "the feedback names the verdict and the round" grep -q 'Round 1 of 3: the verdict on your candidate is `fail_correctness`' "$CASE/work/.kgym/round.2.md"
check "summary.json: solved 0 after round 1, 1 after round 2" json_true "$RUN/summary.json" \
  '[p["solved"] for p in r["totals"]["rounds"]["by_round"]] == [0, 1]'
check "summary.md has the rounds table" grep -q '^| 2 | 1 (100.0%) |' "$RUN/summary.md"
check "summary.md says the case passed in round 2" grep -q 'pass\*\* (round 2)' "$RUN/summary.md"
check "events.jsonl records the round" grep -q '"event":"round"' "$RUN/events.jsonl"
expect_exit 0 "kgym compare --round 1 against itself" "$KGYM" compare --round 1 --json "$RUN" "$RUN"
expect_output '"round": 1' "compare says which round it compared"

# Wrong, then a cheat: fail_cheat, though a round was left.
config cheat 3 1
CASE="$TMP/runs/cheat/cases/level1/1_ReLU"
expect_exit 1 "a run whose agent cheats in round 2" "$KGYM" run --config "$TMP/cheat.yaml"
expect_verdict "$CASE/result.json" fail_cheat
check "the cheat ended the rounds" json_true "$CASE/result.json" \
  '[x["verdict"] for x in r["rounds"]] == ["fail_correctness", "fail_cheat"]'
check "no third round ran" test "$(grep -c '^round ' "$CASE/agent.log")" -eq 2

# Killed during round 2: the resume keeps round 1 and runs round 2 again.
config kill 3 0
RUN="$TMP/runs/kill"
CASE="$RUN/cases/level1/1_ReLU"
touch "$TMP/hold/slow"
"$KGYM" run --config "$TMP/kill.yaml" >"$TMP/kill.out" 2>&1 &
pid=$!
# Round 2's agent is running once round_started is recorded and its script is up
# (agent.log's relay writes in blocks: it is no clock).
for _ in $(seq 1 300); do
  grep -q '"event":"round_started"' "$RUN/events.jsonl" 2>/dev/null && pgrep -f "$TMP/agent.sh" >/dev/null && break
  sleep 0.1
done
kill -9 "$pid"; wait "$pid" 2>/dev/null
check "killed in round 2, round 1 kept" json_true "$CASE/rounds.json" 'r["round"] == 2 and len(r["rounds"]) == 1'
check "no result yet" test ! -e "$CASE/result.json"
pkill -9 -f "$TMP/agent.sh" || true
rm -f "$TMP/hold/slow"
expect_exit 0 "resume after the kill" "$KGYM" run --resume "$RUN"
expect_verdict "$CASE/result.json" pass
check "round 1 was kept, not run again" test "$(grep -c '^round 1 ' "$CASE/agent.log")" -eq 1
check "round 2 ran again" test "$(grep -c '^round 2 ' "$CASE/agent.log")" -eq 2
check "both rounds in the result" json_true "$CASE/result.json" \
  '[x["verdict"] for x in r["rounds"]] == ["fail_correctness", "pass"]' \
  '[[x["verdict"], x["reason"]] for x in r["rounds"]]'
finish
