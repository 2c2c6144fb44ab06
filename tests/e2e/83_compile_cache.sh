#!/usr/bin/env bash
# labels: e2e torch
# The build stage's compile caches (docs/build.md "The compile caches").
# No box writes a cache another candidate's build reads: two exploits
# (tests/exploits/cache/) build first, one planting a ccache.conf with a
# prefix_command, one planting a wrong object under an honest candidate's
# ccache key; then that honest candidate builds and must pass, with the
# planted command never run. Then a build of the same sources is taken
# from the cache (nothing compiled), and verifier.compile_cache: false
# builds from scratch.
source "$(dirname "$0")/lib.sh"

E="$SRC/tests/exploits/cache"
P="$SRC/data/sample/level1/1_ReLU.py"
export KGYM_CACHE_DIR="$TMP/cache"
# verify NAME [ARG...]: the candidate NAME.py alone in a directory of its
# own (no sibling sources), its result in NAME[-TAG].json and its log.
verify() {
  local name="$1" tag="$2"
  shift 2
  mkdir -p "$TMP/c/$name"
  cp "$E/$name.py" "$TMP/c/$name/"
  "$KGYM" verify --problem "$P" --candidate "$TMP/c/$name/$name.py" --mode correctness --seed 7 \
    --set build.precompiled_header=false --json "$TMP/$name$tag.json" --log "$TMP/$name$tag.log" "$@" \
    >"$TMP/$name$tag.out" 2>&1
}

cd "$TMP"
if ! command -v ccache >/dev/null || ! bwrap --ro-bind / / true 2>/dev/null; then
  echo "skipped: needs ccache and a working bubblewrap"
  finish
  exit 0
fi
verify plant_ccache_conf "" --skip-static-checks
verify plant_ccache_entry "" --skip-static-checks
echo "the exploits: $(verdict_of plant_ccache_conf.json), $(verdict_of plant_ccache_entry.json) (their own kernels are honest)"
verify victim_relu ""
check "the honest candidate built after the exploits passes" test "$(verdict_of victim_relu.json)" = pass
check "the planted prefix_command never ran" bash -c "! find '$KGYM_CACHE_DIR' -name kgym-ccache-pwned | grep -q ."
check "its build had a ccache directory of its own" grep -q "ccache in this key's own directory" victim_relu.log
check "no shared ccache directory is made" bash -c "! ls -d '$KGYM_CACHE_DIR'/ccache '$KGYM_CACHE_DIR'/ccache-sandbox 2>/dev/null | grep -q ."

verify victim_relu -again
check "the same sources again: passes" test "$(verdict_of victim_relu-again.json)" = pass
check "the same sources again: the build is taken from the cache" \
  grep -q "taken from the compile cache" victim_relu-again.log
verify victim_relu -uncached --set verifier.compile_cache=false
check "compile_cache false: passes" test "$(verdict_of victim_relu-uncached.json)" = pass
check "compile_cache false: built from scratch" \
  bash -c "! grep -q 'compile cache' victim_relu-uncached.log && grep -q 'extension(s) built' victim_relu-uncached.log"
for name in victim_relu victim_relu-again victim_relu-uncached; do
  echo "$name: compile_s $(sed -nE 's/^ *"compile_s": ([0-9.]+).*/\1/p' "$name.json" | head -n 1)"
done
finish
