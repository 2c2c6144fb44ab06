#!/usr/bin/env bash
# labels: e2e torch slow
# Kernels checked without their device (verifier.execution: host_interpreter,
# docs/backends.md): the pto_case samples' Triton solutions under Triton's
# interpreter (backend cuda) and their PyPTO solutions under PyPTO's host
# interpreter (backend npu) pass, with PyPTO's cost-model estimate as
# performance.simulated and no speedup; the sample cheats, the corpus of
# tests/exploits/host_interpreter/ and a wrong kernel fail as designed; a
# CUDA C++ candidate is device_unavailable. Then a run of the PyPTO
# solutions and a gated 4-stage workflow with a scripted agent. Needs an
# interpreter with triton and pypto (./dev.sh torch2; CI: test-torch2):
# without them it skips, saying so.
source "$(dirname "$0")/lib.sh"

S="$SRC/data/sample"
python="$(torch_python)"
has() { "$python" -c "$1" >/dev/null 2>&1; }
languages=()
if has 'import os; os.environ["TRITON_INTERPRET"] = "1"; import torch, triton'; then languages+=(triton); fi
if has "import sys; sys.path.insert(0, '$SRC/boxed'); import os, kgym_worker_pypto as k, pypto; assert os.path.exists(k.calculator_library())"; then
  languages+=(pypto)
fi
if [ "${#languages[@]}" -eq 0 ]; then
  echo "skipped: $python has neither triton nor pypto with its interpreter calculator (./dev.sh torch2 makes one)"
  exit 77
fi
echo "interpreter $python: ${languages[*]}"

backend_of() { [ "$1" = triton ] && echo cuda || echo npu; }
verify_host() {  # LANGUAGE PROBLEM CANDIDATE NAME [MODE]: the result goes to $TMP/NAME/result.json
  mkdir -p "$TMP/$4"
  "$KGYM" verify --backend "$(backend_of "$1")" --execution host_interpreter --python "$python" \
    --problem "$S/pto_case/$2.py" --candidate "$3" --mode "${5:-performance}" --json "$TMP/$4/result.json" \
    --timeout 600
}
field() {  # RESULT_JSON EXPRESSION: prints a value of the result (r)
  "$python" -c 'import json, sys; r = json.load(open(sys.argv[1])); print(eval(sys.argv[2]))' "$1" "$2"
}

for language in "${languages[@]}"; do
  for problem in 1_AddReLU 2_RowSum 3_Softmax; do
    name="$language-$problem"
    start=$SECONDS
    expect_exit 0 "$name: the honest $language solution passes on the host interpreter" \
      verify_host "$language" "$problem" "$S/solutions_$language/pto_case/$problem/model_new.py" "$name"
    expect_verdict "$TMP/$name/result.json" pass
    check "$name: marked host_interpreter, correctness only, no speedup" test \
      "$(field "$TMP/$name/result.json" '(r["execution"], r["mode"], (r["performance"] or {}).get("speedup"))')" \
      = "('host_interpreter', 'correctness', None)"
    if [ "$language" = pypto ]; then
      simulated="$(field "$TMP/$name/result.json" 'r["performance"]["simulated"]')"
      check "$name: PyPTO's cost model estimate is recorded as simulated, in us" \
        test "$(field "$TMP/$name/result.json" 'r["performance"]["simulated"]["unit"] == "us" and r["performance"]["simulated"]["value"] > 0')" = True
      echo "     $((SECONDS - start)) s; simulated $simulated"
    else
      check "$name: Triton's interpreter estimates nothing" test "$(field "$TMP/$name/result.json" 'r["performance"]')" = None
      echo "     $((SECONDS - start)) s"
    fi
  done
  # The sample cheats and the corpus: each is refused by the rule it names.
  for file in "$S"/cheats_"$language"/pto_case/*/model_new.py "$SRC"/tests/exploits/host_interpreter/"$language"_*.py; do
    problem="$(basename "$(dirname "$file")")"
    rule="$(sed -nE 's/.*fail_cheat \(([a-z_.]+)[:)].*/\1/p' "$file" | head -n 1)"
    if [ -z "$rule" ]; then
      rule="$(head -n 1 "$file" | sed -E 's/^"""([a-z_.]+):.*/\1/')"
      problem="$(sed -nE 's|^problem: pto_case/([A-Za-z0-9_]+)$|\1|p' "$file" | head -n 1)"
    fi
    name="$language-cheat-$(basename "$(dirname "$file")")-$(basename "$file" .py)"
    expect_exit 1 "$name: refused ($rule)" verify_host "$language" "$problem" "$file" "$name"
    expect_verdict "$TMP/$name/result.json" fail_cheat
    check "$name: by $rule" grep -q "\"rule\": \"$rule\"" "$TMP/$name/result.json"
  done
