#!/usr/bin/env bash
# labels: e2e
# agent.self_check: kgym-check on the agent's PATH in its box says what the
# verification would of a sample solution (ok), a wrong kernel
# (fail_correctness with its trial) and a candidate without a kernel
# (static.no_kernel), with the agent's rights: it cannot change the check's
# request, and the run's verdict is still the verification's.
source "$(dirname "$0")/lib.sh"

S="$SRC/data/sample"
cat >"$TMP/agent.sh" <<'SH'
#!/usr/bin/env bash
set -u
echo "kgym-check is $(command -v kgym-check)"
grep -q 'kgym-check' "$1" && echo "the prompt names kgym-check"
grep -q '^## Checking your candidate' SPEC.md && echo "SPEC.md explains kgym-check"
cp "$DOUBLED" wrong.py
cp "$SOLUTIONS/level1/2_LeakyReLU/model_new.py" cheat.py
cp "$SOLUTIONS/level1/1_ReLU/model_new.py" model_new.py
for file in wrong.py cheat.py; do
  out="$(kgym-check "$file" 2>&1)"; rc=$?
  echo "check $file (exit $rc): $(head -n 1 <<<"$out")"
done
out="$(kgym-check 2>&1)"; rc=$?  # model_new.py
echo "check with no argument (exit $rc): $(head -n 1 <<<"$out")"
echo tampered >"$(dirname "$(command -v kgym-check)")/request.json" 2>/dev/null && echo "REQUEST WRITABLE"
exit 0
SH
chmod +x "$TMP/agent.sh"
mkdir "$TMP/fixtures" && doubled_relu "$TMP/fixtures/relu_doubled.py"
cat >"$TMP/check.yaml" <<YAML
bench_dir: $S
cases: "1"
output: {root_dir: $TMP/runs, run_name: check}
agent:
  kind: command
  argv: ["$TMP/agent.sh", "{prompt_file}"]
  env: {SOLUTIONS: "$S/solutions", DOUBLED: "$TMP/fixtures/relu_doubled.py"}
  self_check: true
verifier: {mode: correctness}
sandbox: {agent_read_only: ["$S/solutions", "$TMP/fixtures"]}
YAML
CASE="$TMP/runs/check/cases/level1/1_ReLU"
expect_exit 0 "a run whose agent checks its candidates" "$KGYM" run --config "$TMP/check.yaml"
expect_verdict "$CASE/result.json" pass
LOG="$CASE/agent.log"
cat "$LOG"
check "kgym-check is on the agent's PATH" grep -q "^kgym-check is $CASE/self_check/kgym-check" "$LOG"
check "the prompt names it" grep -q "^the prompt names kgym-check" "$LOG"
check "SPEC.md explains it" grep -q "^SPEC.md explains kgym-check" "$LOG"
check "a wrong kernel: fail_correctness with its trial" \
  grep -qE '^check wrong.py \(exit 1\): fail_correctness — trial [0-9]' "$LOG"
check "a candidate without a kernel: the static rule" grep -q '^check cheat.py (exit 1): static.no_kernel — cheat.py:' "$LOG"
check "a sample solution (model_new.py, the default): ok" grep -q \
  '^check with no argument (exit 0): ok (correctness only; timing and held-out shapes are checked at verification)' "$LOG"
check "the box cannot change the check's request" test -z "$(grep "REQUEST WRITABLE" "$LOG")"
check "the request is kgym's" json_true "$CASE/self_check/request.json" 'r["self_check"] and r["config"]["mode"] == "correctness"'
finish
