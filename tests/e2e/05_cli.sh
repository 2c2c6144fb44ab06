#!/usr/bin/env bash
# labels: e2e sanitize
# Command-line behaviour that needs no Python: listing cases, usage errors,
# config errors reported with file, line and key before any work.
source "$(dirname "$0")/lib.sh"

expect_exit 0 "kgym cases on the bundled default" "$KGYM" cases
expect_output "^level1/1_ReLU$" "lists level1/1_ReLU"
[ "$(wc -l <<<"$OUT")" -eq 9 ] && ok "nine sample cases" || bad "nine sample cases" "$OUT"

expect_exit 0 "kgym cases with a selector" "$KGYM" cases --bench-dir "$SRC/data/sample" --cases "2:3,9"
[ "$OUT" = $'level1/2_LeakyReLU\nlevel1/3_SumReduction\nlevel1/9_MSELoss' ] && ok "selector 2:3,9" || bad "selector 2:3,9" "$OUT"

expect_exit 0 "kgym cases --json" bash -c "'$KGYM' cases --json >'$TMP/cases.json'"
check "--json: one object with every case and its file" json_true "$TMP/cases.json" \
  'r["kgym_json"] == 1 and len(r["cases"]) == 9 and r["cases"][0]["id"] == "level1/1_ReLU" and r["cases"][0]["file"].endswith("1_ReLU.py")'
expect_exit 2 "an unknown case id" "$KGYM" cases --bench-dir "$SRC/data/sample" --cases 42
expect_exit 2 "a malformed selector" "$KGYM" cases --bench-dir "$SRC/data/sample" --cases "1:x"
expect_exit 2 "a --bench-dir that does not exist" "$KGYM" cases --bench-dir "$TMP/nowhere"
expect_output "^kgym cases: --bench-dir $TMP/nowhere: no such directory" "names the flag, not the config key"
expect_exit 2 "a --set of a key that does not exist" "$KGYM" run --set foo.bar=1
expect_output "^--set foo.bar=1: key 'foo': unknown key" "names the flag, not the default config"

# An unknown command or option is named, with the nearest known one.
expect_exit 2 "an unknown command" "$KGYM" repor
expect_output "unknown command 'repor' for kgym; did you mean 'report'\?" "names it and the nearest command"
expect_exit 2 "an unknown subcommand of history" "$KGYM" history indx
expect_output "unknown command 'indx' for kgym history; did you mean 'index'\?" "names it and the nearest"
expect_exit 2 "an unknown option" "$KGYM" run --sett x=1
expect_output "unknown option '--sett' for kgym run; did you mean '--set'\?" "names it and the nearest option"
expect_exit 2 "a command nothing is near" "$KGYM" frobnicate
expect_output "the commands: run, cases, verify" "lists the commands"

# A pypto-gym config: refused before any work, each of its keys named with
# what takes its place (docs/migrating.md); the translation there passes.
cat >"$TMP/pypto_gym.yaml" <<YAML
bench_dir: $SRC/data/sample
cases: "level1=1:3"
devices: [0]
concurrency: 1
output: {root_dir: "", base_dir: benchmark_runs}
pypto: {repo_root: "", opencode_model: my/model, timeout_sec: 7200, skip_pypto_gen: false, force_regen: false}
verifier: {backend: ascend, mode: performance, verifier_mode: opencode, verify_rtol: 1.0e-3, verify_atol: 1.0e-3}
monitor: {poll_sec: 3}
YAML
expect_exit 2 "a pypto-gym config" "$KGYM" run --config "$TMP/pypto_gym.yaml"
expect_output "key 'agent.dir': the config has no agent section, so kgym replays stored candidates" \
  "no agent section: says kgym would replay, and what to set"
