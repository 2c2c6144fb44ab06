#!/usr/bin/env bash
# labels: e2e sanitize
# Problems as they come: a broken problem file is reported for its own case
# without stopping the others; size overrides reach the problem.
source "$(dirname "$0")/lib.sh"

S="$SRC/data/sample"
mkdir -p "$TMP/bench/level1" "$TMP/sol/level1"
cp "$S/level1/1_ReLU.py" "$TMP/bench/level1/1_ReLU.py"
printf 'import torch\n\ndef get_inputs():\n    return [torch.rand(4)]\n\ndef get_init_inputs():\n    return []\n' \
  >"$TMP/bench/level1/2_NoModel.py"
printf 'import torch\nraise RuntimeError("broken on import")\n' >"$TMP/bench/level1/3_Broken.py"
cp "$S/solutions/level1/1_ReLU/model_new.py" "$TMP/sol/level1_1_ReLU.py"  # the flat replay layout
cp "$S/solutions/level1/1_ReLU/model_new.py" "$TMP/sol/level1_2_NoModel.py"
cp "$S/solutions/level1/1_ReLU/model_new.py" "$TMP/sol/level1_3_Broken.py"

RUN="$TMP/runs/p"
expect_exit 1 "a dataset with two broken problems" "$KGYM" run --set bench_dir="$TMP/bench" \
  --set agent.dir="$TMP/sol" --set output.root_dir="$TMP/runs" --set output.run_name=p \
  --set verifier.mode=correctness --override batch_size=8 --override dim=100
expect_verdict "$RUN/cases/level1/1_ReLU/result.json" pass
expect_verdict "$RUN/cases/level1/2_NoModel/result.json" reference_error
expect_verdict "$RUN/cases/level1/3_Broken/result.json" reference_error
check "the reason names what is missing" grep -q "defines no Model" "$RUN/cases/level1/2_NoModel/result.json"
check "the reason quotes the import error" grep -q "broken on import" "$RUN/cases/level1/3_Broken/result.json"
check "overrides reach the problem (SPEC.md)" grep -q "batch_size = 8" "$RUN/cases/level1/1_ReLU/SPEC.md"
check "overridden shape verified" grep -q '"\[8, 100\]"' "$RUN/cases/level1/1_ReLU/result.json"
check "no agent ran for a broken problem" test ! -e "$RUN/cases/level1/2_NoModel/candidate"
finish
