#!/usr/bin/env bash
# Scheduler throughput and harness memory: fake-agent cases (1,000 unless
# told) through the real scheduler, state store and result files (children
# are scripted fakes, so only the harness's own work is timed). The harness's
# cost must be linear in the number of cases. Targets, run dir on tmpfs:
# <= 5 s for 1,000 cases, <= 15 s for 10,000, and 50,000 run to the end.
# Run twice: run dir on tmpfs (harness overhead) and on the build disk (adds
# the fsyncs of result.json, generation.json and events.jsonl).
#   bench/scheduler_throughput.sh [CASES] [CONCURRENCY]
# KGYM_BENCH_DISK=0 skips the run on disk; KGYM_BENCH_LIVE=1 draws the
# terminal's status line (to /dev/null) as an interactive run does.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD="${KGYM_BUILD_DIR:-$ROOT/build}"
cmake --build "$BUILD" --target kgym_bench_scheduler >/dev/null
CASES="${1:-1000}"
CONCURRENCY="${2:-8}"
if [ -d /dev/shm ]; then
  echo "== run dir on tmpfs (/dev/shm)"
  TMPDIR=/dev/shm "$BUILD/kgym_bench_scheduler" "$CASES" "$CONCURRENCY"
fi
if [ "${KGYM_BENCH_DISK:-1}" != 0 ]; then
  echo "== run dir on disk ($BUILD)"
  TMPDIR="$BUILD" "$BUILD/kgym_bench_scheduler" "$CASES" "$CONCURRENCY"
fi
