#!/usr/bin/env bash
# labels: e2e sanitize
# The escape corpus (docs/agents.md "The agent's box"): a scripted agent and
# a workflow command gate try what an agent with kgym's source would try to
# leave its box when kgym runs as root — capabilities, remounts, namespaces,
# chroot, ptrace, /proc of kgym, device and setuid files, the run's records
# and worker, the dataset's stored solutions, a process left behind, its own
# log, a file past the size limit, links out of its work dir. Every attempt
# must fail, and the honest candidate it also writes must still pass.
source "$(dirname "$0")/lib.sh"

bwrap --ro-bind / / --unshare-net true 2>/dev/null || { echo "skipped: bubblewrap cannot run here"; exit 77; }
ROOT=0; [ "$(id -u)" -eq 0 ] && ROOT=1
mkdir -p "$TMP/bench" "$TMP/honest" "$TMP/secret"
cp -r "$SRC/data/sample/level1" "$SRC/data/sample/solutions" "$TMP/bench/"
cp "$SRC/data/sample/solutions/level1/1_ReLU/model_new.py" "$TMP/honest/"
echo "SECRET-$RANDOM$RANDOM" >"$TMP/secret/key.txt" && chmod 600 "$TMP/secret/key.txt"
B="$TMP/bench"
RUN="$TMP/runs/esc"
C="$RUN/cases/level1/1_ReLU"

# try.sh: each attempt prints "ESCAPED: what" when it worked, "denied: what"
# when not; vars.sh names the host's paths (the gate gets no agent.env).
cat >"$TMP/honest/vars.sh" <<SH
KGYM_E2E_ROOT=$ROOT KGYM_E2E_HOST_PID=$$ KGYM_E2E_SECRET=$TMP/secret/key.txt KGYM_E2E_BENCH=$B KGYM_E2E_RUN=$RUN
SH
cat >"$TMP/honest/try.sh" <<'SH'
. ./vars.sh
try() { if sh -c "$1" >/dev/null 2>&1; then echo "ESCAPED: $2"; else echo "denied: $2"; fi; }
try "mkdir -p m && mount --bind / m && mount -o remount,bind,rw m" "remount of the root"
try "mount -t tmpfs none /mnt" "a new mount"
try "unshare -Ur true" "a user namespace"
try "unshare -m true" "a mount namespace"
try "unshare -n true" "a network namespace"
try "chroot / true" "chroot"
try "test \"\$(awk '/^CapEff/ {print \$2}' /proc/self/status)\" != 0000000000000000" "a capability"
try "test \"\$(awk '/^CapBnd/ {print \$2}' /proc/self/status)\" != 0000000000000000" "a capability in the bounding set"
try "test \"\$(awk '/^NoNewPrivs/ {print \$2}' /proc/self/status)\" = 0" "new privileges (no_new_privs unset)"
try "test \"\$(id -u)\" = 0 && test \"$KGYM_E2E_ROOT\" = 1" "uid 0"
try "mknod dev b 8 0" "a device node"
try "head -c 1 /dev/sda || head -c 1 /dev/vda || head -c 1 /dev/nvme0n1 || head -c 1 /dev/mem" "a disk device"
try "python3 -c 'import ctypes,sys; sys.exit(ctypes.CDLL(None).ptrace(16, 1, 0, 0) != 0)'" "ptrace of the box's init"
try "python3 -c 'import ctypes,platform,struct,sys; a=ctypes.create_string_buffer(struct.pack(\"IIQQQQQ\",1,128,0,0,0,0,97)+bytes(80)); sys.exit(ctypes.CDLL(None).syscall({\"x86_64\":298,\"aarch64\":241}[platform.machine()],a,0,-1,-1,0)<0)'" "perf_event_open (a profiler of its own)"
try "kill -0 $KGYM_E2E_HOST_PID" "a signal to a host process"
try "cat /proc/$KGYM_E2E_HOST_PID/environ" "/proc of a host process"
try "truncate -s 1100M huge.bin" "a file past the size limit"
try "cat /etc/shadow" "a 0640 file of root's (readable by uid 0 without capabilities)"
[ "${KGYM_E2E_UNSHARE:-0}" = 1 ] && exit 0  # the rest needs bubblewrap's filesystem view
try "cat $KGYM_E2E_SECRET" "a 0600 file of kgym's user"
try "cat $KGYM_E2E_BENCH/solutions/level1/4_Softmax/model_new.py" "the dataset's stored solutions"
try "cat $KGYM_E2E_RUN/run.json" "the run's seed (run.json)"
try "echo 'print(1)' >>$KGYM_E2E_RUN/.kgym/kgym_worker.py" "the run's worker"
try "mkdir -p $KGYM_E2E_RUN/cases/level1/2_LeakyReLU && echo '{\"verdict\": \"pass\"}' >$KGYM_E2E_RUN/cases/level1/2_LeakyReLU/result.json" "a planted result"
try "echo forged >$KGYM_E2E_RUN/cases/level1/1_ReLU/agent.log" "its own log by path"
try "echo forged >$KGYM_E2E_RUN/cases/level1/1_ReLU/result.json" "its case's result"
try "echo x >>$KGYM_E2E_BENCH/level1/1_ReLU.py" "the problem file"
try "ln -s / rootlink && ln rootlink hardlink && echo x >> hardlink/etc/hostname" "a link out of the work dir"
SH

