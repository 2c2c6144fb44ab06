#!/usr/bin/env bash
# Wall time of the default job (the bundled sample set), cold and warm:
#   cold  - an empty compile cache, so every C++ candidate is built once;
#   warm  - the same job again, candidates rebuilt from the cache.
# Prints both wall times and, for the warm run, where each case's time went
# (its total, its verification, and the build stage's compile before it). Usage: bench/demo_wall_time.sh [path/to/kgym]
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
KGYM="${1:-$ROOT/build/kgym}"
WORK="$(mktemp -d "${TMPDIR:-/tmp}/kgym-bench.XXXXXX")"
trap 'rm -rf "$WORK"' EXIT
export KGYM_CACHE_DIR="$WORK/cache"

run() {  # run NAME -> prints wall milliseconds
  local start end
  start=$(date +%s%N)
  "$KGYM" run --set output.root_dir="$WORK/runs" --set output.run_name="$1" >"$WORK/$1.log" 2>&1 || true
  end=$(date +%s%N)
  echo $(((end - start) / 1000000))
}

cold=$(run cold)
warm=$(run warm)
echo "demo wall time: cold $((cold / 1000)).$((cold % 1000 / 100)) s (empty compile cache)," \
  "warm $((warm / 1000)).$((warm % 1000 / 100)) s"
printf '\nwarm run, per case (seconds):\n'
/usr/bin/python3 - "$WORK/runs/warm" <<'PY'
import glob, json, os, statistics, sys
rows = []
for path in sorted(glob.glob(os.path.join(sys.argv[1], "cases", "*", "*", "result.json"))):
    r = json.load(open(path))
    t = r["timings"]
    rows.append((r["case_id"], r["verdict"], t.get("total_s"), t.get("verify_s"), t.get("compile_s")))
print(f"{'case':24} {'verdict':17} {'total':>7} {'verify':>7} {'build':>8}")
fmt = lambda v: f"{v:7.2f}" if isinstance(v, (int, float)) else f"{'-':>7}"
for case, verdict, total, verify, compile_s in rows:
    print(f"{case:24} {verdict:17} {fmt(total)} {fmt(verify)} {fmt(compile_s):>8}")
totals = [r[2] for r in rows if r[1] != "timeout" and r[2] is not None]
print(f"median per-case time (timeouts excluded): {statistics.median(totals):.2f} s")
PY
