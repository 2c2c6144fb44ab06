#!/usr/bin/env bash
# Per-case verification overhead with cold workers (a new Python + torch per
# worker) and warm workers (forked from per-device zygotes): the same cases
# of the bundled sample set, run with verifier.warm_workers off, then on.
#
# Figures come from each case's result.json timings (docs/results.md):
#   worker start  worker_start_s: from asking for the two workers until both
#                 said hello; the hellos carry the workers' own start and
#                 ready instants (docs/worker-protocol.md)
#   harness       verify_s - trials_s - timing_s: everything in the
#                 verification that is not the kernels' trials and timing
#                 (worker start, the reference's model build, the import of
#                 the built candidate, ModelNew's build, static gate,
#                 shutdown, logs); the compile is the build stage's, before
#                 the verification (docs/build.md)
#   probe         the case's time in its probing phase (events.jsonl): the
#                 reference probe for SPEC.md, cold or forked from the zygote
# Cases run one at a time (concurrency 1) so the figures do not include
# waiting for another case's device.
# Usage: bench/warm_workers.sh [path/to/kgym] [cases] [mode]
#        (default cases 1,4,5,6,7; mode correctness)
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
KGYM="${1:-$ROOT/build/kgym}"
CASES="${2:-1,4,5,6,7}"
MODE="${3:-correctness}"
WORK="$(mktemp -d "${TMPDIR:-/tmp}/kgym-bench.XXXXXX")"
trap 'rm -rf "$WORK"' EXIT
# The usual compile cache (KGYM_CACHE_DIR or ~/.cache/kgym): compiling is not
# overhead, and both runs see the same cache state after the first.

run() {  # run NAME WARM
  "$KGYM" run --set output.root_dir="$WORK/runs" --set output.run_name="$1" --set cases="$CASES" \
    --set verifier.mode="$MODE" --set concurrency=1 --set verifier.warm_workers="$2" >"$WORK/$1.log" 2>&1 || true
}

echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
run cold off
run warm on
echo "load average after:  $(cut -d' ' -f1-3 /proc/loadavg)"
tail -n 3 "$WORK/cold.log" "$WORK/warm.log"
/usr/bin/python3 - "$WORK/runs" <<'PY'
import glob, json, os, statistics, sys

def figures(run_dir):
    rows = {}
    for path in sorted(glob.glob(os.path.join(run_dir, "cases", "*", "*", "result.json"))):
        r = json.load(open(path))
        t = r["timings"]
        if t.get("verify_s") is None or t.get("worker_start_s") is None:
            continue
        kernels = sum(t.get(k) or 0 for k in ("trials_s", "timing_s"))
        rows[r["case_id"]] = {"verdict": r["verdict"], "start": t["worker_start_s"], "load": t.get("load_s") or 0,
                              "compile": t.get("compile_s") or 0, "harness": t["verify_s"] - kernels,
                              "verify": t["verify_s"]}
    return rows

def probes(run_dir):
    """Seconds each case spent probing, from the event log."""
    began, took = {}, {}
    for line in open(os.path.join(run_dir, "events.jsonl")):
        e = json.loads(line)
        case, phase, at = e.get("case"), e.get("phase"), e.get("t")
        if case is None or at is None:
            continue
        if phase == "probing":
            began[case] = at
        elif case in began and case not in took and phase not in (None, "probing"):
            took[case] = at - began[case]
    return took

runs = {name: os.path.join(sys.argv[1], name) for name in ("cold", "warm")}
cold, warm = figures(runs["cold"]), figures(runs["warm"])
probe = {name: probes(d) for name, d in runs.items()}
common = sorted(c for c in cold if c in warm)
print(f"{'case':22} {'verdict':9} {'start cold':>10} {'start warm':>10} {'harness cold':>12} {'harness warm':>12}"
      f" {'probe cold':>10} {'probe warm':>10} {'load':>6} {'compile':>8}")
for case in common:
    c, w = cold[case], warm[case]
    pc, pw = probe["cold"].get(case), probe["warm"].get(case)
    fmt = lambda v: f"{v:10.3f}" if v is not None else f"{'-':>10}"
    print(f"{case:22} {w['verdict']:9} {c['start']:10.3f} {w['start']:10.3f} {c['harness']:12.3f} {w['harness']:12.3f}"
          f" {fmt(pc)} {fmt(pw)} {w['load']:6.3f} {w['compile']:8.2f}")
if common:
    med = lambda rows, key: statistics.median(rows[c][key] for c in common)
    print(f"median worker start: cold {med(cold, 'start'):.3f} s, warm {med(warm, 'start'):.3f} s; "
          f"median harness overhead: cold {med(cold, 'harness'):.3f} s, warm {med(warm, 'harness'):.3f} s "
          f"({len(common)} cases)")
    for name in ("cold", "warm"):
        values = [probe[name][c] for c in common if c in probe[name]]
        if values:
            print(f"median probe ({name}): {statistics.median(values):.3f} s")
PY