expect_output "key 'output.base_dir': unknown key; pypto-gym's key; in kgym it is output.root_dir" "output.base_dir"
expect_output "key 'pypto.opencode_model': unknown key; pypto-gym's key; in kgym it is agent.model" "pypto.opencode_model"
expect_output "key 'pypto.repo_root': unknown key; pypto-gym's key; in kgym it is agent.work_repo" "pypto.repo_root"
expect_output "key 'verifier.verify_rtol': unknown key; pypto-gym's key; in kgym it is verifier.tolerances" "verify_rtol"
expect_output "key 'verifier.backend': 'ascend' .*did you mean 'npu'" "backend ascend"
check "no run directory was made" test ! -e benchmark_runs
mkdir -p "$TMP/pypto"
sed -n '/^```yaml$/,/^```$/p' "$SRC/docs/migrating.md" | sed '1d;$d' >"$TMP/translated.yaml"
expect_exit 0 "its translation in docs/migrating.md passes validation" "$KGYM" cases --config "$TMP/translated.yaml" \
  --set bench_dir="$SRC/data/sample" --set agent.work_repo="$TMP/pypto" --set agent.binary=/bin/true \
  --set cases=level1=1:3
expect_output "^level1/3_SumReduction$" "and selects its cases"

expect_exit 2 "a config file that does not exist" "$KGYM" run --config "$TMP/nope.yaml"
expect_output "nope.yaml" "names the missing file"
# --backend and --set are one layer: the execution is checked against the
# backend the flag gives, not the config's (the error is the interpreter's).
expect_exit 2 "kgym verify --backend cuda --set verifier.execution=host_interpreter" "$KGYM" verify \
  --backend cuda --set verifier.execution=host_interpreter --python /nonexistent/python3 \
  --problem "$SRC/data/sample/pto_case/1_AddReLU.py" --candidate "$SRC/data/sample/solutions_triton/pto_case/1_AddReLU/model_new.py"
expect_output "cannot import torch: /nonexistent/python3" "is refused for its interpreter, not its backend"

cat >"$TMP/bad.yaml" <<YAML
bench_dir: $SRC/data/sample
concurency: 2
verifier:
  trials: zero
YAML
expect_exit 2 "a config with an unknown key and a bad value" "$KGYM" run --config "$TMP/bad.yaml"
expect_output "bad.yaml:2.*concurency" "unknown key reported with file and line"
expect_output "concurrency" "suggests the key it probably meant"
expect_output "bad.yaml:4.*verifier.trials" "bad value reported with its key path"
check "no run directory was created" test ! -e "$TMP/runs"

expect_exit 2 "--set with a bad value" "$KGYM" run --set concurrency=abc
expect_output "concurrency" "names the key"

# An interpreter whose torch has no CUDA (a stand-in, so the check is the
# same on machines that have a GPU): a cuda run stops before any case.
cat >"$TMP/cpu_only_python" <<'PY'
#!/usr/bin/env bash
case "$*" in
  *KGYM_BACKEND*) echo "KGYM_BACKEND=torch.cuda.is_available() is False" ;;
  *) echo "KGYM_TORCH_VERSION=9.9.9" ;;
esac
PY
chmod +x "$TMP/cpu_only_python"
expect_exit 2 "a backend the interpreter cannot use" "$KGYM" run --set verifier.backend=cuda \
  --set verifier.python="$TMP/cpu_only_python" --set output.root_dir="$TMP/runs"
expect_output "key 'verifier.backend': backend cuda is not available to $TMP/cpu_only_python \(torch.cuda.is_available\(\) is False\); use backend cpu" \
  "names the key, the reason and the fix"
check "no run dir was made" test ! -e "$TMP/runs"
expect_exit 2 "kgym verify says the same" "$KGYM" verify --problem "$SRC/data/sample/level1/1_ReLU.py" \
  --candidate "$SRC/data/sample/solutions/level1/1_ReLU/model_new.py" --backend cuda --python "$TMP/cpu_only_python"
expect_output "backend cuda is not available" "before any worker starts"

expect_exit 2 "kgym monitor on a missing dir" "$KGYM" monitor "$TMP/none" --once
expect_exit 2 "kgym report on a dir without cases" "$KGYM" report "$TMP"

finish
