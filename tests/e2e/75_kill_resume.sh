#!/usr/bin/env bash
# labels: e2e sanitize
# kill -9 of the harness at several points (an agent generating, a candidate
# verifying, after some results), then --resume: no result is lost or
# duplicated, no child outlives the harness, a generated candidate is
# verified rather than regenerated. Also: two runs on one directory.
source "$(dirname "$0")/lib.sh"
scripted

copying_run "$TMP/kill.yaml" "1,4,6,7" 2 "$TMP/runs" k 1
RUN="$TMP/runs/k"
EV="$RUN/events.jsonl"

count() { local n; n="$(grep -c -- "$1" "$EV" 2>/dev/null)"; echo "${n:-0}"; }
# wait_for PATTERN N : until events.jsonl holds at least N lines matching PATTERN (60 s at most).
wait_for() {
  for _ in $(seq 1 600); do [ "$(count "$1")" -ge "$2" ] && return 0; sleep 0.1; done
  return 1
}
# kill_at WHAT PATTERN N COMMAND... : starts the run, kills it with SIGKILL once PATTERN is seen N times.
kill_at() {
  local what="$1" pattern="$2" n="$3"; shift 3
  "$@" >>"$TMP/out.txt" 2>&1 &
  local pid=$!
  if wait_for "$pattern" "$n"; then
    kill -9 "$pid"; wait "$pid" 2>/dev/null
    ok "kill -9 while $what"
  else
    bad "never saw $pattern x$n" "$(tail -n 5 "$TMP/out.txt")"; kill -9 "$pid"; wait "$pid" 2>/dev/null
  fi
  local left=""
  for _ in $(seq 1 20); do  # SIGKILL on parent death is immediate; reaping may lag a little
    left="$(pgrep -af -- "$RUN/" | grep -v pgrep)" || true
    [ -z "$left" ] && break
    sleep 0.25
  done
  [ -z "$left" ] && ok "no child outlives the killed harness ($what)" \
    || bad "children outlived the killed harness ($what)" "$left"
}

kill_at "an agent generates" '"phase":"generating"' 1 "$KGYM" run --config "$TMP/kill.yaml"
kill_at "a candidate is verified" '"phase":"verifying"' "$(( $(count '"phase":"verifying"') + 1 ))" \
  "$KGYM" run --resume "$RUN"
kill_at "some results are in" '"event":"finished"' "$(( $(count '"event":"finished"') + 1 ))" \
  "$KGYM" run --resume "$RUN"

# The monitor of a run whose kgym run was killed says so, and how to finish it.
expect_exit 0 "kgym monitor --once on the killed run" "$KGYM" monitor "$RUN" --once
expect_output "its kgym run \(pid [0-9]+\) is gone: the run stopped without finishing; finish it with kgym run --resume $RUN" \
  "says its kgym run is gone and how to resume"

declare -A before
for f in "$RUN"/cases/level1/*/result.json; do [ -f "$f" ] && before["$f"]="$(md5sum <"$f")"; done
declare -A generated_runs
for d in "$RUN"/cases/level1/*/; do
  [ -f "$d/generation.json" ] && [ ! -f "$d/result.json" ] && generated_runs["$d"]="$(grep -c 'agent ran' "$d/agent.log")"
done
[ "${#before[@]}" -ge 1 ] && ok "${#before[@]} result(s) written before the last kill" || bad "no result before the last kill"

# The last resume runs in the background so a second run can try the same dir.
"$KGYM" run --resume "$RUN" >"$TMP/last.txt" 2>&1 &
pid=$!
wait_for '"event":"phase"' "$(( $(count '"event":"phase"') + 1 ))" || true
record_before="$(md5sum <"$RUN/run.json")"
expect_exit 2 "a second run on the same dir is refused" "$KGYM" run --resume "$RUN"
expect_output "pid $pid" "and names the holder's pid ($pid)"
[ "$(md5sum <"$RUN/run.json")" = "$record_before" ] && ok "the refused run left run.json as it was" \
  || bad "the refused run rewrote run.json"
wait "$pid"; rc=$?
[ "$rc" -eq 0 ] && ok "the last resume finishes every case (exit 0)" || bad "last resume: exit $rc" "$(tail -n 20 "$TMP/last.txt")"

for stem in 1_ReLU 4_Softmax 6_LinearGELU 7_RMSNorm; do
  expect_verdict "$RUN/cases/level1/$stem/result.json" pass
  n="$(grep -c "\"case\":\"level1/$stem\",\"event\":\"finished\"" "$EV")"
  [ "$n" -eq 1 ] && ok "$stem finished exactly once" || bad "$stem finished $n times"
done
for f in "${!before[@]}"; do
  [ "$(md5sum <"$f")" = "${before[$f]}" ] && ok "kept as it was: ${f#$RUN/}" || bad "rewritten: ${f#$RUN/}"
done
for d in "${!generated_runs[@]}"; do
  n="$(grep -c 'agent ran' "$d/agent.log")"
  [ "$n" -eq "${generated_runs[$d]}" ] && ok "generated, then verified without regenerating: $(basename "$d")" \
    || bad "$(basename "$d") regenerated after resume ($n agent runs)"
done
check "summary.json counts 4 passes" grep -q '"pass": 4' "$RUN/summary.json"
finish
