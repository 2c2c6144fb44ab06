#!/usr/bin/env bash
# labels: e2e
# `kgym lint`: the bundled sample problems are clean; the exploitable and
# broken problems of tests/exploits/problems/ are reported with evidence.
source "$(dirname "$0")/lib.sh"

cd "$TMP"
expect_exit 0 "the sample problems have no findings" "$KGYM" lint --bench-dir "$SRC/data/sample"
expect_output "^level1/5_Matmul: ok \(first forward [0-9.]+ ms cold, 1 thread; peak memory [0-9]+ MB\)" \
  "reports time and memory, saying which forward it timed"
expect_output "^0 of 9 problems have findings" "sums up"
# On a terminal (script gives it one) a status line names the problem linted.
expect_exit 0 "kgym lint on a terminal" script -qec "'$KGYM' lint --bench-dir '$SRC/data/sample' 1:2" /dev/null
expect_output "kgym lint · [0-9]+s · level1/2_LeakyReLU \(2 of 2\)" "a status line names the problem and how far it is"

P="$SRC/tests/exploits/problems"
mkdir -p bench/level1
cp "$P/dropout_train.py" bench/level1/1_DropoutTrain.py
cp "$P/float_targets.py" bench/level1/2_FloatTargets.py
cp "$P/relu_rand.py" bench/level1/3_ReluRand.py
cp "$P/softmax_one.py" bench/level1/4_SoftmaxOne.py
cp "$P/tiny_scale.py" bench/level1/5_TinyScale.py
cp "$P/linear_relu.py" bench/level1/6_LinearRelu.py
expect_exit 1 "problems with findings exit 1" "$KGYM" lint --bench-dir bench
expect_output "^level1/1_DropoutTrain: not_self_consistent — the same inputs twice give different outputs" \
  "training-mode dropout does not match itself"
expect_output "^level1/2_FloatTargets: reference_fails — RuntimeError: " "a failing reference"
expect_output "^level1/3_ReluRand: note: identity_on_given_inputs — output 0 equals input 0 on get_inputs\(\); not on signed" \
  "ReLU on torch.rand is the identity: a note, since the signed-normal trials catch it"
expect_output "^level1/3_ReluRand: ok, 1 note\(s\)" "a note alone leaves the problem ok"
expect_output "^level1/4_SoftmaxOne: constant_output — " "constant outputs"
expect_output "^level1/4_SoftmaxOne: input_independent — " "outputs that ignore the inputs"
expect_output "^level1/5_TinyScale: zero_output — " "outputs within atol of zero"
expect_output "^level1/6_LinearRelu: ok " "a sound problem is ok"
expect_output "^4 of 6 problems have findings" "counts the problems with findings, not notes"
expect_exit 1 "a selector picks the problems" "$KGYM" lint --bench-dir bench 1,6
expect_output "^1 of 2 problems have findings" "only the selected problems"
"$KGYM" lint --bench-dir bench 1,6 --json >"$TMP/lint.json" 2>/dev/null
check "lint --json: one object, the same findings" json_true "$TMP/lint.json" \
  'r["kgym_json"] == 1 and r["with_findings"] == 1 and [p["case"] for p in r["problems"]] == ["level1/1_DropoutTrain", "level1/6_LinearRelu"] and r["problems"][1]["findings"] == [] and r["problems"][0]["findings"][0]["note"] is False'

expect_exit 2 "a bad selector is a usage error" "$KGYM" lint --bench-dir bench 99

# Verification runs the same self-consistency check on the reference.
expect_exit 1 "verifying against a reference that does not match itself" "$KGYM" verify \
  --problem bench/level1/1_DropoutTrain.py --candidate "$SRC/tests/exploits/honest/plain_relu.py" --mode correctness
expect_output "^reference_error: the reference does not match itself on the same inputs" "is a reference_error"
finish
