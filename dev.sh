#!/usr/bin/env bash
# Developer entry point; each command installs what is missing first.
#   ./dev.sh demo    build the kgym binary alone and run it on the bundled sample set
#   ./dev.sh test    build kgym and run the whole test suite
#   ./dev.sh build   install dependencies and build only
#   ./dev.sh deps    install dependencies only
# Works on Debian 12 / Ubuntu as root or with sudo.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
BUILD_DIR="${KGYM_BUILD_DIR:-$ROOT/build}"
# Paths relative to the checkout in ccache's keys: another clone of the same
# commit builds from the cache.
export CCACHE_BASEDIR="${CCACHE_BASEDIR:-$ROOT}"

# Debian packages kgym needs to build, test and verify candidates on the CPU.
PACKAGES=(
  build-essential cmake ninja-build pkg-config git ccache procps bubblewrap util-linux
  libyaml-cpp-dev nlohmann-json3-dev libcli11-dev libfmt-dev libgtest-dev libgmock-dev
  python3 python3-dev python3-numpy python3-setuptools pybind11-dev python3-torch libtorch-dev libopenblas0-openmp
)

# Optional tools: installed when their command is missing; if that fails the
# tests that need them are reported as skipped. npm: the real-client test
# (tests/e2e/73_opencode_client.sh) installs the opencode CLI with it.
OPTIONAL=(npm:npm)

log() { printf '==> %s\n' "$*" >&2; }

as_root() {
  if [ "$(id -u)" -eq 0 ]; then "$@"
  elif command -v sudo >/dev/null 2>&1; then sudo "$@"
  else log "need root to run: $*  (run as root or install sudo)"; exit 1
  fi
}

deps() {
  local missing=()
  for pkg in "${PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
  done
  local optional=()
  for entry in "${OPTIONAL[@]}"; do
    command -v "${entry%%:*}" >/dev/null 2>&1 || optional+=("${entry#*:}")
  done
  if [ "${#missing[@]}" -eq 0 ] && [ "${#optional[@]}" -eq 0 ]; then return; fi
  as_root env DEBIAN_FRONTEND=noninteractive apt-get update -qq
  if [ "${#missing[@]}" -gt 0 ]; then
    log "installing: ${missing[*]}"
    as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  fi
  if [ "${#optional[@]}" -gt 0 ]; then
    log "installing optional: ${optional[*]}"
    as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${optional[@]}" >/dev/null ||
      log "could not install ${optional[*]}; the tests that need them will be skipped"
  fi
}

# build [TARGET]: every target, or only TARGET (the demo needs only kgym, not
# the unit tests and benchmarks).
build() {
  deps
  if [ ! -f "$BUILD_DIR/build.ninja" ]; then
    cmake -S "$ROOT" -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
  fi
  cmake --build "$BUILD_DIR" ${1:+--target "$1"}
}

cmd="${1:-}"
[ $# -gt 0 ] && shift
case "$cmd" in
  deps) deps ;;
  build) build ;;
  demo)
    build kgym
    log "running: kgym run (bundled default config: sample problems, stored solutions)"
    set +e
    "$BUILD_DIR/kgym" run "$@"
    rc=$?
    set -e
    # The sample set holds deliberately broken solutions: exit 1 ("finished,
    # some cases did not pass") is what the demo is expected to end with.
    [ "$rc" -eq 1 ] && log "kgym exited 1: some sample solutions fail on purpose (see data/sample/README.md)"
    exit "$rc"
    ;;
  test)
    build
    cd "$BUILD_DIR"
    ctest --output-on-failure -j "$(nproc)" "$@"
    ;;
  *)
    sed -n '2,7p' "$0" | sed 's/^# \{0,1\}//'
    exit 2
    ;;
esac
