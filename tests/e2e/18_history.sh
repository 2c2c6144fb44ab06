#!/usr/bin/env bash
# labels: e2e sanitize
# The run history (docs/history.md): two runs index themselves into one
# database (history.db), `kgym history index` skips what is unchanged and
# updates a changed run, and the leaderboard, a case's history and a run's
# regressions read it.
source "$(dirname "$0")/lib.sh"
scripted

DB="$TMP/history.db"
run_once() {
  "$KGYM" run --set output.root_dir="$TMP/runs" --set output.run_name="$1" --set cases=1,2 \
    --set verifier.mode=correctness --set history.db="$DB"
}
expect_exit 1 "a first run (one case is a cheat: exit 1) indexes itself at its end" run_once first
expect_output "history: 2 results of this run indexed into $DB" "says it indexed the run"
expect_exit 1 "a second run of the same config" run_once second

expect_exit 0 "history index over the output root" "$KGYM" history index "$TMP/runs" --db "$DB"
expect_output "indexed 2 runs: 0 added, 0 updated, 2 unchanged; 4 results" "unchanged runs are skipped"

# The samples: ReLU passes, LeakyReLU is a cheat. The second run's ReLU now fails: its result changed, so it is re-indexed.
json_edit "$TMP/runs/second/cases/level1/1_ReLU/result.json" \
  'r["verdict"], r["reason"] = "fail_correctness", "edited by the test"'
expect_exit 0 "history index after a change" "$KGYM" history index "$TMP/runs" --db "$DB"
expect_output "^updated .*/second \(2 results\)$" "the changed run is updated"
expect_output "1 updated, 1 unchanged" "and only that one"

expect_exit 0 "leaderboard" "$KGYM" leaderboard --db "$DB" --by config --md "$TMP/lb.md" --html "$TMP/lb.html"
echo "$OUT"
expect_output "^config +runs +cases +pass@1" "a table with a header"
expect_output "^[0-9a-f]{12} +1 +2 +0\.0% +- +0\.0% +50\.0% " "one config, two cases, the newest results (of the second run): none passes, one cheat"
check "Markdown written" grep -q '^| config | runs | cases | pass@1 |' "$TMP/lb.md"
check "HTML written, self-contained" bash -c "grep -q '<table>' '$TMP/lb.html' && ! grep -qE '(src|href)=' '$TMP/lb.html'"
expect_exit 0 "leaderboard by model" "$KGYM" leaderboard --db "$DB" --by model --level level1
expect_output "^\(none\) +1 +2 " "replay runs have no model"
"$KGYM" leaderboard --db "$DB" --by config --json >"$TMP/lb.json"
check "leaderboard --json: one config, two cases, none passes" json_true "$TMP/lb.json" \
  'r["kgym_json"] == 1 and r["by"] == "config" and len(r["entries"]) == 1 and r["entries"][0]["cases"] == 2 and r["entries"][0]["pass_at_1"] == 0'
expect_exit 2 "leaderboard --by nonsense is a usage error" "$KGYM" leaderboard --db "$DB" --by colour

expect_exit 0 "history case" "$KGYM" history case level1/1_ReLU --db "$DB"
echo "$OUT"
expect_output "^level1/1_ReLU: 2 results, newest first" "both runs"
check "newest first" bash -c "grep -E '^[0-9]{4}-' <<<\"\$0\" | head -1 | grep -q 'fail_correctness .* second$'" "$OUT"

expect_exit 1 "history regressions of the second run" "$KGYM" history regressions second --db "$DB"
echo "$OUT"
expect_output "^second: 1 regression against 1 earlier run of config [0-9a-f]{12}" "one regression"
expect_output "level1/1_ReLU +now fails +pass .*\(run first\) +-> +fail_correctness" "the case that now fails"
"$KGYM" history regressions second --db "$DB" --json >"$TMP/regressions.json"
check "history regressions --json exits 1 too and names the case" json_true "$TMP/regressions.json" \
  'r["kgym_json"] == 1 and [x["case"] for x in r["regressions"]] == ["level1/1_ReLU"] and r["regressions"][0]["now"]["verdict"] == "fail_correctness"'
"$KGYM" history case level1/1_ReLU --db "$DB" --json >"$TMP/case.json"
check "history case --json: both results, newest first" json_true "$TMP/case.json" \
  '[x["run_name"] for x in r["results"]] == ["second", "first"]'
expect_exit 0 "the first run has nothing earlier" "$KGYM" history regressions "$TMP/runs/first" --db "$DB"
expect_output "no earlier run of the same configuration" "says so"

# The database's place comes from a config's history.db too.
printf 'bench_dir: %s\nagent: {kind: replay, dir: %s}\nhistory: {db: %s/from_config.db}\n' \
  "$SRC/data/sample" "$SRC/data/sample/solutions" "$TMP" >"$TMP/h.yaml"
expect_exit 0 "history index --config FILE" "$KGYM" history index "$TMP/runs" --config "$TMP/h.yaml"
check "the configured database was created" test -s "$TMP/from_config.db"
expect_exit 0 "the default database under XDG_DATA_HOME" env XDG_DATA_HOME="$TMP/xdg" "$KGYM" history index "$TMP/runs"
check "at \$XDG_DATA_HOME/kgym/history.db" test -s "$TMP/xdg/kgym/history.db"

finish
