#!/usr/bin/env bash
# labels: e2e sanitize
# Resume: finished cases are kept as they are, unfinished ones are completed,
# and a run directory is locked while a run holds it.
source "$(dirname "$0")/lib.sh"
scripted

RUN="$TMP/runs/r"
expect_exit 0 "a first run of three passing cases, --json" bash -c "'$KGYM' run --set output.root_dir='$TMP/runs' \
  --set output.run_name=r --set cases=1,4,7 --set verifier.mode=correctness --json >'$TMP/run.json' 2>'$TMP/run.err'"
check "--json: stdout is summary.json, the progress went to stderr" \
  bash -c "cmp -s '$TMP/run.json' '$RUN/summary.json' && grep -q '\[3/3\]' '$TMP/run.err'"
cp "$RUN/cases/level1/1_ReLU/result.json" "$TMP/relu_before.json"
rm "$RUN/cases/level1/4_Softmax/result.json"
rm -r "$RUN/cases/level1/7_RMSNorm"

expect_exit 0 "kgym run --resume finishes the rest" "$KGYM" run --resume "$RUN"
expect_output "\[3/3\]" "counts the kept case as done"
check "the finished case was not touched" cmp -s "$TMP/relu_before.json" "$RUN/cases/level1/1_ReLU/result.json"
expect_verdict "$RUN/cases/level1/4_Softmax/result.json" pass
expect_verdict "$RUN/cases/level1/7_RMSNorm/result.json" pass
[ "$(grep -c '"event":"finished"' "$RUN/events.jsonl")" -eq 5 ] \
  && ok "events.jsonl: 3 + 2 finished events" || bad "events.jsonl finished events" "$(grep -c '"event":"finished"' "$RUN/events.jsonl")"

expect_exit 2 "a second run into an existing run dir is refused" "$KGYM" run \
  --set output.root_dir="$TMP/runs" --set output.run_name=r
expect_output "--resume" "and the message says how to resume"

# A changed config is refused on resume unless --force, which also regenerates.
expect_exit 2 "a resume with a changed config is refused" "$KGYM" run --resume "$RUN" --set verifier.trials=5
expect_output "verifier.trials: 3 -> 5" "and the message lists the differing key"
expect_output "--force" "and says how to accept it"
expect_exit 2 "--force without --resume is a usage error" "$KGYM" run --force --set cases=1
cp "$RUN/cases/level1/4_Softmax/result.json" "$TMP/softmax_before.json"
rm "$RUN/cases/level1/4_Softmax/result.json"  # generated, not verified
generated() { grep -c '"case":"level1/4_Softmax","event":"generated"' "$RUN/events.jsonl"; }
n_before="$(generated)"
expect_exit 0 "--resume --force accepts the new config" "$KGYM" run --resume "$RUN" --set verifier.trials=5 --force
[ "$(generated)" -eq $((n_before + 1)) ] && ok "--force regenerated the unfinished case" \
  || bad "--force did not regenerate ($(generated) generated events, had $n_before)"
# verifier.trials counts the trials on the problem's own inputs; extra
# distributions and shapes come on top, the same number both times.
trials() { json_get "$1" 'r["correctness"]["trials"]'; }
[ "$(( $(trials "$RUN/cases/level1/4_Softmax/result.json") - $(trials "$TMP/softmax_before.json") ))" -eq 2 ] \
  && ok "and verified it with the new config (2 more trials)" \
  || bad "not verified with the new config" "$(trials "$TMP/softmax_before.json") -> $(trials "$RUN/cases/level1/4_Softmax/result.json") trials"
check "run.json records the new config" grep -q '"trials": 5' "$RUN/run.json"

# Lock: hold the run dir's lock as another process would.
exec 9>"$RUN/.kgym/lock"
flock -n 9 && echo 4242 >&9
expect_exit 2 "a locked run dir is refused" "$KGYM" run --resume "$RUN"
expect_output "pid 4242" "names the holder's pid"
exec 9>&-
finish
