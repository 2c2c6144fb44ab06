#!/usr/bin/env bash
# labels: e2e sanitize
# The work-repository layout (PyPTO): the agent runs in an external
# repository, each case's files live in <repo>/custom/<level>/<N>_<Name>/, and
# only the declared artifacts are copied out of there for verification. The
# bridge file imports its kernel from a sibling artifact (`from .kernel_impl
# import relu`); both are verified together.
source "$(dirname "$0")/lib.sh"

S="$SRC/data/sample"
REPO="$TMP/pypto"
TWO="$SRC/tests/exploits/honest_multi/relu_relative_import"
mkdir -p "$REPO/custom/level1/4_Softmax"
echo "user's own work" >"$REPO/custom/level1/4_Softmax/notes.txt"  # not kgym's: must survive
cat >"$TMP/agent.sh" <<'SH'
#!/usr/bin/env bash
set -eu
echo "cwd=$(pwd) workspace=$KGYM_WORKSPACE repo=$KGYM_WORK_REPO"
test -s "$KGYM_WORKSPACE/SPEC.md" && test -s "$KGYM_WORKSPACE/task_desc.py"
cp "$TWO_FILES/model_new.py" "$KGYM_WORKSPACE/relu_bridge.py"
cp "$TWO_FILES/kernel_impl.py" "$KGYM_WORKSPACE/kernel_impl.py"
echo "scratch" >"$KGYM_WORKSPACE/scratch.py"  # not an artifact: never verified
SH
chmod +x "$TMP/agent.sh"
cat >"$TMP/repo.yaml" <<YAML
bench_dir: $S
cases: "1,4"
output: {root_dir: $TMP/runs, run_name: repo}
sandbox: {agent_read_only: ["$TWO"]}  # the stored answer this scripted agent copies
agent:
  kind: command
  argv: ["$TMP/agent.sh"]
  env: {TWO_FILES: "$TWO"}
  work_repo: $REPO
  artifacts: [relu_bridge.py, kernel_impl.py]
verifier: {mode: correctness}
YAML
RUN="$TMP/runs/repo"
expect_exit 1 "a run in a work repository" "$KGYM" run --config "$TMP/repo.yaml"
expect_verdict "$RUN/cases/level1/1_ReLU/result.json" pass
check "the agent ran in the repository" grep -q "cwd=$REPO workspace=$REPO/custom/level1/1_ReLU repo=$REPO" "$RUN/cases/level1/1_ReLU/agent.log"
check "its files are in custom/<level>/<case>/" test -s "$REPO/custom/level1/1_ReLU/relu_bridge.py"
check "the bridge file was copied out as the candidate" test -s "$RUN/cases/level1/1_ReLU/candidate/relu_bridge.py"
check "with its sibling artifact" test -s "$RUN/cases/level1/1_ReLU/candidate/kernel_impl.py"
check "and nothing that is not an artifact" test ! -e "$RUN/cases/level1/1_ReLU/candidate/scratch.py"
check "the verifier took the sibling along" sh -c "grep -rqs 'candidate sources: 1 file(s) beside relu_bridge.py' '$RUN/cases/level1/1_ReLU/'"
expect_verdict "$RUN/cases/level1/4_Softmax/result.json" harness_error
check "a dir kgym did not make is left alone" test -s "$REPO/custom/level1/4_Softmax/notes.txt"
check "and the reason says so" grep -q "exists and was not made by kgym" "$RUN/cases/level1/4_Softmax/result.json"
cat >"$TMP/bad.yaml" <<YAML
bench_dir: $S
agent: {kind: command, argv: [sh], work_repo: $TMP/nowhere}
YAML
expect_exit 2 "a missing work repository is a config error" "$KGYM" run --config "$TMP/bad.yaml"
expect_output "key 'agent.work_repo': '$TMP/nowhere' is not a directory; name an existing repository directory" "the error names the key and the fix"

# The download scripts: clone into a cache dir, update in place, clear errors.
git init -q -b main "$TMP/upstream" && git -C "$TMP/upstream" -c user.name=t -c user.email=t@t commit -q --allow-empty -m one
export KGYM_CACHE="$TMP/cache"
expect_exit 0 "download_kernelbench.sh clones into the cache" env KERNELBENCH_URL="$TMP/upstream" "$SRC/scripts/download_kernelbench.sh"
check "the clone is there" test -d "$TMP/cache/KernelBench/.git"
git -C "$TMP/upstream" -c user.name=t -c user.email=t@t commit -q --allow-empty -m two
expect_exit 0 "a second call updates it" env KERNELBENCH_URL="$TMP/upstream" "$SRC/scripts/download_kernelbench.sh"
check "to the newest commit" test "$(git -C "$TMP/cache/KernelBench" rev-parse HEAD)" = "$(git -C "$TMP/upstream" rev-parse HEAD)"
expect_exit 1 "an unreachable source fails" env PYPTO_URL="$TMP/nowhere.git" "$SRC/scripts/download_pypto.sh"
expect_output "cannot reach $TMP/nowhere.git to clone pypto; check the network" "the error says what to check"
finish
