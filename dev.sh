#!/usr/bin/env bash
# Developer entry point; each command installs what is missing first.
#   ./dev.sh demo    build the kgym binary alone and run it on the bundled sample set
#   ./dev.sh test    build kgym and run the whole test suite
#   ./dev.sh test-torch2  the tests labelled torch again, against torch 2 (makes its venv once)
#   ./dev.sh build   install dependencies and build only
#   ./dev.sh deps    install dependencies only
#   ./dev.sh torch2  make (once) the torch-2 environment and a CUDA_HOME; prints its python
#   ./dev.sh extras  make (once) a venv over Debian's torch with einops; prints its python
#   ./dev.sh sanitize  the tests labelled sanitize, under ASan + UBSan
#   ./dev.sh fuzz [SECONDS]  each fuzz target for SECONDS (default 60) from its seeds
# Works on Debian 12 / Ubuntu as root or with sudo.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
BUILD_DIR="${KGYM_BUILD_DIR:-$ROOT/build}"
# Paths relative to the checkout in ccache's keys: another clone of the same
# commit builds from the cache.
export CCACHE_BASEDIR="${CCACHE_BASEDIR:-$ROOT}"

# Debian packages kgym needs to build, test and verify candidates on the CPU.
PACKAGES=(
  build-essential cmake ninja-build pkg-config git ccache procps bubblewrap util-linux linux-perf
  libseccomp-dev libyaml-cpp-dev nlohmann-json3-dev libcli11-dev libfmt-dev libgtest-dev libgmock-dev zlib1g-dev libsqlite3-dev libssl-dev
  python3 python3-dev python3-numpy python3-setuptools pybind11-dev python3-torch libtorch-dev libopenblas0-openmp
  # The Slurm tests' throwaway one-node cluster (tests/slurm/cluster.sh). Installing
  # starts no Slurm daemon (no /etc/slurm/slurm.conf); munge's may start the system
  # munged where policy-rc.d allows, which the tests do not use.
  slurmctld slurmd slurm-client munge
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

# Environments made from PyPI, once, under the cache directory; each is
# complete when its `kgym-ready` file exists (it records what it holds).
# As root, under /var/cache: the candidate's sandbox runs as uid 65534,
# which cannot enter root's home (kgym refuses an interpreter it could not reach).
if [ "$(id -u)" -eq 0 ]; then DEFAULT_CACHE=/var/cache/kgym; else DEFAULT_CACHE="${XDG_CACHE_HOME:-$HOME/.cache}/kgym"; fi
CACHE_DIR="${KGYM_CACHE_DIR:-$DEFAULT_CACHE}"
TORCH2_VERSION=2.15.0  # the torch 2 kgym is tested with (a CUDA build on x86-64 Linux)
EINOPS_VERSION=0.8.2   # level 3 of KernelBench imports einops
# The host interpreters of verifier.execution: host_interpreter (docs/backends.md),
# in the torch-2 environment: Triton's for cuda, PyPTO's for npu.
TRITON_VERSION=3.9.0
PYPTO_VERSION=0.2.0

# need PACKAGE...: the Debian packages one command needs beyond deps().
need() {
  local missing=()
  for pkg in "$@"; do
    dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
  done
  [ "${#missing[@]}" -eq 0 ] && return
  as_root env DEBIAN_FRONTEND=noninteractive apt-get update -qq
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}

# make_venv DIR [--system-site-packages] -- PIP_ARGS...: a venv of the
# machine's python3 (Debian's, not whatever python3 is first on PATH).
make_venv() {
  local dir="$1"; shift
  local venv_args=()
  while [ "$1" != -- ]; do venv_args+=("$1"); shift; done
  shift
  [ -f "$dir/kgym-ready" ] && return
  need python3-venv
  rm -rf "$dir"
  mkdir -p "$(dirname "$dir")"
  log "making $dir (once; later runs reuse it)"
  local start=$SECONDS
  /usr/bin/python3 -m venv "${venv_args[@]}" "$dir"
  "$dir/bin/python" -m pip install -q --no-cache-dir --disable-pip-version-check "$@"
  "$dir/bin/python" - "$dir/kgym-ready" "$((SECONDS - start))" <<'PY'
import json, sys, torch
info = {"torch": torch.__version__, "cuda": torch.version.cuda, "python": sys.executable,
        "seconds": int(sys.argv[2])}
try:
    import einops
    info["einops"] = einops.__version__
except ImportError:
    pass
open(sys.argv[1], "w").write(json.dumps(info) + "\n")
PY
  log "made $dir: $(cat "$dir/kgym-ready") $(du -sh "$dir" | cut -f1)"
}

torch2_venv() { echo "$CACHE_DIR/torch2-$TORCH2_VERSION"; }

torch2() {
  local venv
  venv="$(torch2_venv)"
  make_venv "$venv" -- "torch==$TORCH2_VERSION" "einops==$EINOPS_VERSION" numpy
  cuda_home "$venv"
  host_interpreters "$venv"
  echo "$venv/bin/python"
}

# host_interpreters VENV: triton and pypto at their pinned versions, and
# PyPTO's interpreter calculator built once for the venv's torch
# (boxed/kgym_worker_pypto.py). A failure leaves the venv without them: the
# tests that need them then skip, saying so.
host_interpreters() {
  local venv="$1" py="$1/bin/python"
  [ -f "$venv/host-interpreters-ready" ] && return
  need cmake g++
  local start=$SECONDS
  if ! "$py" -m pip install -q --no-cache-dir --disable-pip-version-check \
      "triton==$TRITON_VERSION" "pypto==$PYPTO_VERSION"; then
    log "could not install triton $TRITON_VERSION and pypto $PYPTO_VERSION: the host-interpreter tests will skip"
    return 0
  fi
  if ! "$py" "$ROOT/boxed/kgym_worker_pypto.py" build-calculator >/dev/null; then
    log "could not build PyPTO's interpreter calculator: the PyPTO host-interpreter tests will skip"
    return 0
  fi
  "$py" -c 'import importlib.metadata as m; print("triton", m.version("triton"), "pypto", m.version("pypto"))' \
    >"$venv/host-interpreters-ready"
  log "host interpreters in $venv in $((SECONDS - start)) s: $(cat "$venv/host-interpreters-ready")"
}

# cuda_home VENV: VENV/cuda, a CUDA_HOME for building CUDA candidates
# without a GPU: NVIDIA's nvcc wheels of the version of the CUDA runtime
# wheel torch depends on (so nvcc's major matches torch.version.cuda), laid
# out by scripts/cuda_home.py. A CPU build of torch gets none.
cuda_home() {
  local venv="$1" py="$1/bin/python"
  [ -f "$venv/cuda/kgym-ready" ] && return
  local found suffix version
  found="$("$py" - <<'PY'
import importlib.metadata as md
for name, suffix in (("nvidia-cuda-runtime", ""), ("nvidia-cuda-runtime-cu12", "-cu12")):
    try:
        print(suffix or "-", md.version(name))
        break
    except md.PackageNotFoundError:
        pass
PY
)"
  if [ -z "$found" ]; then log "torch in $venv has no CUDA runtime wheel: no CUDA_HOME"; return; fi
  read -r suffix version <<<"$found"
  [ "$suffix" = - ] && suffix=""
  local start=$SECONDS
  local wheels=("nvidia-cuda-nvcc$suffix==$version")
  # CUDA 13 splits nvcc's compiler back end and headers into wheels of their own.
  [ -z "$suffix" ] && wheels+=("nvidia-nvvm==$version" "nvidia-cuda-crt==$version")
  "$py" -m pip install -q --no-cache-dir --disable-pip-version-check "${wheels[@]}"
  rm -rf "$venv/cuda"
  "$py" "$ROOT/scripts/cuda_home.py" "$venv/cuda" >/dev/null
  "$venv/cuda/bin/nvcc" --version | tail -n 1 >"$venv/cuda/kgym-ready"
  log "made $venv/cuda in $((SECONDS - start)) s: $(cat "$venv/cuda/kgym-ready")"
}

