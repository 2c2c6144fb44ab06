#!/usr/bin/env bash
# Per-case verification overhead with cold workers (a new Python + torch per
# worker) and warm workers (forked from per-device zygotes): the same cases
# of the bundled sample set, run with verifier.warm_workers off, then on.
#
# Overhead of one case = worker start (verification start until both
# workers have answered hello, read from verify/verify.log) + shutdown (the
# verdict line until verify_s ends). Everything between is the kernels' own
# work (loading the problem, compiling/importing the candidate — printed
# separately as compile_s —, trials, timing) and is not counted.
# Usage: bench/warm_workers.sh [path/to/kgym] [cases]   (default cases 1,4,5,6,7)
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
KGYM="${1:-$ROOT/build/kgym}"
CASES="${2:-1,4,5,6,7}"
WORK="$(mktemp -d "${TMPDIR:-/tmp}/kgym-bench.XXXXXX")"
trap 'rm -rf "$WORK"' EXIT
# The usual compile cache (KGYM_CACHE_DIR or ~/.cache/kgym): compiling is not
# overhead, and both runs see the same cache state after the first.

run() {  # run NAME WARM
  "$KGYM" run --set output.root_dir="$WORK/runs" --set output.run_name="$1" --set cases="$CASES" \
    --set verifier.warm_workers="$2" >"$WORK/$1.log" 2>&1 || true
}

run cold off
run warm on
tail -n 3 "$WORK/cold.log" "$WORK/warm.log"
/usr/bin/python3 - "$WORK/runs" <<'PY'
import glob, json, os, re, statistics, sys

def overheads(run_dir):
    rows = {}
    for path in sorted(glob.glob(os.path.join(run_dir, "cases", "*", "*", "result.json"))):
        r = json.load(open(path))
        log = open(os.path.join(os.path.dirname(path), "verify", "verify.log")).read()
        stamps = {m.group(2): float(m.group(1)) for m in re.finditer(r"\[kgym \+([0-9.]+)s\] (\S+ \S+)", log)}
        hello = max(float(m.group(1)) for m in re.finditer(r"\[kgym \+([0-9.]+)s\] \w+ worker pinned", log))
        verdict = float(re.search(r"\[kgym \+([0-9.]+)s\] verdict", log).group(1))
        verify_s = r["timings"]["verify_s"]
        rows[r["case_id"]] = (r["verdict"], hello + (verify_s - verdict), r["timings"].get("compile_s"), verify_s)
    return rows

cold = overheads(os.path.join(sys.argv[1], "cold"))
warm = overheads(os.path.join(sys.argv[1], "warm"))
print(f"{'case':22} {'verdict':9} {'cold ovh':>9} {'warm ovh':>9} {'compile':>8} {'verify cold':>12} {'verify warm':>12}")
for case in sorted(cold):
    c, w = cold[case], warm.get(case)
    if w is None:
        continue
    print(f"{case:22} {w[0]:9} {c[1]:9.3f} {w[1]:9.3f} {w[2] or 0:8.2f} {c[3]:12.2f} {w[3]:12.2f}")
common = [c for c in cold if c in warm]
print(f"median per-case overhead: cold {statistics.median(cold[c][1] for c in common):.3f} s, "
      f"warm {statistics.median(warm[c][1] for c in common):.3f} s  ({len(common)} cases)")
PY
