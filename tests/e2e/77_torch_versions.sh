#!/usr/bin/env bash
# labels: e2e torch
# Whichever torch kgym finds (python3 on PATH, then /usr/bin/python3; CI runs
# this once on Debian's torch 1.13 and once with the torch-2 venv first on
# PATH): a baseline run of a problem that needs torch 2 (the fused
# attention of tests/fixtures/problems/fused_attention.py) passes under
# torch 2 and ends as a reference_error that names the missing op and the
# fix under an older torch; run.json and result.json name the interpreter,
# the torch version and its build.
source "$(dirname "$0")/lib.sh"

cd "$TMP"
baseline_config "$SRC/tests/fixtures/problems/fused_attention.py" 1_FusedAttention torch
"$KGYM" run --config run.yaml >run.out 2>&1
RUN=runs/torch
torch_version="$(json_get runs/torch/run.json 'r["torch_version"]')"
echo "torch $torch_version"
check "run.json names the interpreter, torch and its build" json_true runs/torch/run.json \
  'r["python"] and r["torch_version"] and (r["torch_build"] == "cpu" or r["torch_build"].startswith(("cuda ", "rocm ")))'
torch_build="$(json_get runs/torch/run.json 'r["torch_build"]')"
check "result.json names them too" json_true "$RUN/cases/level1/1_FusedAttention/result.json" \
  "r['environment']['torch'] == '$torch_version' and r['environment']['torch_build'] == '$torch_build' and r['environment']['python']"
if [ "${torch_version%%.*}" -ge 2 ]; then
  expect_verdict "$RUN/cases/level1/1_FusedAttention/result.json" pass
  check "a baseline, with a speedup interval" json_true "$RUN/cases/level1/1_FusedAttention/result.json" \
    'r["baseline"] and r["performance"]["speedup"]["ci95"]'
else
  expect_verdict "$RUN/cases/level1/1_FusedAttention/result.json" reference_error
  check "the reason names the op, this torch and the fix" grep -qE \
    '"reason": ".*scaled_dot_product_attention.*this torch \([0-9.a-z+]+\) lacks it.*verifier.python' \
    "$RUN/cases/level1/1_FusedAttention/result.json"
fi
finish
