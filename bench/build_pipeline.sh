#!/usr/bin/env bash
# The build stage (docs/build.md), before and after, on this machine in one
# run. "Before" is kgym as it was before the build stage (BASELINE_COMMIT,
# built once into the cache), where every candidate was built inside its
# verification, on the leased device; "after" is the kgym given.
#   (a) device-held time per passing demo case (device_leased to its
#       verdict, from events.jsonl) / (load + trials + timing) of its
#       result, with an empty compile cache: the device's idle share.
#       Target <= 1.15.
#   (b) cold build time of the sample kernels, with the precompiled header
#       / without (the build stage's compile_s, ccache off), as written
#       (-O3 -fopenmp) and with load_inline's own flags (none). Target <= 0.45.
#   (c) wall time of a replay campaign of 16 distinct never-built
#       candidates (the samples' kernels, each made unique) on 2 devices,
#       after / before, each with an empty compile cache. Target <= 0.6.
# Usage: bench/build_pipeline.sh [path/to/kgym] [path/to/baseline-kgym]
#   KGYM_BENCH_PARTS="a b c"   which figures (default: all three)
#   KGYM_BENCH_KEEP=1          keep the work directory (its path is printed)
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
KGYM="$(realpath "${1:-$ROOT/build/kgym}")"
BASELINE_COMMIT=bfbdc04
PARTS="${KGYM_BENCH_PARTS:-a b c}"
WORK="$(mktemp -d "${TMPDIR:-/tmp}/kgym-build-bench.XXXXXX")"
if [ -n "${KGYM_BENCH_KEEP:-}" ]; then
  echo "work: $WORK"
else
  trap 'rm -rf "$WORK"' EXIT
fi
PY=/usr/bin/python3

# The baseline: BASELINE_COMMIT's tree and binary, made once (a few minutes)
# and kept; its runs read its own bundled config (KGYM_HOME).
BEFORE="${2:-}"
BEFORE_HOME="$ROOT"
if [ -z "$BEFORE" ]; then
  BEFORE_HOME="${XDG_CACHE_HOME:-$HOME/.cache}/kgym/bench/tree-$BASELINE_COMMIT"
  BEFORE="$BEFORE_HOME/build/kgym"
  if [ ! -x "$BEFORE" ]; then
    echo "building the baseline kgym ($BASELINE_COMMIT) once in $BEFORE_HOME ..."
    rm -rf "$BEFORE_HOME"
    git -C "$ROOT" worktree prune
    git -C "$ROOT" worktree add --detach "$BEFORE_HOME" "$BASELINE_COMMIT" >/dev/null
    cmake -S "$BEFORE_HOME" -B "$BEFORE_HOME/build" -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
    ninja -C "$BEFORE_HOME/build" kgym >/dev/null
  fi
fi

run_kgym() {  # run_kgym BINARY CACHE_DIR NAME [--set ...] -> wall seconds on stdout
  local binary="$1" cache="$2" name="$3" home="$ROOT" start end
  shift 3
  [ "$binary" = "$BEFORE" ] && home="$BEFORE_HOME"
  start=$(date +%s%N)
  KGYM_HOME="$home" KGYM_CACHE_DIR="$cache" "$binary" run --set output.root_dir="$WORK/runs" --set output.run_name="$name" \
    "$@" >"$WORK/$name.log" 2>&1 || true
  end=$(date +%s%N)
  $PY -c "print(round(($end - $start) / 1e9, 1))"
}

if [[ " $PARTS " == *" a "* ]]; then
  echo "== (a) device-held time per passing demo case / (load + trials + timing)"
  for side in before after; do
    binary="$KGYM"; [ "$side" = before ] && binary="$BEFORE"
    # An empty compile cache on both sides: every candidate is built.
    run_kgym "$binary" "$WORK/cache-a-$side" "a-$side" >/dev/null
    $PY - "$WORK/runs/a-$side" "$side" <<'PY'
import glob, json, os, statistics, sys
run, side = sys.argv[1], sys.argv[2]
leased, ended = {}, {}
for line in open(os.path.join(run, "events.jsonl")):
    e = json.loads(line)
    if e.get("event") == "device_leased":
        leased[e["case"]] = e["t"]
    elif e.get("event") == "finished":
        ended[e["case"]] = e["t"]
ratios, contended = [], 0
for path in sorted(glob.glob(os.path.join(run, "cases", "*", "*", "result.json"))):
    r = json.load(open(path))
    t = r["timings"]
    if r["verdict"] != "pass" or r["case_id"] not in leased:
        continue
    work = sum(t.get(k) or 0 for k in ("load_s", "trials_s", "timing_s"))
    held = ended[r["case_id"]] - leased[r["case_id"]]
    ratios.append(held / work)
    contended += "contended" in ((r.get("performance") or {}).get("flags") or [])
    print(f"  {side:6} {r['case_id']:24} held {held:6.2f} s  load+trials+timing {work:6.2f} s  "
          f"ratio {held / work:5.2f}  compile_s {t.get('compile_s') or 0:5.2f}")
print(f"  {side}: median ratio {statistics.median(ratios):.2f} over {len(ratios)} passing cases, "
      f"{contended} with the contended flag")
