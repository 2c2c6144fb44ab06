#!/usr/bin/env bash
# labels: e2e torch slow
# The CUDA path. With a CUDA build of torch and nvcc (CI: the torch-2 venv
# and its CUDA_HOME, ./dev.sh test-torch2), `kgym verify --backend cuda`
# builds a sample CUDA solution (data/sample/solutions_cuda/, 1_ReLU) and,
# without a GPU, ends as device_unavailable; on a machine whose torch sees a
# GPU (bench/cuda_device_check.sh) both sample solutions pass correctness
# and timing, with a speedup interval. The CUDA cheats (tests/exploits/cuda/) fail the static
# gate before any build. With a torch that cannot build CUDA it is a usage
# error that says so, never a crash.
source "$(dirname "$0")/lib.sh"

python="$(torch_python)"
build="$("$python" -c 'import torch; print(torch.version.cuda or "")')"
gpu="$("$python" -c 'import torch; print(int(torch.cuda.is_available()))' 2>/dev/null || echo 0)"
verify_cuda() {  # PROBLEM CANDIDATE NAME [MODE]: the result goes to $TMP/NAME/result.json
  mkdir -p "$TMP/$3"
  "$KGYM" verify --backend cuda --problem "$SRC/data/sample/level1/$1.py" --candidate "$2" --mode "${4:-correctness}" \
    --json "$TMP/$3/result.json" --timeout 900
}

if [ -z "$build" ]; then
  echo "torch without CUDA ($python): the usage error only"
  expect_exit 2 "verify --backend cuda with a CPU build of torch" \
    verify_cuda 1_ReLU "$SRC/data/sample/solutions_cuda/level1/1_ReLU/model_new.py" relu
  expect_output "torch.cuda.is_available\(\) is False|CUDA" "names what is missing"
  finish
  exit $?
fi

export CUDA_HOME="${CUDA_HOME:-$(dirname "$(dirname "$python")")/cuda}"
echo "torch CUDA $build, nvcc: $("$CUDA_HOME/bin/nvcc" --version 2>/dev/null | tail -n 1)"
# On a GPU both honest solutions are timed; without one, one build shows
# that a CUDA candidate builds (the second would only repeat it, at a
# minute of nvcc).
names=(1_ReLU)
[ "$gpu" = 1 ] && names+=(5_Matmul)
for name in "${names[@]}"; do
  start=$SECONDS
  if [ "$gpu" = 1 ]; then
    expect_exit 0 "$name: the honest CUDA solution passes on the GPU" \
      verify_cuda "$name" "$SRC/data/sample/solutions_cuda/level1/$name/model_new.py" "$name" performance
    echo "     verified in $((SECONDS - start)) s"
    expect_verdict "$TMP/$name/result.json" pass
    echo "     speedup $(json_get "$TMP/$name/result.json" 'r["performance"]["speedup"]') flags $(json_get "$TMP/$name/result.json" 'r["performance"]["flags"]')"
    check "$name: timed on the GPU, with a speedup interval" json_true "$TMP/$name/result.json" \
      'r["performance"]["speedup"]["ci95"][0] <= r["performance"]["speedup"]["median"] <= r["performance"]["speedup"]["ci95"][1]'
    continue
  fi
  expect_exit 1 "$name: the honest CUDA solution builds without a GPU" \
    verify_cuda "$name" "$SRC/data/sample/solutions_cuda/level1/$name/model_new.py" "$name"
  echo "     built in $((SECONDS - start)) s"
  expect_verdict "$TMP/$name/result.json" device_unavailable
  check "$name: the reason says it built and what is missing" \
    grep -qE '"reason": "the candidate built in [0-9.]+ s, but .*: correctness and timing need a cuda device' "$TMP/$name/result.json"
done
for file in "$SRC"/tests/exploits/cuda/*.py; do
  name="$(basename "$file" .py)"
  rule="$(head -n 1 "$file" | sed -E 's/^"""([a-z_.]+):.*/\1/')"
  problem="$(sed -nE 's/^problem: ([A-Za-z0-9_]+)$/\1/p' "$file" | head -n 1)"
  expect_exit 1 "$name: the cheat is refused" verify_cuda "$problem" "$file" "$name"
  expect_verdict "$TMP/$name/result.json" fail_cheat
  check "$name: by $rule, before any build" grep -q "\"rule\": \"$rule\"" "$TMP/$name/result.json"
done
finish
