#!/usr/bin/env bash
# Fetches a PyPTO checkout, the work repository of the PyPTO layout
# (agent.work_repo, docs/agents.md), into a cache dir, or updates it.
#   scripts/download_pypto.sh [DIR]
# DIR defaults to $KGYM_CACHE/pypto ($KGYM_CACHE: ~/.cache/kgym).
# PYPTO_URL and PYPTO_BRANCH override the source.
set -euo pipefail
cache="${KGYM_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/kgym}"
exec "$(dirname "$0")/git_fetch_cache.sh" pypto \
  "${PYPTO_URL:-https://gitcode.com/cann/pypto.git}" \
  "${PYPTO_BRANCH:-master}" "${1:-$cache/pypto}"
