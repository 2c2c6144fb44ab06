#!/usr/bin/env bash
# labels: e2e sanitize
# A command gate runs a program the agent wrote, so it runs in the agent's
# box: this one tries to leave a file outside the work dir, to rewrite the
# problem file and the stored solutions, and to reach the run's records.
# Every attempt fails, its marker is still read and the case still passes.
source "$(dirname "$0")/lib.sh"

bwrap --ro-bind / / --unshare-net true 2>/dev/null || { echo "skipped: bubblewrap cannot run here"; exit 77; }
mkdir -p "$TMP/bench"
cp -r "$SRC/data/sample/level1" "$SRC/data/sample/solutions" "$TMP/bench/"
B="$TMP/bench"
RUN="$TMP/runs/gate"
before="$(sha256sum "$B/level1/1_ReLU.py" "$B/solutions/level1/1_ReLU/model_new.py")"
cat >"$TMP/agent.sh" <<SH
#!/usr/bin/env bash
set -eu
cp "$B/solutions/level1/1_ReLU/model_new.py" model_new.py
cat >test.sh <<'GATE'
try() { if sh -c "\$1" 2>/dev/null; then echo "ESCAPED: \$2"; else echo "denied: \$2"; fi; }
try 'echo pwned >>"$B/level1/1_ReLU.py"' "problem file"
try 'echo pwned >"$B/solutions/level1/1_ReLU/model_new.py"' "stored solution"
try 'echo pwned >"$TMP/outside"' "a file outside the work dir"
try 'echo pwned >../escaped' "the case dir"
try 'echo pwned >>"$RUN/cases/level1/1_ReLU/task_desc.py"' "the case's records"
try 'echo pwned >>"$RUN/run.json"' "the run's records"
grep -q load_inline model_new.py && echo GATE_OK
GATE
SH
chmod +x "$TMP/agent.sh"
cat >"$TMP/gate.yaml" <<YAML
bench_dir: $B
cases: "1"
output: {root_dir: $TMP/runs, run_name: gate}
sandbox: {mode: bwrap, agent_read_only: ["$B/solutions"]}
agent:
  kind: command
  argv: ["$TMP/agent.sh"]
  network: true
workflow:
  stages:
    - name: develop
      prompt: prompts/develop.md
      gates:
        - {kind: command, argv: [sh, test.sh], marker: GATE_OK, timeout_sec: 60}
verifier: {mode: correctness}
YAML
mkdir -p "$TMP/prompts"
echo "write model_new.py for {case_id}" >"$TMP/prompts/develop.md"
expect_exit 0 "a run whose gate tries to escape" "$KGYM" run --config "$TMP/gate.yaml"
C="$RUN/cases/level1/1_ReLU"
expect_verdict "$C/result.json" pass
check "the problem file and the stored solution are unchanged" \
  test "$(sha256sum "$B/level1/1_ReLU.py" "$B/solutions/level1/1_ReLU/model_new.py")" = "$before"
check "nothing was written outside the work dir" test ! -e "$TMP/outside" -a ! -e "$C/escaped"
log="$(cat "$C"/gates/develop.1/gate*.log 2>/dev/null)"
check "the gate ran and printed its marker" grep -q GATE_OK <<<"$log"
check "the problem file is out of the box's reach" grep -q '^denied: problem file' <<<"$log"
check "the stored solutions are read-only in the box" grep -q '^denied: stored solution' <<<"$log"
check "the run's records are unchanged" \
  sh -c "cmp -s '$B/level1/1_ReLU.py' '$C/task_desc.py' && ! grep -q pwned '$RUN/run.json'"
check "the gate's result is in the record" grep -q '"gate": "command sh test.sh"' "$C/result.json"
finish