PY
  done
fi

if [[ " $PARTS " == *" b "* ]]; then
  echo "== (b) cold build of the sample kernels: with the precompiled header / without (ccache off)"
  # The kernels as written, and again with load_inline's own flags.
  mkdir -p "$WORK/b/written" "$WORK/b/default"
  for dir in "$ROOT"/data/sample/solutions/level1/*/; do
    stem="$(basename "$dir")"
    grep -q load_inline "$dir/model_new.py" || continue
    cp "$dir/model_new.py" "$WORK/b/written/$stem.py"
    sed -E 's/extra_cflags=\[[^]]*\]/extra_cflags=[]/; s/extra_ldflags=\[[^]]*\]/extra_ldflags=["-fopenmp"]/' \
      "$dir/model_new.py" >"$WORK/b/default/$stem.py"
  done
  b_verify() {  # b_verify FLAVOUR STEM PCH TAG
    KGYM_CACHE_DIR="$WORK/cache-b" "$KGYM" verify --problem "$ROOT/data/sample/level1/$2.py" \
      --candidate "$WORK/b/$1/$2.py" --mode correctness --set verifier.compile_cache=false \
      --set build.precompiled_header="$3" --json "$WORK/b-$4-$1-$2.json" >/dev/null 2>&1 || true
  }
  for flavour in written default; do
    # The header's variants first (a one-time cost per torch, compiler and flag set).
    for file in "$WORK/b/$flavour"/*.py; do b_verify "$flavour" "$(basename "$file" .py)" true warm; done
    for pch in false true; do
      for file in "$WORK/b/$flavour"/*.py; do b_verify "$flavour" "$(basename "$file" .py)" "$pch" "$pch"; done
    done
  done
  $PY - "$WORK" <<'PY'
import glob, json, os, sys
work = sys.argv[1]
def compile_s(path):
    try:
        return json.load(open(path))["timings"].get("compile_s")
    except (OSError, ValueError):
        return None
for flavour, says in (("written", "as written (-O3 -fopenmp)"), ("default", "load_inline's own flags")):
    plain = with_pch = 0.0
    print(f"  {says}:")
    for path in sorted(glob.glob(os.path.join(work, f"b-false-{flavour}-*.json"))):
        stem = os.path.basename(path)[len(f"b-false-{flavour}-"):-5]
        a, b = compile_s(path), compile_s(os.path.join(work, f"b-true-{flavour}-{stem}.json"))
        if a is None or b is None:
            print(f"    {stem}: no build time (plain {a}, with the header {b})")
            continue
        plain += a
        with_pch += b
        print(f"    {stem:18} plain {a:6.2f} s  with the header {b:6.2f} s  ratio {b / a:5.2f}")
    if plain:
        print(f"    total: plain {plain:.1f} s, with the header {with_pch:.1f} s, ratio {with_pch / plain:.2f}")
PY
fi

if [[ " $PARTS " == *" c "* ]]; then
  echo "== (c) replay campaign of 16 distinct never-built candidates on 2 devices: after / before"
  # Each sample kernel twice, each copy made unique (a constant in its C++
  # source), as cases 1..16 of a level of their own.
  mkdir -p "$WORK/c/bench/level1" "$WORK/c/solutions/level1"
  n=0
  for copy in 1 2; do
    for dir in "$ROOT"/data/sample/solutions/level1/*/; do
      stem="$(basename "$dir")"
      grep -q load_inline "$dir/model_new.py" || continue
      n=$((n + 1))
      name="${stem#*_}"
      cp "$ROOT/data/sample/level1/$stem.py" "$WORK/c/bench/level1/${n}_${name}.py"
      mkdir -p "$WORK/c/solutions/level1/${n}_${name}"
      sed "s|#include <torch/extension.h>|#include <torch/extension.h>\nstatic const int kgym_bench_copy_${n} = ${n};|" \
        "$dir/model_new.py" >"$WORK/c/solutions/level1/${n}_${name}/model_new.py"
      [ "$n" -ge 16 ] && break 2
    done
  done
  # The header's variants warm on the "after" side (made once per machine).
  for side in before after; do
    binary="$KGYM"; [ "$side" = before ] && binary="$BEFORE"
    cache="$WORK/cache-c-$side"
    [ "$side" = after ] && [ -d "$WORK/cache-b/pch" ] && cp -r "$WORK/cache-b/pch" "$cache-pch"
    mkdir -p "$cache"
    [ -d "$cache-pch" ] && mv "$cache-pch" "$cache/pch"
    wall=$(run_kgym "$binary" "$cache" "c-$side" --set bench_dir="$WORK/c/bench" \
      --set agent.dir="$WORK/c/solutions" --set cases=1:$n)
    echo "  $side: $n cases in $wall s ($(grep -Eo 'pass [0-9]+' "$WORK/c-$side.log" | head -n 1 || echo 'no passes'))"
    echo "$wall" >"$WORK/c-$side.wall"
  done
  $PY -c "import sys; a, b = (float(open(f).read()) for f in sys.argv[1:]); print(f'  ratio after/before {a / b:.2f}')" \
    "$WORK/c-after.wall" "$WORK/c-before.wall"
fi
