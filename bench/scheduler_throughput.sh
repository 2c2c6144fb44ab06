#!/usr/bin/env bash
# Scheduler throughput and harness memory: 1,000 fake-agent cases through
# the real scheduler, state store and result files (children are scripted
# fakes, so only the harness's own work is timed). Target: <= 5 s for 1,000
# cases. Run twice: run dir on tmpfs (harness overhead) and on the build
# disk (adds the fsyncs of result.json, generation.json and events.jsonl).
#   bench/scheduler_throughput.sh [CASES] [CONCURRENCY]
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
echo "== run dir on disk ($BUILD)"
TMPDIR="$BUILD" "$BUILD/kgym_bench_scheduler" "$CASES" "$CONCURRENCY"
