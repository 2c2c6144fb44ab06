#!/usr/bin/env bash
# labels: e2e sanitize
# The output filesystem fills in the middle of a run (a small tmpfs, filled
# once the first result is in): the run stops with exit 3 and a message
# that says to free space and resume; it leaves no temp file and no record
# that does not parse; the results written before stay as they were; once
# the space is back, --resume finishes the run. Then `kgym report` under a
# file size limit (ulimit -f): it reports EFBIG instead of dying of SIGXFSZ
# and leaves the files it could not rewrite as they were.
source "$(dirname "$0")/lib.sh"
scripted

MNT="$TMP/out"
mkdir -p "$MNT"
if ! mount -t tmpfs -o size=48m tmpfs "$MNT" 2>/dev/null; then
  echo "SKIP: cannot mount a tmpfs here (needs root)"
  exit 77
fi
trap 'umount -l "$MNT" 2>/dev/null; [ -n "${KGYM_E2E_KEEP:-}" ] || rm -rf "$TMP"' EXIT
started=$SECONDS

copying_run "$TMP/full.yaml" "1,4,6,7" 1 "$MNT/runs" df
RUN="$MNT/runs/df"
EV="$RUN/events.jsonl"

"$KGYM" run --config "$TMP/full.yaml" >"$TMP/full.txt" 2>&1 &
pid=$!
for _ in $(seq 1 900); do
  grep -q '"event":"finished"' "$EV" 2>/dev/null && break
  kill -0 "$pid" 2>/dev/null || break
  sleep 0.1
done
# Fill the filesystem to the last page.
dd if=/dev/zero of="$MNT/filler" bs=1M 2>/dev/null
dd if=/dev/zero of="$MNT/filler2" bs=4k 2>/dev/null
filled_at=$SECONDS
timeout 300 tail --pid="$pid" -f /dev/null
wait "$pid"; rc=$?
[ "$rc" -eq 3 ] && ok "the run stops with exit 3 when the disk fills ($((SECONDS - filled_at)) s after)" \
  || bad "exit $rc on a full disk, want 3" "$(tail -n 15 "$TMP/full.txt")"
OUT="$(cat "$TMP/full.txt")"
expect_output "the run stopped because a result could not be written: .*No space left on device" \
  "it says which write failed and why"
expect_output "kgym run --resume $RUN" "and how to finish the run"

check "no temp file is left behind" test -z "$(find "$RUN" -name '.*.tmp*' -print -quit)"
check "every result.json, state.json, run.json and summary.json parses" \
  json_parses "$RUN"/cases/level1/*/result.json "$RUN/state.json" "$RUN/run.json" "$RUN/summary.json"
check "events.jsonl ends with a whole line" test "$(tail -c 1 "$EV" | od -An -c | tr -d ' ')" = '\n'
check "report.html is absent or whole" bash -c "[ ! -e '$RUN/report.html' ] || tail -c 20 '$RUN/report.html' | grep -q '</html>'"
declare -A before
for f in "$RUN"/cases/level1/*/result.json; do [ -f "$f" ] && before["$f"]="$(sha256sum <"$f")"; done
[ "${#before[@]}" -ge 1 ] && [ "${#before[@]}" -lt 4 ] && ok "${#before[@]} result(s) written before the disk filled" \
  || bad "${#before[@]} results before the disk filled (want 1 to 3)"

rm -f "$MNT/filler" "$MNT/filler2"
expect_exit 0 "once there is space, --resume finishes the run" "$KGYM" run --resume "$RUN"
for stem in 1_ReLU 4_Softmax 6_LinearGELU 7_RMSNorm; do expect_verdict "$RUN/cases/level1/$stem/result.json" pass; done
for f in "${!before[@]}"; do
  [ "$(sha256sum <"$f")" = "${before[$f]}" ] && ok "kept as it was: ${f#$RUN/}" || bad "rewritten: ${f#$RUN/}"
done
check "summary.json counts 4 passes" grep -q '"pass": 4' "$RUN/summary.json"

# A file size limit below report.html's size: the report fails with EFBIG.
html_before="$(sha256sum <"$RUN/report.html")"
expect_exit 2 "kgym report under ulimit -f fails cleanly" bash -c "ulimit -f 8; exec '$KGYM' report '$RUN'"
expect_output "File too large" "and says the file was too large"
[ "$(sha256sum <"$RUN/report.html")" = "$html_before" ] && ok "report.html is left as it was" \
  || bad "report.html changed"
check "no temp file is left behind by the report" test -z "$(find "$RUN" -maxdepth 1 -name '.*.tmp*' -print -quit)"
echo "figures: disk-full test $((SECONDS - started)) s"
finish
