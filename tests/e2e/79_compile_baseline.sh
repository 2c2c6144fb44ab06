#!/usr/bin/env bash
# labels: e2e torch
# verifier.baselines: [eager, compile] on whichever torch kgym finds (CI runs
# this on Debian's torch 1.13 and again with the torch-2 venv first on PATH).
# Under torch 2 the reference is also timed through torch.compile, by the
# same method, and result.json carries performance.speedup_vs.compile (a
# median, an interval, the compile time kept out of it); summary.json's
# case row has it (fast_p against it is a unit test: a baseline case counts
# only in the A/A line). Under 1.13, which has no
# torch.compile, the compile baseline is unavailable, said why, and the case
# still passes on its eager timing.
source "$(dirname "$0")/lib.sh"

cd "$TMP"
baseline_config "$SRC/data/sample/level1/1_ReLU.py" 1_ReLU compile "baselines: [eager, compile]"
"$KGYM" run --config run.yaml >run.out 2>&1 || true
RUN=runs/compile
RESULT="$RUN/cases/level1/1_ReLU/result.json"
expect_verdict "$RESULT" pass
torch_version="$(json_get runs/compile/run.json 'r["torch_version"]')"
echo "torch $torch_version"
check "run.json records the baselines" json_true runs/compile/run.json '"compile" in json.dumps(r)'
if [ "${torch_version%%.*}" -ge 2 ]; then
  check "speedup_vs.compile has a median, an interval and the compile time" json_true "$RESULT" \
    '(c := r["performance"]["speedup_vs"]["compile"]) and "unavailable" not in c and c["median"] > 0 and c["ci95"][0] <= c["median"] <= c["ci95"][1] and c["compile_s"] > 0 and c["reference"]["samples"] > 0 and c["noise_floor"] and r["performance"]["speedup"]["median"] > 0'
  check "summary.json's case row has the speedup against compile" json_true runs/compile/summary.json \
    'r["cases"][0]["speedup_vs"]["compile"]["speedup"] > 0'
  check "verify.log has the compile time" grep -q "compiled in" "$RUN/cases/level1/1_ReLU/verify/verify.log"
else
  check "the compile baseline is unavailable on this torch, and says why" json_true "$RESULT" \
    '"has no torch.compile" in r["performance"]["speedup_vs"]["compile"]["unavailable"]'
fi
finish
