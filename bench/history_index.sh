#!/usr/bin/env bash
# The run history (docs/history.md) at scale: RUNS run directories of CASES
# cases each (default 100 x 100 = 10,000 result.json files, made up by a
# small stdlib-Python generator: 5 models, verdicts, speedup intervals,
# tokens and cost), then
#   (a) the time of `kgym history index` over them into a new database
#       (target <= 10 s on a 2-core machine),
#   (b) the time of re-indexing them unchanged (every run skipped),
#   (c) the time of `kgym leaderboard` over the result (target <= 0.5 s).
# Usage: bench/history_index.sh [path/to/kgym]
#   KGYM_BENCH_RUNS=100 KGYM_BENCH_CASES=100   the sizes
#   KGYM_BENCH_KEEP=1                          keep the work directory
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
KGYM="$(realpath "${1:-$ROOT/build/kgym}")"
RUNS="${KGYM_BENCH_RUNS:-100}"
CASES="${KGYM_BENCH_CASES:-100}"
WORK="$(mktemp -d "${TMPDIR:-/tmp}/kgym-history-bench.XXXXXX")"
if [ -n "${KGYM_BENCH_KEEP:-}" ]; then
  echo "work: $WORK"
else
  trap 'rm -rf "$WORK"' EXIT
fi

/usr/bin/python3 - "$WORK/runs" "$RUNS" "$CASES" <<'PY'
import json, os, random, sys
root, runs, cases = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
rng = random.Random(7)
models = ["model-a", "model-b", "model-c", "model-d", "model-e"]
verdicts = ["pass"] * 6 + ["fail_correctness", "compile_error", "runtime_error", "fail_cheat"]
for i in range(runs):
    model = models[i % len(models)]
    run_dir = os.path.join(root, f"run-{i:03d}")
    config = {"agent": {"kind": "command", "model": model}, "level": "level1", "cases": "", "concurrency": 1}
    os.makedirs(os.path.join(run_dir, "cases", "level1"), exist_ok=True)
    json.dump({"schema_version": 1, "run_dir": run_dir, "started_at": 1780000000 + 3600 * i, "config": config,
               "backend": "cpu", "mode": "performance", "torch_version": "2.5.1", "torch_build": "cpu",
               "machine": {"hostname": "bench", "cpu_model": "Bench CPU"}},
              open(os.path.join(run_dir, "run.json"), "w"), indent=2)
    json.dump({"schema_version": 1, "status": "finished", "updated_at": 1780000000 + 3600 * i + 1800},
              open(os.path.join(run_dir, "state.json"), "w"), indent=2)
    for c in range(1, cases + 1):
        case_id = f"level1/{c}_Op{c}"
        verdict = rng.choice(verdicts)
        perf = None
        if verdict == "pass":
            s = rng.lognormvariate(0.2, 0.5)
            ref = rng.uniform(0.5, 5.0)
            perf = {"reference": {"median_ms": ref, "samples": 40, "ci95_ms": [ref * 0.98, ref * 1.02]},
                    "candidate": {"median_ms": ref / s, "samples": 40, "ci95_ms": [ref / s * 0.97, ref / s * 1.03]},
                    "speedup": {"median": s, "ci95": [s * 0.95, s * 1.05]},
                    "noise_floor": {"median": 1.0, "ci95": [0.99, 1.01]},
                    "stop_reason": "target_rse", "flags": []}
        result = {"schema_version": 1, "case_id": case_id, "verdict": verdict, "reason": "generated",
                  "backend": "cpu", "mode": "performance", "execution": "device",
                  "cheat": {"rule": "static.torch_op", "layer": "static", "evidence": "model_new.py:3"}
                  if verdict == "fail_cheat" else None,
                  "static_findings": [],
                  "correctness": {"trials": 6, "trials_passed": 6 if verdict == "pass" else 0,
                                  "shapes": ["(128, 4096)"], "max_abs_err": 1e-6, "max_rel_err": 1e-5,
                                  "seeds": [rng.getrandbits(63) for _ in range(6)], "distributions": ["given"] * 6},
                  "performance": perf,
                  "generation": {"outcome": "ok", "exit_code": 0, "duration_s": 120.0, "agent": "command",
                                 "model": model, "tokens": {"in": rng.randint(5000, 90000), "out": rng.randint(500, 9000)},
                                 "cost": round(rng.uniform(0.01, 0.9), 4), "tool_calls": 12},
                  "timings": {"generate_s": 120.0, "verify_s": 20.0, "total_s": 140.0}}
        case_dir = os.path.join(run_dir, "cases", case_id)
        os.makedirs(case_dir, exist_ok=True)
        json.dump(result, open(os.path.join(case_dir, "result.json"), "w"), indent=2)
PY
echo "generated $RUNS runs x $CASES cases = $((RUNS * CASES)) result.json files under $WORK/runs"
sync

seconds() { /usr/bin/python3 -c 'import time; print(time.monotonic())'; }
elapsed() { /usr/bin/python3 -c "print(f'{$2 - $1:.2f}')"; }

t0=$(seconds)
"$KGYM" history index "$WORK/runs" --db "$WORK/history.db" | tail -n 1
t1=$(seconds)
"$KGYM" history index "$WORK/runs" --db "$WORK/history.db" | tail -n 1
t2=$(seconds)
"$KGYM" leaderboard --db "$WORK/history.db" >"$WORK/leaderboard.txt"
t3=$(seconds)
cat "$WORK/leaderboard.txt"
echo
echo "(a) index $((RUNS * CASES)) results into a new database: $(elapsed "$t0" "$t1") s (target <= 10 s)"
echo "(b) re-index, every run unchanged:                   $(elapsed "$t1" "$t2") s"
echo "(c) leaderboard query:                               $(elapsed "$t2" "$t3") s (target <= 0.5 s)"
