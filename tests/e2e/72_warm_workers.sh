#!/usr/bin/env bash
# labels: e2e torch
# Warm workers (verifier.warm_workers): candidates forked from the device's
# boxed zygote keep the candidate sandbox — no network, nothing writable
# outside their scratch dir, the unprivileged uid when kgym runs as root —
# and a zygote killed by a candidate is replaced for the next case, with a
# note in that case's verify.log. The workers' start is timed from their
# hellos, and each case's reference probe is forked from the reference
# zygote. The checks live in C++ (load_inline) so the worker's audit hook
# cannot be what stops them.
source "$(dirname "$0")/lib.sh"

B="$TMP/bench"
mkdir -p "$B/level1"
for name in 1_KillZygote 2_BoxProbe; do
  cp "$SRC/data/sample/level1/1_ReLU.py" "$B/level1/$name.py"
  how="${name%%_*}"
  mkdir -p "$TMP/solutions/level1/$name"
  cat >"$TMP/solutions/level1/$name/model_new.py" <<PY
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

_SOURCE = r"""
#include <torch/extension.h>
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>
#include <cerrno>
#include <cstring>

torch::Tensor run(torch::Tensor x, int64_t how) {
  if (how == 1) ::kill(::getppid(), SIGKILL);  // the parent is the warm zygote
  if (how == 2) {
    int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(80);
    ::inet_pton(AF_INET, "1.1.1.1", &addr.sin_addr);
    TORCH_CHECK(fd < 0 || ::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0,
                "BOX: the network is reachable");
    for (const char* path : {"$SRC/kgym-warm-escape", "/tmp/kgym-worker/escape", "$TMP/escape"}) {
      int out = ::open(path, O_WRONLY | O_CREAT, 0644);
      TORCH_CHECK(out < 0, "BOX: wrote ", path);
    }
    TORCH_CHECK(::geteuid() != 0, "BOX: running as root");
  }
  torch::Tensor xc = x.contiguous();
  torch::Tensor y = torch::empty_like(xc);
  const float* in = xc.data_ptr<float>();
  float* out = y.data_ptr<float>();
  for (int64_t i = 0; i < xc.numel(); ++i) out[i] = in[i] > 0.0f ? in[i] : 0.0f;
  return y;
}
"""
_ext = load_inline(name="kgym_e2e_warm", cpp_sources=_SOURCE, functions=["run"], verbose=False)


class ModelNew(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return _ext.run(x, $how)
PY
done
cat >"$TMP/warm.yaml" <<YAML
bench_dir: $B
output: {root_dir: $TMP/runs, run_name: warm}
agent: {kind: replay, dir: $TMP/solutions}
devices: ["0"]
concurrency: 1
verifier: {mode: correctness, call_timeout_sec: 10, warm_workers: "on"}
sandbox: {mode: bwrap}
YAML
RUN="$TMP/runs/warm"
expect_exit 1 "a run with warm workers finishes" timeout 600 "$KGYM" run --config "$TMP/warm.yaml"
C="$RUN/cases/level1"
verdict="$(verdict_of "$C/1_KillZygote/result.json")"
case "$verdict" in crash | runtime_error) ok "killing the zygote -> $verdict" ;; *) bad "1_KillZygote: verdict '$verdict'" ;; esac
check "the killer was forked warm" grep -q 'candidate worker forked warm' "$C/1_KillZygote/verify/verify.log"
expect_verdict "$C/2_BoxProbe/result.json" pass
check "the next case notes the replaced zygote" grep -q 'warm candidate worker parent of this device had ended' \
  "$C/2_BoxProbe/verify/verify.log"
check "the next case was forked warm again" grep -q 'candidate worker forked warm' "$C/2_BoxProbe/verify/verify.log"
check "verify.log times the forked worker's start" \
  grep -qE 'candidate worker ready [0-9.]+ s after it was asked for \(fork: ' "$C/2_BoxProbe/verify/verify.log"
check "result.json separates worker start from compile" \
  json_true "$C/2_BoxProbe/result.json" 'all(isinstance(r["timings"][k], float) for k in ("worker_start_s", "load_s", "compile_s", "trials_s"))'
check "the probes were forked from the reference zygote" grep -q 'forked [0-9]*: probe' "$RUN/.kgym/zygote-0-reference.log"
check "verify.log names the inherited box" grep -q 'candidate sandbox: bwrap.*warm zygote' "$C/2_BoxProbe/verify/verify.log"
check "nothing escaped into the kgym tree" test ! -e "$SRC/kgym-warm-escape"
sleep 0.5
# This test's processes only: other tests running beside it have zygotes
# of their own. The warm root is under this test's TMPDIR, which the
# reference zygote's command line and the candidate zygote's sandbox (bwrap
# binds) name.
check "no zygote or candidate is left" no_process "$TMP/.*zygote|kgym_e2e_warm"

cat >"$TMP/bad.yaml" <<YAML
bench_dir: $B
agent: {kind: replay, dir: $TMP/solutions}
verifier: {backend: cuda, warm_workers: "on"}
YAML
expect_exit 2 "warm_workers: on with a cuda backend is a config error" "$KGYM" run --config "$TMP/bad.yaml"
expect_output "warm_workers" "the error names the key"
finish
