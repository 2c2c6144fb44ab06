#!/usr/bin/env bash
# labels: e2e sanitize
# Ctrl-C: stop launching, end the children, write the summary of what
# finished, exit 130; a resume then finishes the rest.
source "$(dirname "$0")/lib.sh"
scripted
script_rule '{"case": "9_MSELoss", "verdict": "timeout", "seconds": 5}'  # still verifying at the Ctrl-C

RUN="$TMP/runs/i"
"$KGYM" run --set output.root_dir="$TMP/runs" --set output.run_name=i --set cases="1,9" \
  --set concurrency=1 --set verifier.mode=correctness --set verifier.call_timeout_sec=60 >"$TMP/out.txt" 2>&1 &
pid=$!
for _ in $(seq 1 600); do
  grep -q '"case":"level1/9_MSELoss","event":"phase","phase":"verifying"' "$RUN/events.jsonl" 2>/dev/null && break
  sleep 0.1
done
sleep 1
kill -INT "$pid"
wait "$pid"; rc=$?
[ "$rc" -eq 130 ] && ok "exit 130 after Ctrl-C" || bad "exit $rc after Ctrl-C, want 130" "$(cat "$TMP/out.txt")"
check "state.json says interrupted" grep -q '"status": "interrupted"' "$RUN/state.json"
check "summary written for what finished" test -s "$RUN/summary.md"
sleep 0.5
check "no process of the run is left" no_process "$RUN"
expect_exit 2 "--resume with a changed timeout is refused" "$KGYM" run --resume "$RUN" --set verifier.call_timeout_sec=2
expect_output "verifier.call_timeout_sec: 60 -> 2" "naming the changed key"
expect_exit 1 "--resume --force finishes the interrupted run" "$KGYM" run --resume "$RUN" --set verifier.call_timeout_sec=2 --force
expect_verdict "$RUN/cases/level1/9_MSELoss/result.json" timeout
finish
