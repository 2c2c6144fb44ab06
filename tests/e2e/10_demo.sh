#!/usr/bin/env bash
# labels: e2e slow
# The default job as a new user runs it: every sample problem with its stored
# solution, each ending with the verdict the sample set promises.
source "$(dirname "$0")/lib.sh"

RUN="$TMP/runs/demo"
expect_exit 1 "kgym run on the bundled default (some samples fail on purpose)" \
  "$KGYM" run --set output.root_dir="$TMP/runs" --set output.run_name=demo
echo "$OUT" | tail -n 30
RUN_OUT="$OUT"
expect_output "run dir: $RUN" "prints the run dir"
expect_output "kgym monitor $RUN" "prints the monitor command"
expect_output "\[9/9\]" "a progress line per finished case"

declare -A WANT=(
  [1_ReLU]=pass [2_LeakyReLU]=fail_cheat [3_SumReduction]=fail_correctness [4_Softmax]=pass
  [5_Matmul]=pass [6_LinearGELU]=pass [7_RMSNorm]=pass [8_ScaleShift]=crash [9_MSELoss]=timeout
)
for stem in "${!WANT[@]}"; do
  expect_verdict "$RUN/cases/level1/$stem/result.json" "${WANT[$stem]}"
done

for f in run.json state.json events.jsonl summary.json summary.md report.html; do
  check "RUN_DIR/$f written" test -s "$RUN/$f"
done
for f in task_desc.py SPEC.md prompt.md candidate/model_new.py verify.log result.json; do
  check "case file $f written" test -s "$RUN/cases/level1/5_Matmul/$f"
done
check "SPEC.md names the input shapes" grep -q "float32" "$RUN/cases/level1/5_Matmul/SPEC.md"
check "no model state outlives its verification" test -z "$(find "$RUN" -name 'state*.pt' | head -n 1)"
check "state.json says finished" grep -q '"status": "finished"' "$RUN/state.json"
# kgym roofline: the devices' roofs the run measured, from the cache.
expect_exit 0 "kgym roofline on device 0" "$KGYM" roofline --device 0
expect_output "memory bandwidth +[0-9.]+ GB/s" "prints the bandwidth"
expect_output "peak float32 +[0-9.]+ GFLOP/s" "prints the float32 peak"
# Reused unless other tests loaded the core while the run measured it
# (then it is measured again, docs/roofline.md).
if json_true "$RUN/run.json" 'r["roofs"][0]["foreign_cpu_share"] <= 0.05'; then
  expect_output "from the cache" "the run's measurement is reused"
fi
expect_output "L2 \([0-9]+ KB\) bandwidth +[0-9.]+ GB/s" "prints each cache level's bandwidth"
expect_exit 0 "kgym roofline --json" "$KGYM" roofline --device 1 --json
expect_output '"from_cache": (true|false)' "the JSON says where the figures came from"
expect_exit 2 "kgym roofline on a device that is no core list" "$KGYM" roofline --device gpu0
expect_output "not a cpu device" "says what a device is"
check "run.json records each device's roofs" json_true "$RUN/run.json" \
  '[d["device"] for d in r["roofs"]] == ["0", "1"] and all(d["memory_bandwidth_gbs"]["median"] > 0 and d["peak_gflops"]["float32"]["median"] > 0 for d in r["roofs"])'
# Each passing case on the roofline: its work, and a sol against the roofs
# the run measured; a sol above 1 would be an error, never a score.
check "a passing case records its work and sol" json_true "$RUN/cases/level1/5_Matmul/result.json" \
  'all(p["flops"] == 2 * 256 * 192 * 256 and p["bytes"] == 4 * (256 * 192 + 192 * 256 + 256 * 256) and p["bytes"] > 0 and p["bound"] in ("memory", "compute") and p["limit_ms"] > 0 and (p["sol"] > 0) and p["roofs"]["cores"] in ("0", "1") for p in [r["performance"]["roofline"]])'
check "summary.md has the roofline and its plot" grep -q "^## Roofline" "$RUN/summary.md"
check "roofline.svg written" grep -q "<svg" "$RUN/roofline.svg"
check "report.html draws the roofline" grep -q 'id="plot-roofline"' "$RUN/report.html"
check "summary.json totals the roofline" json_true "$RUN/summary.json" 'r["totals"]["roofline"]["cases"] + r["totals"]["roofline"]["above_roof"] == 5'
check "fail_correctness carries its evidence" grep -q '"max_abs_err": [0-9]' "$RUN/cases/level1/3_SumReduction/result.json"
check "a passing case has a speedup" grep -q '"speedup": {' "$RUN/cases/level1/1_ReLU/result.json"
check "summary.json counts 5 passes" grep -qE '"pass": 5' "$RUN/summary.json"
check "summary.md counts cheats by rule" grep -qF '| `static.no_kernel` | 1 |' "$RUN/summary.md"
check "fail_cheat names its rule" grep -q '"rule": "static.no_kernel"' "$RUN/cases/level1/2_LeakyReLU/result.json"

expect_exit 0 "kgym monitor --once" "$KGYM" monitor "$RUN" --once
expect_output "level1/4_Softmax" "the monitor frame lists the cases"

check "report.html links a case's SPEC.md" grep -qF 'href="cases/level1/5_Matmul/SPEC.md"' "$RUN/report.html"
no_escape_code() { ! grep -q $'\x1b' <<<"$1"; }
check "output to a pipe has no escape code" no_escape_code "$RUN_OUT"

rm "$RUN/summary.json" "$RUN/summary.md" "$RUN/report.html"
expect_exit 0 "kgym report regenerates the summary" "$KGYM" report "$RUN"
check "report.html regenerated" test -s "$RUN/report.html"
check "summary.md regenerated" test -s "$RUN/summary.md"
check "summary.json regenerated" test -s "$RUN/summary.json"

finish