done

if [[ " ${languages[*]} " == *" pypto "* ]]; then
  # The interpreter's values are the kernel's own: a wrong kernel fails.
  sed 's/pypto.relu(x + bias)/pypto.relu(x - bias)/' "$S/solutions_pypto/pto_case/1_AddReLU/model_new.py" >"$TMP/wrong_pypto.py"
  expect_exit 1 "a wrong PyPTO kernel" verify_host pypto 1_AddReLU "$TMP/wrong_pypto.py" wrong-pypto correctness
  expect_verdict "$TMP/wrong-pypto/result.json" fail_correctness
  # execution auto: no NPU here, so PyPTO's interpreter, and it says so.
  mkdir -p "$TMP/auto"
  expect_exit 0 "verify --execution auto on npu without an NPU" "$KGYM" verify --backend npu --execution auto \
    --python "$python" --problem "$S/pto_case/2_RowSum.py" --mode correctness --json "$TMP/auto/result.json" \
    --candidate "$S/solutions_pypto/pto_case/2_RowSum/model_new.py"
  expect_output "verifier.execution: auto; correctness only" "says it chose the host interpreter"
  check "the result says host_interpreter" test "$(field "$TMP/auto/result.json" 'r["execution"]')" = host_interpreter
fi
if [[ " ${languages[*]} " == *" triton "* ]]; then
  sed 's/tl.maximum(x + bias, 0.0)/tl.maximum(x - bias, 0.0)/' "$S/solutions_triton/pto_case/1_AddReLU/model_new.py" >"$TMP/wrong_triton.py"
  expect_exit 1 "a wrong Triton kernel" verify_host triton 1_AddReLU "$TMP/wrong_triton.py" wrong-triton correctness
  expect_verdict "$TMP/wrong-triton/result.json" fail_correctness
  # CUDA C++ cannot run without a GPU: not checkable here, and no cheat.
  mkdir -p "$TMP/cuda-cpp"
  expect_exit 1 "a CUDA C++ candidate on the host interpreter" "$KGYM" verify --backend cuda \
    --execution host_interpreter --python "$python" --problem "$S/level1/1_ReLU.py" \
    --candidate "$S/solutions_cuda/level1/1_ReLU/model_new.py" --json "$TMP/cuda-cpp/result.json"
  expect_verdict "$TMP/cuda-cpp/result.json" device_unavailable
  check "the reason says CUDA C++ needs a GPU" grep -q 'CUDA C++ (load_inline) kernels need a GPU' "$TMP/cuda-cpp/result.json"
fi
expect_exit 2 "host_interpreter on the cpu backend is a usage error" "$KGYM" verify --backend cpu \
  --execution host_interpreter --problem "$S/level1/1_ReLU.py" --candidate "$S/solutions/level1/1_ReLU/model_new.py"
expect_output "backend cpu has no host_interpreter execution" "names what is wrong"

[[ " ${languages[*]} " == *" pypto "* ]] || { finish; exit $?; }

