#!/usr/bin/env bash
# labels: e2e
# Candidates that misbehave at the OS level — segfault, hang, allocate
# without bound, fork-bomb, open a socket, signal their parent, _exit — each
# end as a verdict for their own case, and the run goes on. The misbehaviour
# lives in C++ (load_inline) so the static gate cannot stop it first; all
# cases share one C++ source.
source "$(dirname "$0")/lib.sh"

B="$TMP/bench"
mkdir -p "$B/level1"
names=(1_Segfault 2_Hang 3_Allocate 4_ForkBomb 5_Socket 6_KillParent 7_Exit)
for name in "${names[@]}"; do
  cp "$SRC/data/sample/level1/1_ReLU.py" "$B/level1/$name.py"
  how="${name%%_*}"
  mkdir -p "$TMP/solutions/level1/$name"
  cat >"$TMP/solutions/level1/$name/model_new.py" <<PY
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

_SOURCE = r"""
$(cat "$SRC/tests/e2e/faults/misbehave.cpp")
"""
_ext = load_inline(name="kgym_e2e_misbehave", cpp_sources=_SOURCE, functions=["misbehave"],
                   extra_cflags=["-O1"], verbose=False)


class ModelNew(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return _ext.misbehave(x, $how)
PY
done
cat >"$TMP/faults.yaml" <<YAML
bench_dir: $B
output: {root_dir: $TMP/runs, run_name: faults}
agent: {kind: replay, dir: $TMP/solutions}
concurrency: 2
verifier: {mode: correctness, call_timeout_sec: 4, timeout_sec: 300}
sandbox:
  mode: bwrap
  limits: {address_space_mb: 4096, processes: 64, cpu_sec: 60}
YAML
RUN="$TMP/runs/faults"
expect_exit 1 "a run of misbehaving candidates finishes" timeout 600 "$KGYM" run --config "$TMP/faults.yaml"
expect_output "isolation: agent bwrap" "the run header names the isolation"
C="$RUN/cases/level1"
expect_verdict "$C/1_Segfault/result.json" crash
check "the segfault is named" grep -q 'SIGSEGV' "$C/1_Segfault/result.json"
expect_verdict "$C/2_Hang/result.json" timeout
expect_verdict "$C/3_Allocate/result.json" runtime_error
check "the allocation hit the address-space limit" grep -q 'malloc failed' "$C/3_Allocate/result.json"
verdict="$(verdict_of "$C/4_ForkBomb/result.json")"
case "$verdict" in timeout | crash | runtime_error) ok "4_ForkBomb -> $verdict" ;; *) bad "4_ForkBomb: verdict '$verdict'" ;; esac
expect_verdict "$C/5_Socket/result.json" runtime_error
check "the socket found no network" grep -qiE 'connect: (Network is unreachable|Cannot assign)' "$C/5_Socket/result.json"
verdict="$(verdict_of "$C/6_KillParent/result.json")"
case "$verdict" in crash | runtime_error | fail_correctness) ok "6_KillParent -> $verdict" ;; *) bad "6_KillParent: verdict '$verdict'" ;; esac
expect_verdict "$C/7_Exit/result.json" runtime_error
check "verify.log names the candidate's box" grep -rq 'candidate sandbox: bwrap' "$C/1_Segfault/verify"
check "the candidate worker was pinned to its leased cores" grep -rqE 'candidate worker pinned to cores \[[0-9]' "$C/5_Socket/verify"
if [ "$(id -u)" -eq 0 ]; then
  check "as root, the candidate ran as uid 65534" grep -rq 'candidate sandbox: bwrap.*uid 65534' "$C/1_Segfault/verify"
fi
[ "$(grep -c '"event":"finished"' "$RUN/events.jsonl")" -eq 7 ] && ok "all 7 cases finished" \
  || bad "finished events" "$(grep -c '"event":"finished"' "$RUN/events.jsonl")"
check "summary written" test -s "$RUN/summary.json"
sleep 0.5
check "no candidate process is left" no_process "kgym_e2e_misbehave|$RUN"
finish
