#!/usr/bin/env bash
# labels: e2e
# problem.size: a GPU-sized problem (tests/fixtures/problems/gpu_sized_scale.py,
# a 6 GiB input) is shrunk by `auto` for lint, verify and run, with its
# relations kept and the sizes recorded; at its written size, under an
# address-space limit, the failure names memory and the fix.
source "$(dirname "$0")/lib.sh"

cd "$TMP"
mkdir -p bench/level1
cp "$SRC/tests/fixtures/problems/gpu_sized_scale.py" bench/level1/1_GpuSizedScale.py

expect_exit 0 "lint shrinks the problem" "$KGYM" lint --bench-dir bench
expect_output "^level1/1_GpuSizedScale: ok .*; sizes batch_size=[0-9]+ \(as written 4096\)" "names the sizes and originals"
expect_output "block\[1\]=[0-9]+ \(as written 1024\)" "a tuple element read by index is a size"
expect_output "width=[0-9]+ \(as written 4096\)" "an unpacked tuple is a size"
expect_output "features=[0-9]+ \(as written 8192\)" "a constant only the constructor reads is a size"
check "depth (3, structure) is left alone" bash -c "! grep -q 'depth=' <<<\"\$0\"" "$OUT"

mkdir -p solutions
# 4 GB: the 6 GiB input does not fit; torch itself does (a CUDA build of
# torch 2 maps about 3 GB to import).
printf 'bench_dir: bench\nagent: {kind: replay, dir: solutions}\nsandbox: {limits: {address_space_mb: 4096}}\n' >limited.yaml
expect_exit 1 "at its written size under a 4 GB address space" "$KGYM" lint --config limited.yaml --size as_written
expect_output "out of memory" "the failure names memory"
expect_output "address space limited to 4096 MB" "and the limit"
expect_output "problem.size: auto" "and the fix"

expect_exit 0 "a budget is a size too" "$KGYM" lint --bench-dir bench --size '{max_bytes: 1048576, max_forward_ms: 50}'
expect_output "[0-9.]+ MB, forward" "reports what the sizes cost"
check "within the budget of 1 MiB" bash -c "grep -qE ': factor 1/[0-9]+, (0\.[0-9]|1\.0) MB' <<<\"\$0\"" "$OUT"

# verify: the reference worker solves the sizes as it loads the problem; an
# A/A candidate (the problem itself) loads at the same sizes.
expect_exit 0 "verify shrinks the problem too" "$KGYM" verify --problem bench/level1/1_GpuSizedScale.py \
  --candidate bench/level1/1_GpuSizedScale.py --candidate-is-reference --mode correctness --json aa.json
# (rows is derived: it follows batch_size, so auto leaves it alone.)
check "result.json records the sizes and originals" json_true aa.json \
  '(s := r["problem"]["sizes"]) and s["policy"] == "auto" and s["original"]["dim"] == 393216 and s["sizes"]["dim"] < 393216 and s["fits"] and s["bytes"] <= 64 << 20 and "rows" not in s["sizes"]'
expect_exit 0 "--override wins over auto" "$KGYM" verify --problem bench/level1/1_GpuSizedScale.py \
  --candidate bench/level1/1_GpuSizedScale.py --candidate-is-reference --mode correctness --override dim=64 \
  --json aa2.json
check "the overridden constant keeps its value" json_true aa2.json \
  '"dim" not in r["problem"]["sizes"]["sizes"] and r["problem"]["sizes"]["overrides"]["dim"] == 64'
# kgym run: the probe sizes the problem before the agent sees it (SPEC.md
# says so), and a baseline run (agent.kind: reference) verifies the
# problem's own Model at those sizes: marked baseline, never a solve.
cp "$SRC/data/sample/level1/1_ReLU.py" bench/level1/2_ReLU.py
expect_exit 0 "a baseline run of the GPU-sized problem" "$KGYM" run --set bench_dir="$TMP/bench" \
  --set agent.kind=reference --set output.root_dir="$TMP/runs" --set output.run_name=base \
  --set verifier.mode=correctness
RUN="$TMP/runs/base"
expect_verdict "$RUN/cases/level1/1_GpuSizedScale/result.json" pass
expect_verdict "$RUN/cases/level1/2_ReLU/result.json" pass
check "SPEC.md gives the sizes and their originals" grep -q '| `dim` | [0-9]* | 393216 |' \
  "$RUN/cases/level1/1_GpuSizedScale/SPEC.md"
