#!/usr/bin/env bash
# labels: e2e torch
# `kgym verify` on one problem and one candidate, run from another directory.
source "$(dirname "$0")/lib.sh"

S="$SRC/data/sample"
cd "$TMP"
expect_exit 0 "an honest kernel passes" "$KGYM" verify --problem "$S/level1/1_ReLU.py" \
  --candidate "$S/solutions/level1/1_ReLU/model_new.py" --json "$TMP/relu.json"
expect_output "^pass" "prints the verdict first"
check "no status line and no escape code off a terminal" bash -c "! grep -q \$'\\x1b' <<<\"\$0\"" "$OUT"
check "--json writes the result object" grep -q '"case_id"' "$TMP/relu.json"
check "the result records its seeds" grep -q '"seeds": \[' "$TMP/relu.json"

# On a terminal (script gives it one) a status line says what the
# verification is doing while it works.
expect_exit 1 "a wrong kernel fails" script -qec "'$KGYM' verify --problem '$S/level1/3_SumReduction.py' \
  --candidate '$S/solutions/level1/3_SumReduction/model_new.py' --mode correctness --json '$TMP/sum.json'" /dev/null
expect_output "fail_correctness" "says fail_correctness"
expect_output $'\r\x1b\\[Kkgym verify model_new.py · [0-9]+s · ' "on a terminal, a status line of the verification's steps"
expect_verdict "$TMP/sum.json" fail_correctness

expect_exit 1 "a candidate that only calls the library op is a cheat" "$KGYM" verify \
  --problem "$S/level1/2_LeakyReLU.py" --candidate "$S/solutions/level1/2_LeakyReLU/model_new.py" \
  --json "$TMP/leaky.json"
expect_output "^fail_cheat: static.no_kernel — model_new.py:12: forward calls torch.nn.functional.leaky_relu" \
  "names the rule and the evidence"
expect_verdict "$TMP/leaky.json" fail_cheat
check "the cheat comes from the static layer" grep -q '"layer": "static"' "$TMP/leaky.json"

cp "$S/solutions/level1/1_ReLU/model_new.py" "$TMP/broken.py"
echo "this is not python" >>"$TMP/broken.py"
expect_exit 1 "a candidate that does not import" "$KGYM" verify --problem "$S/level1/1_ReLU.py" \
  --candidate "$TMP/broken.py" --mode correctness
expect_output "compile_error" "is a compile_error"

# The config's verifier section applies; a flag still wins over it.
expect_exit 0 "verifier settings from --set" "$KGYM" verify --problem "$S/level1/1_ReLU.py" \
  --candidate "$S/solutions/level1/1_ReLU/model_new.py" --set verifier.trials=4 --set verifier.mode=correctness \
  --json "$TMP/relu_set.json"
check "--set verifier.mode=correctness: no timing" json_true "$TMP/relu_set.json" \
  'r["performance"] is None and r["mode"] == "correctness"'
check "--set verifier.trials=4: four trials with the given inputs (plus trial 0 repeated)" \
  json_true "$TMP/relu_set.json" 'r["correctness"]["distributions"].count("given") == 5'
expect_exit 2 "a bad --set is a usage error" "$KGYM" verify --problem "$S/level1/1_ReLU.py" \
  --candidate "$S/solutions/level1/1_ReLU/model_new.py" --set verifier.trials=zero
expect_output "verifier.trials" "names the key"

# Outputs travel back to the parent as views of the tensors' memory, which
# must keep the tensor alive: once, RMSNorm's freed output block was reused
# before it was sent and an A/A timing failed with "output of a timed call
# differs".
/usr/bin/python3 - "$SRC/boxed" <<'PY' && ok "a tensor's byte view outlives the tensor's other references" || bad "a tensor's byte view outlives the tensor's other references"
import sys
sys.path.insert(0, sys.argv[1])
import torch
from kgym_worker_devices import steady_allocator, tensor_bytes

steady_allocator()  # as every worker: freed blocks stay in the heap for reuse
view = tensor_bytes(torch.full((1 << 18,), 1.0))  # the view holds the only reference
again = torch.full((1 << 18,), 2.0)  # would reuse the block had it been freed
sys.exit(0 if bytes(view[:4]) == torch.tensor([1.0]).numpy().tobytes() else 1)
PY

# A timed call's kept output is a copy, in buffers reused from batch to
# batch, so holding it changes no later call's allocations; the copy is
# taken when the call returns and later writes to the output do not reach it.
/usr/bin/python3 - "$SRC/boxed" <<'PY' && ok "a kept timed output is a copy in reused buffers" || bad "a kept timed output is a copy in reused buffers"
import sys
sys.path.insert(0, sys.argv[1])
import torch
from kgym_worker_devices import CpuBackend, flatten_outputs

backend = CpuBackend(1, "all")
out = torch.arange(6.0)
calls = iter(range(10))
def fn(args):
    return (out * next(calls), (torch.ones(2), 3.0))
_, _, kept, _ = backend.time_calls(fn, lambda position: [], 1, 3)  # timed calls 1, 2, 3
first = kept[1]  # the output of call 2
slot0 = kept[0][0].data_ptr()  # timed slot 0's buffer
out.fill_(-1)  # after the batch: must not reach the copy
flat = flatten_outputs(first)
ok = len(first) == 3 and first[2] == 3.0 and flat[0].tolist() == [0, 2, 4, 6, 8, 10]
buffer = slot0
_, _, kept, _ = backend.time_calls(fn, lambda position: [], 0, 2)  # calls 4, 5
second = kept[0]  # the output of call 4, in the buffers slot 0 reuses
ok = ok and second[0].data_ptr() == buffer and second[0].tolist() == [-4.0] * 6
sys.exit(0 if ok else 1)
PY

# The reference timed against itself, through the staged-inputs path.
expect_exit 0 "the reference timed against itself passes" "$KGYM" verify --problem "$S/level1/7_RMSNorm.py" \
  --candidate "$S/level1/7_RMSNorm.py" --candidate-is-reference --set verifier.timing.budget_sec=1 \
  --json "$TMP/aa.json"
# (How close to 1 it comes depends on the machine's load: bench/timing_fidelity.sh measures that.)
check "A/A records each round's four batch medians (reference, candidate and their twins)" json_true "$TMP/aa.json" \
  'len(r["performance"]["rounds_ms"]) >= 2 and all(len(x) == 4 and min(x) > 0 for x in r["performance"]["rounds_ms"])'

expect_exit 2 "a missing candidate file is a usage error" "$KGYM" verify --problem "$S/level1/1_ReLU.py" \
  --candidate "$TMP/none.py"

# --override goes through the config loader, as for kgym run: a bad one is
# refused before any work, naming the flag; a good one reaches the problem.
expect_exit 2 "a malformed --override is a usage error" "$KGYM" verify --problem "$S/level1/1_ReLU.py" \
  --candidate "$S/solutions/level1/1_ReLU/model_new.py" --override batch_size
expect_output "--override batch_size" "naming the flag"
expect_exit 0 "--override sizes the problem" "$KGYM" verify --problem "$S/level1/1_ReLU.py" \
  --candidate "$S/solutions/level1/1_ReLU/model_new.py" --mode correctness --override batch_size=8 \
  --json "$TMP/small.json"
check "the override reaches the verification" grep -q '"\[8, 4096\]"' "$TMP/small.json"

finish