extras() {
  local venv="$CACHE_DIR/debian-torch-extras"
  deps
  make_venv "$venv" --system-site-packages -- "einops==$EINOPS_VERSION"
  echo "$venv/bin/python"
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

# The sanitizer and fuzzing build (docs/fuzzing.md): clang 16 from Debian,
# ASan + UBSan and libFuzzer's coverage on every object, in its own tree.
FUZZ_BUILD_DIR="${KGYM_FUZZ_BUILD_DIR:-$ROOT/build-fuzz}"
CLANG_PACKAGES=(clang-16 libclang-rt-16-dev llvm-16)
export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1:strict_string_checks=1:detect_stack_use_after_return=1}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"

fuzz_build() {
  deps
  need "${CLANG_PACKAGES[@]}"
  if [ ! -f "$FUZZ_BUILD_DIR/build.ninja" ]; then
    cmake -S "$ROOT" -B "$FUZZ_BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=Sanitize -DKGYM_FUZZ=ON \
      -DCMAKE_CXX_COMPILER=clang++-16 >/dev/null
  fi
  cmake --build "$FUZZ_BUILD_DIR"
}

# fuzz SECONDS: every target for SECONDS from its committed seeds; what it
# adds goes to the build tree, a finding to build-fuzz/findings/.
fuzz() {
  local seconds="${1:-60}" failed=() target name
  fuzz_build
  mkdir -p "$FUZZ_BUILD_DIR/findings"
  printf '%-14s %10s %8s %7s\n' target executions corpus result
  for target in "$FUZZ_BUILD_DIR"/kgym_*_fuzz; do
    name="$(basename "$target" _fuzz)"; name="${name#kgym_}"
    local added="$FUZZ_BUILD_DIR/corpus/$name" log="$FUZZ_BUILD_DIR/findings/$name.log" rc=0
    mkdir -p "$added"
    TMPDIR="${KGYM_FUZZ_TMP:-/dev/shm}" "$target" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=4096 \
      -print_final_stats=1 -artifact_prefix="$FUZZ_BUILD_DIR/findings/$name-" \
      "$added" "$ROOT/fuzz/corpus/$name" >"$log" 2>&1 || rc=$?
    local runs corpus
    runs="$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)"
    corpus="$(find "$added" "$ROOT/fuzz/corpus/$name" -type f | wc -l)"
    if [ "$rc" -eq 0 ]; then
      printf '%-14s %10s %8s %7s\n' "$name" "${runs:-?}" "$corpus" ok
    else
      printf '%-14s %10s %8s %7s\n' "$name" "${runs:-?}" "$corpus" FOUND
      grep -m 3 -E 'ERROR|SUMMARY|contract broken|Test unit written' "$log" | sed 's/^/    /'
      failed+=("$name")
    fi
  done
  if [ "${#failed[@]}" -gt 0 ]; then
    log "findings in: ${failed[*]} (inputs and logs in $FUZZ_BUILD_DIR/findings/; rerun one with $FUZZ_BUILD_DIR/kgym_NAME_fuzz FILE)"
    return 1
  fi
}

