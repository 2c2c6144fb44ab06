#!/usr/bin/env bash
# The CUDA path on a real GPU, as one short prepared check for a machine
# that has one (the machines kgym is developed on have none; see README.md
# "CUDA"). It prints what the machine has, then runs tests/e2e/78_cuda_build.sh,
# which on a GPU verifies the sample CUDA solutions in performance mode
# (events on the current stream, an L2 flush between calls, a synchronize
# before results are read: docs/anti-cheat.md "Timing") and expects pass
# with a speedup interval, and the CUDA cheats to be refused; and
# tests/python/test_cuda_timing.py, the timer's fakes, on that torch.
#
# Usage: bench/cuda_device_check.sh [path/to/kgym]
#   KGYM_CUDA_PYTHON=PATH  an interpreter whose torch is a CUDA build that sees
#                          the GPU (default: python3 on PATH)
#   CUDA_HOME              a toolkit whose nvcc matches torch.version.cuda
#                          (default: the interpreter's venv's cuda/, as
#                          ./dev.sh torch2 lays it out, else /usr/local/cuda)
# Exit 0 when every check passed. Takes a few minutes (the sample builds).
set -uo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
KGYM="$(realpath "${1:-$ROOT/build/kgym}")"
PY="${KGYM_CUDA_PYTHON:-$(command -v python3)}"
venv_cuda="$(dirname "$(dirname "$PY")")/cuda"
if [ -z "${CUDA_HOME:-}" ]; then
  if [ -x "$venv_cuda/bin/nvcc" ]; then export CUDA_HOME="$venv_cuda"; else export CUDA_HOME=/usr/local/cuda; fi
fi
echo "== machine"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>&1 | head -n 4
"$KGYM" --version 2>&1 | head -n 1 || { echo "kgym does not run here: $KGYM"; exit 2; }
"$PY" -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda, "gpu", torch.cuda.is_available() and torch.cuda.get_device_name(0))' ||
  { echo "no torch at $PY"; exit 2; }
echo "nvcc: $("$CUDA_HOME/bin/nvcc" --version 2>/dev/null | tail -n 1)"
status=0
echo "== tests/python/test_cuda_timing.py"
"$PY" "$ROOT/tests/python/test_cuda_timing.py" || status=1
echo "== tests/e2e/78_cuda_build.sh"
# The e2e test takes the first python3 on PATH that imports torch.
PATH="$(dirname "$PY"):$PATH" KGYM_SOURCE_DIR="$ROOT" bash "$ROOT/tests/e2e/78_cuda_build.sh" "$KGYM" || status=1
exit $status
