#!/usr/bin/env bash
# The Slurm coordinator's own cost: N fake-agent cases (an agent that writes
# nothing, so each task ends generation_failed after its probe) through a
# real single-node Slurm started by tests/slurm/cluster.sh. Prints the run's
# wall time, the coordinator's CPU time (with its sbatch/squeue/scontrol
# calls) and peak memory, and both per case.
#   bench/slurm_coordinator.sh [CASES] [MAX_PARALLEL]
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
KGYM="${KGYM:-$ROOT/build/kgym}"
CASES="${1:-200}"
PARALLEL="${2:-2}"
WORK="$(mktemp -d /tmp/kgym-slurm-bench.XXXXXX)"
# KGYM_BENCH_KEEP=1 keeps the run directory.
trap '"$ROOT/tests/slurm/cluster.sh" stop "$WORK/c" >/dev/null 2>&1; [ -n "${KGYM_BENCH_KEEP:-}" ] || rm -rf "$WORK"' EXIT
eval "$("$ROOT/tests/slurm/cluster.sh" start "$WORK/c")"
mkdir -p "$WORK/bench/level1"
for n in $(seq "$CASES"); do
  sed -e 's/^dim = 4096/dim = 64/' "$ROOT/data/sample/level1/1_ReLU.py" >"$WORK/bench/level1/${n}_ReLU.py"
done
cat >"$WORK/run.yaml" <<YAML
bench_dir: $WORK/bench
level: level1
output: {root_dir: $WORK/runs, run_name: bench}
verifier: {backend: cpu, mode: correctness}
agent: {kind: command, argv: ["/bin/true"], timeout_sec: 5}
executor: {kind: slurm, slurm: {cpus_per_task: 1, max_parallel: $PARALLEL, poll_sec: 1}}
YAML
cd "$WORK"
python3 - "$CASES" "$KGYM" run --config "$WORK/run.yaml" <<'PY'
import collections, glob, json, os, resource, subprocess, sys, time
cases = int(sys.argv[1])
tick = os.sysconf("SC_CLK_TCK")
start = time.monotonic()
child = subprocess.Popen(sys.argv[2:], stdout=subprocess.DEVNULL)
hwm_kb, own_cpu = 0, 0.0
while child.poll() is None:
    try:  # the coordinator alone: its peak RSS and CPU, read while it lives
        with open(f"/proc/{child.pid}/status") as f:
            hwm_kb = max([hwm_kb] + [int(l.split()[1]) for l in f if l.startswith("VmHWM:")])
        with open(f"/proc/{child.pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
            own_cpu = (int(fields[11]) + int(fields[12])) / tick
    except (OSError, ValueError, IndexError):
        pass
    time.sleep(0.1)
wall = time.monotonic() - start
usage = resource.getrusage(resource.RUSAGE_CHILDREN)  # with the commands it ran (python checks, squeue, ...)
total_cpu = usage.ru_utime + usage.ru_stime
results = [json.load(open(p)) for p in glob.glob("runs/bench/cases/*/*/result.json")]
verdicts = collections.Counter(r["verdict"] for r in results)
print(f"cases {cases}  exit {child.returncode}  verdicts {dict(verdicts)}")
print(f"wall {wall:.1f} s ({wall / cases:.2f} s per case; every task runs on the one 2-core node)")
print(f"coordinator alone: CPU {own_cpu:.2f} s ({1000 * own_cpu / cases:.1f} ms per case), peak RSS {hwm_kb / 1024:.1f} MiB")
print(f"with its commands (preflight python, sbatch, squeue, scontrol): CPU {total_cpu:.2f} s "
      f"({1000 * total_cpu / cases:.1f} ms per case)")
for r in results:
    if r["verdict"] != "generation_failed":
        print(f"  {r['case_id']}: {r['verdict']}: {r['reason']}")
PY
