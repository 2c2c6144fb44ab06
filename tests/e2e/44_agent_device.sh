#!/usr/bin/env bash
# labels: e2e
# agent.needs_device: the agent leases a device before it starts, gets it in
# its environment, and verifies on it; with one device two samples take
# turns: the second agent starts only after the first sample's verification.
source "$(dirname "$0")/lib.sh"

S="$SRC/data/sample"
cat >"$TMP/agent.sh" <<'SH'
#!/usr/bin/env bash
set -eu
echo "sample $KGYM_SAMPLE on device ${KGYM_DEVICE:-none}"
cp "$SOLUTIONS/level1/1_ReLU/model_new.py" model_new.py
SH
chmod +x "$TMP/agent.sh"
cat >"$TMP/device.yaml" <<YAML
bench_dir: $S
cases: "1"
samples: 2
concurrency: 2
devices: ["0"]
output: {root_dir: $TMP/runs, run_name: device}
agent:
  kind: command
  argv: ["$TMP/agent.sh"]
  env: {SOLUTIONS: "$S/solutions"}
  needs_device: true
verifier: {mode: correctness}
sandbox: {agent_read_only: ["$S/solutions"]}  # the stored answers this scripted agent copies
YAML
RUN="$TMP/runs/device"
CASE="$RUN/cases/level1/1_ReLU"
expect_exit 0 "a run whose agent needs a device" "$KGYM" run --config "$TMP/device.yaml"
expect_verdict "$CASE/result.json" pass
check "sample 1's agent got the device" grep -q "^sample 1 on device 0$" "$CASE/samples/1/agent.log"
check "sample 2's agent got the device" grep -q "^sample 2 on device 0$" "$CASE/samples/2/agent.log"
check "each sample verified on the device its agent had" \
  test "$(grep -c '"device": "0"' "$CASE/samples/1/verify_request.json" "$CASE/samples/2/verify_request.json" | grep -c ':1$')" -eq 2
# events.jsonl line numbers: one lease per sample, the second after the first sample ended.
first_lease="$(grep -n '"event":"device_leased"' "$RUN/events.jsonl" | sed -n 1p | cut -d: -f1)"
second_lease="$(grep -n '"event":"device_leased"' "$RUN/events.jsonl" | sed -n 2p | cut -d: -f1)"
first_end="$(grep -n '"event":"sample_finished"' "$RUN/events.jsonl" | sed -n 1p | cut -d: -f1)"
check "two leases, one per sample" test "$(grep -c '"event":"device_leased"' "$RUN/events.jsonl")" -eq 2
check "the second sample waited for the first to end" test "${second_lease:-0}" -gt "${first_end:-999999}"
check "the first lease came before any agent ran" test "${first_lease:-999999}" -lt "$(grep -n '"phase":"generating"' "$RUN/events.jsonl" | sed -n 1p | cut -d: -f1)"
check "no device is held at the end" grep -q '"device_holders": {}' "$RUN/state.json"
finish
