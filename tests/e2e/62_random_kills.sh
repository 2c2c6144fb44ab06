#!/usr/bin/env bash
# labels: e2e sanitize
# kill -9 of `kgym run` at random moments, 20 times in a row, each followed
# by --resume; then a last resume to the end. The schedule is drawn from a
# fixed seed (KGYM_E2E_SEED changes it): most kills land after a random
# delay, some right after a result was written. At the end every case has
# exactly one result with the verdict the sample set promises, no result
# written before a kill changed (sha256 before and after), every line of
# events.jsonl parses as JSON (a torn last line is dropped by the resume
# that follows: docs/robustness.md), and no child outlives a kill.
source "$(dirname "$0")/lib.sh"
scripted 1

SEED="${KGYM_E2E_SEED:-62}"
KILLS=20
copying_run "$TMP/kills.yaml" "1,2,3,4" 2 "$TMP/runs" rk
RUN="$TMP/runs/rk"
EV="$RUN/events.jsonl"
declare -A WANT=(
  [1_ReLU]=pass [2_LeakyReLU]=fail_cheat [3_SumReduction]=fail_correctness [4_Softmax]=pass
)

finished_events() { local n; n="$(grep -c -- '"event":"finished"' "$EV" 2>/dev/null)"; echo "${n:-0}"; }

# Every result.json the first time it is seen, by its sha256; a later
# difference is a result a kill or a resume rewrote.
declare -A SHA=()
CHANGED=0
snapshot() {
  local f sum
  for f in "$RUN"/cases/level1/*/result.json; do
    [ -f "$f" ] || continue
    sum="$(sha256sum <"$f")"
    if [ -z "${SHA[$f]:-}" ]; then SHA["$f"]="$sum"
    elif [ "${SHA[$f]}" != "$sum" ]; then CHANGED=$((CHANGED + 1)); bad "rewritten after a kill: ${f#$RUN/}"; fi
  done
}

RANDOM="$SEED"
started=$SECONDS
kills=0 ended_alone=0 after_result=0 orphans=0 round=0
while [ "$kills" -lt "$KILLS" ] && [ "$round" -lt $((KILLS + 10)) ]; do
  round=$((round + 1))
  t0=$SECONDS
  # A kill before run.json was written leaves nothing to resume: the run starts again.
  if [ -f "$RUN/run.json" ]; then set -- run --resume "$RUN"; else set -- run --config "$TMP/kills.yaml"; fi
  "$KGYM" "$@" >>"$TMP/out.txt" 2>&1 &
  pid=$!
  if [ $((RANDOM % 8)) -eq 0 ]; then
    # Right after the next result: its result.json is on disk, its events may not be.
    before="$(finished_events)"
    for _ in $(seq 1 600); do
      [ "$(finished_events)" -gt "$before" ] && break
      kill -0 "$pid" 2>/dev/null || break
      sleep 0.1
    done
    sleep "0.$((RANDOM % 300))"
    after_result=$((after_result + 1))
  else
    ms=$((50 + RANDOM % 2000))
    sleep "$((ms / 1000)).$(printf '%03d' $((ms % 1000)))"
  fi
  if kill -9 "$pid" 2>/dev/null; then kills=$((kills + 1)); else ended_alone=$((ended_alone + 1)); fi
  wait "$pid" 2>/dev/null
  for _ in $(seq 1 40); do  # SIGKILL on parent death is immediate; reaping may lag a little
    left="$(pgrep -af -- "$RUN/" | grep -v pgrep)" || true
    [ -z "$left" ] && break
    sleep 0.25
  done
  [ -n "$left" ] && { orphans=$((orphans + 1)); bad "children outlived kill $kills" "$left"; }
  snapshot
  echo "round $round: ${SECONDS}s total, $((SECONDS - t0))s this round" >>"$TMP/rounds.txt"
  if [ "$round" -eq $((KILLS / 2)) ] && [ -s "$EV" ]; then
    # A kill inside an append leaves a line without its end; one is planted
    # here so the repair is exercised whatever the schedule hit.
    printf '{"t":1,"event":"phase","case":"level1/1_Re' >>"$EV"
    planted=1
  fi
done
results_before_last="${#SHA[@]}"
[ "$kills" -eq "$KILLS" ] && ok "$kills kills -9 ($after_result right after a result; $ended_alone run(s) ended alone)" \
  || bad "only $kills kills in $round rounds"
[ "$orphans" -eq 0 ] && ok "no child outlived any kill"
[ "$results_before_last" -ge 1 ] && ok "$results_before_last result(s) written between kills" \
  || bad "no result was written between the kills"

expect_exit 1 "the last resume finishes the run (two cases fail on purpose)" "$KGYM" run --resume "$RUN"
[ -n "${planted:-}" ] && { grep -q "dropped the torn last line" "$TMP/out.txt" \
  && ok "a resume dropped the torn last line of events.jsonl" || bad "the torn line was not reported dropped"; }

snapshot
[ "$CHANGED" -eq 0 ] && ok "no result changed across $kills kills and resumes"
n_results=0
for stem in "${!WANT[@]}"; do
  f="$RUN/cases/level1/$stem/result.json"
  [ -f "$f" ] && n_results=$((n_results + 1))
  expect_verdict "$f" "${WANT[$stem]}"
  n="$(grep -c "\"case\":\"level1/$stem\",\"event\":\"finished\"" "$EV")"
  [ "$n" -le 1 ] && ok "$stem: one result, finished $n time(s) in events.jsonl" || bad "$stem finished $n times"
done
[ "$n_results" -eq "${#WANT[@]}" ] && ok "every case has its result ($n_results)"
check "no stray result.json (one per case)" \
  test "$(find "$RUN/cases" -name result.json | wc -l)" -eq "${#WANT[@]}"
lines="$(wc -l <"$EV")"
if json_parses "$EV"
then ok "all $lines lines of events.jsonl parse"; else bad "events.jsonl has a line that does not parse"; fi
check "state.json says finished" grep -q '"status": "finished"' "$RUN/state.json"
check "summary.json counts 2 passes" grep -q '"pass": 2' "$RUN/summary.json"
echo "figures: seed $SEED, $kills kills, ${#WANT[@]} cases each with one result, $CHANGED changed, $lines event lines parsed, $((SECONDS - started)) s"
finish
