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
    verify) echo "verify worker static_check core util" ;;
    run) echo "run agent verify worker static_check report core util" ;;
    app) echo "app run agent verify worker static_check report monitor core util" ;;
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
if [ "$violations" -gt 0 ]; then
  echo "$violations layering violation(s); see ARCHITECTURE.md"
  exit 1
fi
echo "layering ok"