cmd="${1:-}"
[ $# -gt 0 ] && shift
case "$cmd" in
  deps) deps ;;
  torch2) torch2 ;;
  extras) extras ;;
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
    ctest --test-dir "$BUILD_DIR" --output-on-failure -j "$(nproc)" "$@"
    ;;
  sanitize)
    # The tests labelled sanitize (CMakeLists.txt): the gtests and the e2e
    # tests whose time is kgym's own work.
    fuzz_build
    ctest --test-dir "$FUZZ_BUILD_DIR" --output-on-failure -j "$(nproc)" -L sanitize "$@"
    ;;
  fuzz) fuzz "$@" ;;
  test-torch2)
    # The tests labelled torch (CMakeLists.txt), whose outcome may differ
    # between torch versions, with the torch-2 venv's python3 first on PATH,
    # which kgym then finds; of the exploit corpora only the candidates
    # marked "torch: dependent" (tests/e2e/exploits.sh).
    build
    python="$(torch2)"
    log "the torch tests against $("$python" -c 'import torch; print("torch", torch.__version__)') ($python)"
    KGYM_TORCH_PASS=second PATH="$(dirname "$python"):$PATH" CUDA_HOME="$(dirname "$(dirname "$python")")/cuda" \
      ctest --test-dir "$BUILD_DIR" --output-on-failure -j "$(nproc)" -L torch "$@"
    ;;
  *)
    sed -n '2,10p' "$0" | sed 's/^# \{0,1\}//'
    exit 2
    ;;
esac
