#!/usr/bin/env bash
# labels: e2e
# `samples: 3`: three independent generations of a case, each collected and
# verified on its own; the case reports its best sample with pass@k, and
# --resume verifies a generated sample without generating it again.
source "$(dirname "$0")/lib.sh"
scripted
script_rule '{"candidate_contains": "kgym_sample_relu_doubled", "verdict": "fail_correctness"}'

S="$SRC/data/sample"
cat >"$TMP/agent.sh" <<'SH'
#!/usr/bin/env bash
# A scripted "agent": sample 2 writes a wrong kernel (doubles positive
# values), the others the stored correct one.
set -eu
echo "sample $KGYM_SAMPLE of $KGYM_CASE_ID in $(pwd)"
if [ "$KGYM_SAMPLE" = 2 ]; then
  cp "$DOUBLED" model_new.py
else
  cp "$SOLUTIONS/level1/1_ReLU/model_new.py" model_new.py
fi
SH
chmod +x "$TMP/agent.sh"
mkdir "$TMP/fixtures" && doubled_relu "$TMP/fixtures/relu_doubled.py"
cat >"$TMP/samples.yaml" <<YAML
bench_dir: $S
cases: "1"
samples: 3
concurrency: 2
devices: ["0", "1"]
output: {root_dir: $TMP/runs, run_name: samples}
agent:
  kind: command
  argv: ["$TMP/agent.sh"]
  env: {SOLUTIONS: "$S/solutions", DOUBLED: "$TMP/fixtures/relu_doubled.py"}
verifier: {mode: correctness}
sandbox: {agent_read_only: ["$S/solutions", "$TMP/fixtures"]}  # the answers this scripted agent copies
YAML
RUN="$TMP/runs/samples"
CASE="$RUN/cases/level1/1_ReLU"
expect_exit 0 "a run with three samples per case" "$KGYM" run --config "$TMP/samples.yaml"
expect_verdict "$CASE/samples/1/result.json" pass
expect_verdict "$CASE/samples/2/result.json" fail_correctness
expect_verdict "$CASE/samples/3/result.json" pass
expect_verdict "$CASE/result.json" pass
check "the case counts its samples" grep -q '"passed": 2' "$CASE/result.json"
check "the case reports pass@1 = 2/3" grep -qE '"pass_at_1": 0\.666' "$CASE/result.json"
check "each sample ran its own agent" grep -q "sample 2 of level1/1_ReLU in $CASE/samples/2/work" "$CASE/samples/2/agent.log"
check "each sample has its own candidate" test -s "$CASE/samples/3/candidate/model_new.py"
check "summary.json has pass@k" grep -q '"pass_at_k"' "$RUN/summary.json"
check "summary.md has a pass@k table" grep -q '^| all | 1 | 2/3 | 66.7% | 100.0% | 100.0% |' "$RUN/summary.md"
expect_exit 0 "kgym report" "$KGYM" report "$RUN"
expect_output 'pass@1 66\.7%' "the report prints pass@1"
expect_output 'pass@3 100\.0%' "the report prints pass@3"

# Sample 3 was generated but its verification is lost: --resume verifies it
# again without running its agent, and keeps the other samples as they were.
rm "$CASE/result.json" "$CASE/samples/3/result.json"
before="$(sha256sum <"$CASE/samples/1/result.json")"
expect_exit 0 "resume with one sample unverified" "$KGYM" run --resume "$RUN"
expect_verdict "$CASE/samples/3/result.json" pass
expect_verdict "$CASE/result.json" pass
check "sample 3 was not generated again" test "$(grep -c '^sample 3 ' "$CASE/samples/3/agent.log")" -eq 1
check "sample 1 was kept as it was" test "$(sha256sum <"$CASE/samples/1/result.json")" = "$before"
finish