cat >"$TMP/agent.sh" <<'SH'
#!/usr/bin/env bash
echo "AGENT_STARTED uid=$(id -u)"
cp "$HONEST/model_new.py" model_new.py
cp "$HONEST/try.sh" "$HONEST/vars.sh" .
sh try.sh
# Its own log through the descriptor it was given, and a process left behind
# to rewrite the result after the box is gone.
: >/proc/self/fd/1 2>/dev/null && truncate -s 0 /proc/self/fd/1 2>/dev/null
(sleep 3; echo '{"verdict": "pass"}' >"$KGYM_E2E_RUN/cases/level1/1_ReLU/result.json") >/dev/null 2>&1 &
echo "AGENT_DONE"
SH
chmod +x "$TMP/agent.sh"
mkdir -p "$TMP/prompts"
echo "write model_new.py for {case_id}" >"$TMP/prompts/develop.md"
cat >"$TMP/esc.yaml" <<YAML
bench_dir: $B
cases: "1"
output: {root_dir: $TMP/runs, run_name: esc}
sandbox: {mode: bwrap, agent_read_only: ["$TMP/honest"]}
agent:
  kind: command
  argv: ["$TMP/agent.sh"]
  network: true
  env: {HONEST: "$TMP/honest", KGYM_E2E_RUN: "$RUN"}
workflow:
  stages:
    - name: develop
      prompt: $TMP/prompts/develop.md
      gates:
        - {kind: command, argv: [sh, try.sh], marker: "denied: chroot", timeout_sec: 60}
verifier: {mode: correctness}
YAML
before="$(sha256sum "$B/level1/1_ReLU.py" "$B/solutions/level1/4_Softmax/model_new.py")"
expect_exit 0 "a run whose agent and gate try to leave their box" "$KGYM" run --config "$TMP/esc.yaml"
expect_output "isolation: agent bwrap .*no capabilities" "the header says the agent's box has no capabilities"
[ "$ROOT" = 1 ] && expect_output "isolation: agent bwrap .*uid 65534" "the header says the agent's uid"
expect_verdict "$C/result.json" pass
log="$(cat "$C/agent.log")"
gates="$(cat "$C"/gates/develop.1/*.log 2>/dev/null)"
check "the agent ran and its log kept its first line" grep -q '^AGENT_STARTED' <<<"$log"
check "and its last" grep -q '^AGENT_DONE' <<<"$log"
[ "$ROOT" = 1 ] && check "the agent ran as uid 65534" grep -q '^AGENT_STARTED uid=65534' <<<"$log"
check "the agent tried every escape" test "$(grep -c '^denied: ' <<<"$log")" -ge 27
none_escaped() { ! grep -q '^ESCAPED' <<<"$1"; }
check "no escape of the agent worked" none_escaped "$log"
check "the gate tried every escape" test "$(grep -c '^denied: ' <<<"$gates")" -ge 27
check "no escape of the gate worked" none_escaped "$gates"
grep '^ESCAPED' <<<"$log$gates" | sed 's/^/     /'
check "the problem file and the stored solutions are unchanged" \
  test "$(sha256sum "$B/level1/1_ReLU.py" "$B/solutions/level1/4_Softmax/model_new.py")" = "$before"
check "the run's worker is the one kgym wrote" sh -c "! grep -q 'print(1)' '$RUN/.kgym/kgym_worker.py'"
check "no result was planted for a case the run did not select" test ! -e "$RUN/cases/level1/2_LeakyReLU"
check "the secret is in no record of the case" sh -c "! grep -rqs SECRET- '$C' '$RUN/summary.json'"
sleep 4  # the process the agent left behind would have rewritten the result by now
expect_verdict "$C/result.json" pass
check "the result is kgym's (it has a reason and a case id)" grep -q '"case_id": "level1/1_ReLU"' "$C/result.json"
expect_exit 0 "the report afterwards" "$KGYM" report "$RUN"

# Without bubblewrap (sandbox.mode: unshare, the fallback of a chroot or an
# unprivileged container) the box sees the host's directories: as root kgym
# refuses before any work when uid 65534 cannot enter the run's root...
if [ "$ROOT" = 1 ] && unshare --net --pid --fork true 2>/dev/null; then
  sed -e 's/mode: bwrap/mode: unshare/' -e 's/run_name: esc/run_name: esc-unshare/' "$TMP/esc.yaml" >"$TMP/unshare.yaml"
  chmod 700 "$TMP"
  expect_exit 2 "a fallback run whose output root uid 65534 cannot reach" "$KGYM" run --config "$TMP/unshare.yaml"
  expect_output "key 'output.root_dir': .*uid 65534 cannot enter $TMP.*/var/tmp/kgym-runs" \
    "the error names the directory and the fix"
  check "and nothing was started" test ! -e "$TMP/runs/esc-unshare"
  # ... and where it can, capabilities, namespaces, mounts and chroot stay denied.
  chmod 711 "$TMP"
  echo "KGYM_E2E_UNSHARE=1" >>"$TMP/honest/vars.sh"
  chmod -R o+rX "$TMP/honest" "$B"
  expect_exit 0 "a fallback run whose agent and gate try to leave their box" "$KGYM" run --config "$TMP/unshare.yaml"
  expect_output "isolation: agent unshare .*uid 65534, no capabilities" "the header says what the fallback box is"
  U="$TMP/runs/esc-unshare/cases/level1/1_ReLU"
  expect_verdict "$U/result.json" pass
  ulog="$(cat "$U/agent.log" "$U"/gates/develop.1/*.log 2>/dev/null)"
  check "the fallback box's agent and gate tried each escape" test "$(grep -c '^denied: ' <<<"$ulog")" -ge 36
  check "and none worked" none_escaped "$ulog"
  grep '^ESCAPED' <<<"$ulog" | sed 's/^/     /'
fi
finish