# A run of the stored PyPTO solutions: the summary marks the cases and keeps
# them out of fast_p and the geomean.
cat >"$TMP/run.yaml" <<YAML
bench_dir: $S
level: pto_case
output: {root_dir: $TMP/runs, run_name: pypto}
agent: {kind: replay, dir: $S/solutions_pypto}
verifier: {backend: npu, execution: host_interpreter, python: $python, mode: performance}
YAML
expect_exit 0 "kgym run over pto_case on PyPTO's host interpreter" "$KGYM" run --config "$TMP/run.yaml"
RUN="$TMP/runs/pypto"
for problem in 1_AddReLU 2_RowSum 3_Softmax; do expect_verdict "$RUN/cases/pto_case/$problem/result.json" pass; done
check "summary.json counts them apart" test \
  "$(field "$RUN/summary.json" '(r["totals"]["host_interpreter"], r["totals"]["device_cases"], r["totals"]["geomean_speedup"])')" \
  = "({'cases': 3, 'pass': 3, 'simulated': 3}, 0, None)"
check "summary.md says so" grep -q "3 cases checked on a host interpreter" "$RUN/summary.md"
check "summary.md shows the simulated time, not a speedup" grep -qE '\| sim [0-9.]+ us \|' "$RUN/summary.md"
check "report.html marks them" grep -q "host interpreter" "$RUN/report.html"

# The gated 4-stage workflow with a scripted agent writing each stage's
# files; its last stage copies the stored PyPTO solution, which the static
# gate checks with PyPTO's rules and the final verification runs on the host
# interpreter.
cat >"$TMP/agent.sh" <<'SH'
#!/usr/bin/env bash
set -eu
prompt="$1"
case "$(head -n 1 "$prompt")" in
  *"Stage 1 of 4"*) printf '# Plan\n\n## Goal\nrelu(x + bias)\n\n## Approach\none vector op\n\n## Verification\ncompare\n' >PLAN.md ;;
  *"Stage 2 of 4"*)
    printf 'import torch\n\ndef golden(x, bias):\n    return torch.relu(x + bias)\n' >golden.py
    printf 'import torch\nfrom golden import golden\nfrom task_desc import Model, get_inputs\nx = get_inputs()\nassert torch.allclose(golden(*x), Model()(*x))\nprint("GOLDEN_OK")\n' >test_golden.py ;;
  *"Stage 3 of 4"*) printf '# Design\n\n## Kernel\nadd, relu\n\n## Parallelism\ntiles\n\n## Memory\nin place\n\n## Risks\nnone\n' >DESIGN.md ;;
  *"Stage 4 of 4"*) cp "$SOLUTIONS/pto_case/$(basename "$KGYM_CASE_ID")/model_new.py" model_new.py ;;
esac
SH
chmod +x "$TMP/agent.sh"
# configs/examples/pypto_workflow.yaml as a user runs it, with the scripted
# agent in place of opencode; execution: auto finds no NPU here.
expect_exit 0 "the 4-stage PyPTO workflow on pto_case/1_AddReLU, verified on PyPTO's host interpreter" \
  "$KGYM" run --config "$SRC/configs/examples/pypto_workflow.yaml" --set cases=1 \
  --set output="{root_dir: $TMP/runs, run_name: pypto-workflow}" \
  --set agent="{kind: command, argv: [$TMP/agent.sh, '{prompt_file}'], env: {SOLUTIONS: $S/solutions_pypto}, artifacts: [model_new.py, PLAN.md, golden.py, DESIGN.md]}" \
  --set sandbox.agent_read_only="[$S/solutions_pypto, $(dirname "$(dirname "$python")")]" \
  --set verifier.python="$python"
expect_output "no npu device for $python: its kernels are checked on the pypto host interpreter instead" \
  "execution: auto says it chose the host interpreter"
C="$TMP/runs/pypto-workflow/cases/pto_case/1_AddReLU"
expect_verdict "$C/result.json" pass
check "every stage passed its gates once" test \
  "$(field "$C/result.json" '[(s["name"], len(s["attempts"])) for s in r["generation"]["stages"]]')" \
  = "[('plan', 1), ('golden', 1), ('design', 1), ('develop', 1)]"
check "verified on the host interpreter with a simulated time" test \
  "$(field "$C/result.json" '(r["execution"], r["performance"]["simulated"]["unit"])')" = "('host_interpreter', 'us')"
check "run.json records the execution auto chose" test \
  "$(field "$TMP/runs/pypto-workflow/run.json" '(r["config"]["verifier"]["execution"], r["config"]["verifier"]["execution_auto"])')" \
  = "('host_interpreter', True)"
finish
