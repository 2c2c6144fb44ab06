#!/usr/bin/env bash
# Enforces the dependency rule of ARCHITECTURE.md: every #include "x/..." in
# src/<layer>/ must name a layer that <layer> may depend on.
set -euo pipefail
cd "$(dirname "$0")/../src"

allowed() {
  case "$1" in
    util) echo "util" ;;
    core) echo "core util" ;;
    static_check | agent | report | monitor | worker) echo "$1 core util" ;;
    history) echo "history report core util" ;;
    verify) echo "verify worker static_check core util" ;;
    run) echo "run agent verify worker static_check report core util" ;;
    app) echo "app run agent verify worker static_check report monitor history core util" ;;
    *) echo "" ;;
  esac
}

violations=0
for dir in */; do
  layer="${dir%/}"
  ok=" $(allowed "$layer") "
  while IFS=: read -r file line include; do
    target="$(sed -E 's/.*#include "([a-z_]+)\/.*/\1/' <<<"$include")"
    if [[ "$ok" != *" $target "* ]]; then
      echo "src/$file:$line: $layer/ may not include $target/ ($include)"
      violations=$((violations + 1))
    fi
  done < <(grep -rnE '#include "[a-z_]+/' "$layer" || true)
done
# Backends are a type (core/backend.h): no layer compares a backend's name.
while IFS= read -r hit; do
  echo "src/$hit: compares a backend's name; ask core/backend.h's Backend instead"
  violations=$((violations + 1))
done < <(grep -rnE '(backend|backend_name)\)? *[!=]= *"|== *"(cpu|cuda|npu)"' --include='*.cc' --include='*.h' . |
  grep -v '^\./core/backend\.cc:' | grep -v '_test\.cc:' | grep -vE '^[^:]+:[0-9]+: *//' | sed 's|^\./||' || true)

# run/: only the loop (scheduler.*) and the campaigns that create it (campaign.cc,
# and a Slurm task's campaign of one, slurm_task.cc) touch the
# ProcessRunner; a sample's lifecycle (sample_flow.*) returns steps instead.
while IFS= read -r hit; do
  echo "src/$hit: uses the ProcessRunner outside the event loop (run/scheduler.*)"
  violations=$((violations + 1))
done < <(grep -rnw 'ProcessRunner' run --include='*.cc' --include='*.h' |
  grep -vE '^run/(scheduler\.(h|cc)|campaign\.cc|slurm_task\.cc|[a-z_]*_test\.cc|[a-z_]*_test_fixture\.h):' |
  grep -vE '^[^:]+:[0-9]+: *//' || true)

if [ "$violations" -gt 0 ]; then
  echo "$violations layering violation(s); see ARCHITECTURE.md"
  exit 1
fi
echo "layering ok"
