#!/usr/bin/env bash
# The real KernelBench on the CPU: `kgym lint` and a baseline (A/A) `kgym
# run` over its levels with problem.size: auto, written up as
# docs/kernelbench-cpu.md (or KGYM_BENCH_OUT). The baseline run's candidate
# is each problem's own Model (agent.kind: reference), so every problem that
# runs on this torch should pass with a speedup interval containing 1;
# anything else is a harness defect or a property of the problem that the
# lint names. Each passing case's reference is also set against the
# machine's roofline (docs/roofline.md): the median sol per level, the five
# problems farthest from and closest to their limit, any above the roof.
#
# Usage: bench/kernelbench_cpu.sh [KERNELBENCH_DIR] [path/to/kgym] [kgym run options...]
#   KGYM_BENCH_LEVELS="level1 level2"  the levels (default: level1 level2 level3)
#   KGYM_BENCH_CASES="1:20"            a selector within each level (default: all)
#   KGYM_BENCH_OUT=FILE                where the table goes (default: docs/kernelbench-cpu.md,
#                                      docs/kernelbench-cpu-PRECISION.md with --precision)
#   KGYM_BENCH_REPORT=DIR              only write the table again, from a work dir kept before
#   KGYM_BENCH_PYTHON=PATH             the workers' interpreter (default: `./dev.sh extras`,
#                                      Debian's torch with einops, which level 3 imports)
#   e.g. bench/kernelbench_cpu.sh ../shared/KernelBench build/kgym --precision bfloat16
# Each problem's verification leases one core of the two ("0", "1") and
# times for 2 s; the run takes two problems at a time.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
BENCH="$(cd "${1:-$ROOT/../shared/KernelBench}" && pwd)"
KGYM="${2:-$ROOT/build/kgym}"
shift $(($# < 2 ? $# : 2))
EXTRA=("$@")
LEVELS=(${KGYM_BENCH_LEVELS:-level1 level2 level3})
CASES="${KGYM_BENCH_CASES:-}"
precision=""
for ((i = 0; i < ${#EXTRA[@]}; i++)); do
  [ "${EXTRA[$i]}" = --precision ] && precision="${EXTRA[$((i + 1))]:-}"
done
OUT="${KGYM_BENCH_OUT:-$ROOT/docs/kernelbench-cpu${precision:+-$precision}.md}"
[ -n "${KGYM_BENCH_REPORT:-}" ] || PYTHON="${KGYM_BENCH_PYTHON:-$("$ROOT/dev.sh" extras | tail -n 1)}"
if [ -n "${KGYM_BENCH_REPORT:-}" ]; then
  WORK="$KGYM_BENCH_REPORT"
else
  WORK="$(mktemp -d "${TMPDIR:-/tmp}/kgym-kb.XXXXXX")"
  # KGYM_BENCH_KEEP=1 keeps the run directory (its path is printed).
  if [ -z "${KGYM_BENCH_KEEP:-}" ]; then trap 'rm -rf "$WORK"' EXIT; else echo "work: $WORK"; fi
fi

selector=""
for level in "${LEVELS[@]}"; do selector+="${selector:+;}$level=${CASES:-1:1000}"; done
if [ -z "${KGYM_BENCH_REPORT:-}" ]; then
cat >"$WORK/baseline.yaml" <<EOF
bench_dir: $BENCH
cases: "$selector"
devices: ["0", "1"]
concurrency: 2
agent: {kind: reference}
problem: {size: auto}
verifier:
  python: $PYTHON
  timeout_sec: 600
  timing: {budget_sec: 2}
output: {root_dir: $WORK/runs, run_name: baseline}
EOF

start=$(date +%s)
for level in "${LEVELS[@]}"; do
  "$KGYM" lint --bench-dir "$BENCH" --level "$level" --python "$PYTHON" "${CASES:-}" "${EXTRA[@]}" \
    >"$WORK/lint-$level.txt" 2>&1 || true
done
lint_s=$(($(date +%s) - start))
start=$(date +%s)
"$KGYM" run --config "$WORK/baseline.yaml" "${EXTRA[@]}" >"$WORK/run.log" 2>&1 || true
run_s=$(($(date +%s) - start))
echo "$lint_s $run_s" >"$WORK/times.txt"

fi
read -r lint_s run_s <"$WORK/times.txt"

/usr/bin/python3 - "$WORK" "$OUT" "$lint_s" "$run_s" "$selector" "${precision:-as_written}" "${LEVELS[@]}" <<'PY'
import glob, json, os, re, statistics, subprocess, sys
work, out, lint_s, run_s, selector, precision = sys.argv[1:7]
levels = sys.argv[7:]
run_dir = os.path.join(work, "runs", "baseline")
results = {}
for path in glob.glob(os.path.join(run_dir, "cases", "*", "*", "result.json")):
    r = json.load(open(path))
    results[r["case_id"]] = r
torch = "?"
try:
    torch = json.load(open(os.path.join(run_dir, "run.json"))).get("torch_version", "?")
except OSError:
    pass
lines = [
    "# KernelBench on the CPU",
    "",
    "Written by `bench/kernelbench_cpu.sh`: `kgym lint` and a baseline (A/A) `kgym run` (agent.kind:",
    "reference, problem.size: auto, one core per verification, 2 s of timing) over the levels below, on",
    f"this machine ({os.cpu_count()} cores, torch {torch}, precision {precision}). A baseline case's candidate is the problem's",
    "own Model: every problem that runs should pass with a speedup interval containing 1. The interval's",
    "median width says how much that means. \"timed contended\": other processes took over 10 % of the",
    "case's leased core while it was timed (its flag `contended`); such intervals describe a busy machine.",
    "",
    f"Selection: `{selector}`. Wall time: lint {lint_s} s, baseline run {run_s} s.",
    "",
    "| level | problems | runnable | pass A/A | interval contains 1 | A/A median | spread (p10-p90)/2 | median interval width | timed contended | lint findings |",
    "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
]
details = []
for level in levels:
    ids = sorted((r for r in results if r.startswith(level + "/")), key=lambda i: int(re.match(r".*/(\d+)_", i).group(1)))
    runnable = [i for i in ids if results[i]["verdict"] != "reference_error"]
    passed = [i for i in runnable if results[i]["verdict"] == "pass"]
    timed = [i for i in passed if (results[i].get("performance") or {}).get("speedup", {}).get("ci95")]
    contains = [i for i in timed if results[i]["performance"]["speedup"]["ci95"][0] <= 1 <= results[i]["performance"]["speedup"]["ci95"][1]]
    medians = sorted(results[i]["performance"]["speedup"]["median"] for i in timed)
    median = f"{statistics.median(medians):.3f}" if medians else "-"
    spread = "-"
    if len(medians) >= 2:
        q = statistics.quantiles(medians, n=10)
        spread = f"{(q[-1] - q[0]) / 2:.3f}"
    widths = sorted(results[i]["performance"]["speedup"]["ci95"][1] - results[i]["performance"]["speedup"]["ci95"][0] for i in timed)
    width = f"{statistics.median(widths):.3f}" if widths else "-"
    lint_text = open(os.path.join(work, f"lint-{level}.txt")).read() if os.path.exists(os.path.join(work, f"lint-{level}.txt")) else ""
    findings = [l for l in lint_text.splitlines() if re.match(r"^level\d+/\S+: [a-z_]+ — ", l)]
    contended = [i for i in timed if "contended" in (results[i]["performance"].get("flags") or [])]
    lines.append(f"| {level} | {len(ids)} | {len(runnable)} | {len(passed)} | {len(contains)} of {len(timed)} | {median} | {spread} | {width} | {len(contended)} | {len(findings)} |")
    details.append(f"\n## {level}\n")
    nonpass = [i for i in ids if results[i]["verdict"] != "pass"]
    outside = [i for i in timed if i not in contains]
    if nonpass or outside:
        details.append("Cases that did not pass A/A, or whose interval excludes 1:\n")
        def load(i):
            p = results[i].get("performance") or {}
            share = p.get("foreign_cpu_share")
            return f" (timed contended: other processes took {share:.0%} of its core)" if "contended" in (p.get("flags") or []) and share is not None else ""
        for i in nonpass:
            details.append(f"- `{i}`: {results[i]['verdict']} — {results[i]['reason'][:300]}{load(i)}")
        for i in outside:
            s = results[i]["performance"]["speedup"]
            details.append(f"- `{i}`: pass, speedup {s['median']:.3f} [{s['ci95'][0]:.3f}, {s['ci95'][1]:.3f}]{load(i)}")
        details.append("")
    if findings:
        details.append("Lint findings:\n")
        details.extend(f"- {l}" for l in findings)
    if not (nonpass or outside or findings):
        details.append("Every problem passed A/A with an interval containing 1; the lint found nothing.")
# The roofline (docs/roofline.md): each passing case's reference against the
# limit of its problem's counted work at the machine's roofs.
roof_lines = ["", "## Roofline", "",
              "Each passing case's reference (the A/A run's two sides are the problem's own Model) against",
              "the roofline's time for its counted work (bytes moved, FLOPs) at the roofs of its core",
              "(`kgym roofline`): sol = limit / median time. A sol above 1 is an error of the count or the",
              "roof, listed below and left out of the medians.", "",
              "| level | cases on the roofline | median reference sol | p10 | p90 | memory-bound | compute-bound | above the roof | without roofs | with uncounted ops |",
              "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
roof_details = []
for level in levels:
    ids = [i for i in results if i.startswith(level + "/") and results[i]["verdict"] == "pass"]
    roofs = {i: (results[i].get("performance") or {}).get("roofline") for i in ids}
    roofs = {i: r for i, r in roofs.items() if r}
    placed = {i: r for i, r in roofs.items() if r.get("roofs") and r.get("reference_sol") is not None}
    sound = {i: r for i, r in placed.items() if not r.get("errors")}
    above = {i: r for i, r in placed.items() if r.get("errors")}
    sols = sorted(r["reference_sol"] for r in sound.values())
    def q(p):
        return f"{statistics.quantiles(sols, n=10)[p]:.3f}" if len(sols) >= 2 else "-"
    uncounted = {i: r for i, r in roofs.items() if r.get("uncounted_ops")}
    roof_lines.append(
        f"| {level} | {len(sound)} | {statistics.median(sols):.3f} | {q(0)} | {q(-1)} | "
        f"{sum(r['bound'] == 'memory' for r in sound.values())} | {sum(r['bound'] == 'compute' for r in sound.values())} | "
        f"{len(above)} | {len(roofs) - len(placed)} | {len(uncounted)} |" if sols else
        f"| {level} | 0 | - | - | - | - | - | {len(above)} | {len(roofs) - len(placed)} | {len(uncounted)} |")
    ranked = sorted(sound.items(), key=lambda kv: kv[1]["reference_sol"])
    def row(i, r):
        ms = results[i]["performance"]["reference"]["median_ms"]
        return (f"- `{i}`: sol {r['reference_sol']:.4f}, {ms:.3f} ms against a limit of {r['limit_ms']:.4f} ms "
                f"({r['bound']}-bound, {r['bytes'] / 1e6:.1f} MB from {r['roofs']['memory_level']}, "
                f"{r['flops'] / 1e9:.3g} GFLOP, {r['intensity']:.3g} FLOP/byte)")
    if ranked:
        roof_details.append(f"\n### {level}: farthest from the limit\n")
        roof_details.extend(row(i, r) for i, r in ranked[:5])
        roof_details.append(f"\n### {level}: closest to the limit\n")
        roof_details.extend(row(i, r) for i, r in reversed(ranked[-5:]))
    if above:
        roof_details.append(f"\n### {level}: above the roof (errors)\n")
        roof_details.extend(f"- `{i}`: {'; '.join(r['errors'])}" for i, r in sorted(above.items()))
    if uncounted:
        ops = {}
        for r in uncounted.values():
            for op, calls in r["uncounted_ops"].items():
                ops[op] = ops.get(op, 0) + 1
        roof_details.append(f"\n{level}: ops without a FLOP formula (cases): " +
                            ", ".join(f"`{op}` ({n})" for op, n in sorted(ops.items(), key=lambda kv: -kv[1])))
# Where each level's timing phase goes, and what that does to the width:
# drawing fresh input sets (about 1 GB/s on one core) against the calls.
cost_lines = ["", "## Where the timing goes", "",
              "Per level, medians over the timed cases: rounds of the four batches, timed samples per side,",
              "the timing phase's length, the share of it spent drawing fresh input sets from `get_inputs()`,",
              "one set's size, the reference's call, and the interval's median width by the figure's clock",
              "(`parent`: the parent's clock around each batch; `worker_bounded`: the workers' clocks bounded",
              "by it, where the harness is most of a batch) and by rounds.", "",
              "| level | rounds | samples per side | timing phase s | drawing sets | MB per set | reference call ms | width, parent clock (cases) | width, worker_bounded (cases) | width, < 16 rounds (cases) | width, >= 16 rounds (cases) |",
              "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
def med(values, fmt="{:.3f}"):
    return fmt.format(statistics.median(values)) if values else "-"
def interval_width(estimate):
    ci = (estimate or {}).get("ci95")
    return ci[1] - ci[0] if ci else None
def width_of(i):
    return interval_width(results[i]["performance"]["speedup"])
for level in levels:
    timed = [i for i in results if i.startswith(level + "/") and results[i]["verdict"] == "pass"
             and (results[i].get("performance") or {}).get("speedup", {}).get("ci95")]
    perf = {i: results[i]["performance"] for i in timed}
    rounds = {i: len(p.get("rounds_ms") or []) for i, p in perf.items()}
    def split(pred):
        w = [width_of(i) for i in timed if pred(i)]
        return f"{med(w)} ({len(w)})"
    make = [p["inputs"]["make_s"] / p["measure_s"] for p in perf.values() if p.get("inputs") and p.get("measure_s")]
    mb = [p["inputs"]["megabytes"] / p["inputs"]["sets"] for p in perf.values() if p.get("inputs") and p["inputs"].get("sets")]
    cost_lines.append(
        f"| {level} | {med(list(rounds.values()), '{:.0f}')} | {med([p['reference']['samples'] for p in perf.values()], '{:.0f}')} | "
        f"{med([p['measure_s'] for p in perf.values() if p.get('measure_s')], '{:.2f}')} | {med(make, '{:.0%}')} | {med(mb, '{:.1f}')} | "
        f"{med([p['reference']['median_ms'] for p in perf.values()])} | {split(lambda i: perf[i].get('clock') == 'parent')} | "
        f"{split(lambda i: perf[i].get('clock') == 'worker_bounded')} | {split(lambda i: rounds[i] < 16)} | {split(lambda i: rounds[i] >= 16)} |")
# Where the width comes from: the interval over the rounds alone
# (performance.paired_speedup) against the one widened by the noise floors'
# estimate of the process term, the fixed difference between two processes
# running the same code, which more rounds do not shrink.
split_lines = ["", "## Where the width comes from", "",
               "Per level, over the timed cases whose record has the paired interval (`performance.paired_speedup`:",
               "the interval over the rounds alone, before the noise floors widen it): its median width, how many of",
               "those intervals hold 1 (an A/A interval that excludes 1 shows a difference between the processes,",
               "not between the sides), the median process term each floor reads (how far R/T and C/D lie from 1),",
               "and the median width after the widening; the same for the cases with 16 rounds or more.", "",
               "| level | cases | paired width | paired holds 1 | process term R/T | process term C/D | width | paired width, >= 16 rounds | width, >= 16 rounds (cases) |",
               "|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
def term(floor):
    m = (floor or {}).get("median")
    return abs(m - 1) if m else None
for level in levels:
    perf = {i: results[i]["performance"] for i in results if i.startswith(level + "/") and results[i]["verdict"] == "pass"
            and (results[i].get("performance") or {}).get("speedup", {}).get("ci95")
            and interval_width(results[i]["performance"].get("paired_speedup")) is not None}
    if not perf:
        split_lines.append(f"| {level} | 0 | - | - | - | - | - | - | - |")
        continue
    paired = [interval_width(p["paired_speedup"]) for p in perf.values()]
    holds = sum(p["paired_speedup"]["ci95"][0] <= 1 <= p["paired_speedup"]["ci95"][1] for p in perf.values())
    ref_terms = [t for t in (term(p.get("noise_floor")) for p in perf.values()) if t is not None]
    cand_terms = [t for t in (term(p.get("candidate_noise_floor")) for p in perf.values()) if t is not None]
    long = [p for p in perf.values() if len(p.get("rounds_ms") or []) >= 16]
    split_lines.append(
        f"| {level} | {len(perf)} | {med(paired)} | {holds} of {len(perf)} | {med(ref_terms, '{:.1%}')} | "
        f"{med(cand_terms, '{:.1%}')} | {med([width_of(i) for i in perf])} | "
        f"{med([interval_width(p['paired_speedup']) for p in long])} | {med([interval_width(p['speedup']) for p in long])} ({len(long)}) |")
lines += cost_lines + split_lines
lines += roof_lines + roof_details
with open(out, "w") as f:
    f.write("\n".join(lines + details) + "\n")
print("\n".join(lines))
PY
echo "written: $OUT"
