#!/usr/bin/env bash
# Fetches KernelBench (the problem set) into a cache dir, or updates it.
#   scripts/download_kernelbench.sh [DIR]
# DIR defaults to $KGYM_CACHE/KernelBench ($KGYM_CACHE: ~/.cache/kgym). The
# problems are then in DIR/KernelBench/level1 ...: use
#   bench_dir: DIR/KernelBench
# KERNELBENCH_URL and KERNELBENCH_BRANCH override the source.
set -euo pipefail
cache="${KGYM_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/kgym}"
exec "$(dirname "$0")/git_fetch_cache.sh" kernelbench \
  "${KERNELBENCH_URL:-https://github.com/ScalingIntelligence/KernelBench.git}" \
  "${KERNELBENCH_BRANCH:-main}" "${1:-$cache/KernelBench}"