check "result.json is marked baseline" grep -q '"baseline": true' "$RUN/cases/level1/1_GpuSizedScale/result.json"
check "the run's result records the sizes" grep -q '"original"' "$RUN/cases/level1/1_GpuSizedScale/result.json"
check "run.json records the size policy" grep -q '"policy": "by_backend"' "$RUN/run.json"
check "a baseline pass is no solve" json_true "$RUN/summary.json" \
  'r["totals"]["pass"] == 0 and r["baseline"]["cases"] == 2 and r["baseline"]["pass"] == 2 and all(c.get("baseline") for c in r["cases"])'
check "summary.md names the baseline" grep -q "baseline (A/A): 2 cases, 2 pass" "$RUN/summary.md"
check "report.html shows the sizes" grep -q 'class="sizes">sizes' "$RUN/report.html"

# problem.precision: inputs and parameters cast, the candidate alike; an op
# without a half kernel on the CPU is a reference_error naming it; compare
# says when two runs' precisions differ.
expect_exit 0 "a bfloat16 baseline run" "$KGYM" run --set bench_dir="$TMP/bench" --set cases=2 \
  --set agent.kind=reference --set output.root_dir="$TMP/runs" --set output.run_name=bf16 \
  --set verifier.mode=correctness --precision bfloat16
check "result.json records the precision" grep -q '"precision": "bfloat16"' "$TMP/runs/bf16/cases/level1/2_ReLU/result.json"
check "the inputs and outputs are bfloat16" grep -q "tensor | bfloat16 |" "$TMP/runs/bf16/cases/level1/2_ReLU/SPEC.md"
check "SPEC.md says the precision" grep -q "^## Precision" "$TMP/runs/bf16/cases/level1/2_ReLU/SPEC.md"
expect_exit 0 "compare across precisions" "$KGYM" compare "$TMP/runs/base" "$TMP/runs/bf16"
expect_output "different precisions" "says the speedups are not comparable"
printf 'import torch\nimport torch.nn as nn\n\nclass Model(nn.Module):\n    def __init__(self):\n        super(Model, self).__init__()\n        self.lin = nn.Linear(16, 16)\n\n    def forward(self, x):\n        return self.lin(x)\n\ndef get_inputs():\n    return [torch.rand(8, 16)]\n\ndef get_init_inputs():\n    return []\n' >half.py
# Whether the torch kgym finds (python3 on PATH, else /usr/bin/python3) has
# a float16 Linear on the CPU: torch 2 has one, 1.13 has not.
python="$(torch_python)"
if "$python" -c 'import torch; torch.nn.functional.linear(torch.ones(2, 2).half(), torch.ones(2, 2).half())' 2>/dev/null; then
  expect_exit 0 "a Linear in float16 on the CPU (this torch has the kernel)" "$KGYM" verify --problem half.py \
    --candidate half.py --candidate-is-reference --mode correctness --precision float16
else
  expect_exit 1 "a Linear in float16 on the CPU" "$KGYM" verify --problem half.py --candidate half.py \
    --candidate-is-reference --mode correctness --precision float16
  expect_output "^reference_error: .*not implemented for 'Half' \[this torch has no kernel for that op in float16" \
    "names the op and the precision"
fi
# An op that fails at bfloat16 with an error that does not say so (torch's
# bfloat16 ConvTranspose3d on the CPU complains of channels), differently at
# every size: the solver tries the problem at its own precision and names
# the precision as the cause.
printf 'import torch\nimport torch.nn as nn\n\nN = 64\n\nclass Model(nn.Module):\n    def forward(self, x):\n        if x.dtype == torch.bfloat16:\n            raise RuntimeError(f"expected input {list(x.shape)} to have {2 * x.shape[1]} channels")\n        return x * 2\n\ndef get_inputs():\n    return [torch.rand(N, N)]\n\ndef get_init_inputs():\n    return []\n' >bf16_only.py
expect_exit 1 "a problem that fails only at bfloat16, at every size" "$KGYM" verify --problem bf16_only.py \
  --candidate bf16_only.py --candidate-is-reference --mode correctness --precision bfloat16 --size auto
expect_output "^reference_error: .*runs at none of the sizes tried at bfloat16, but runs at its own precision: this torch lacks a bfloat16 kernel" \
  "names the precision as the cause"
finish
