#!/usr/bin/env bash
# labels: e2e sanitize
# `kgym compare` on the two fixture runs (tests/fixtures/runs/README.md):
# every kind of change is reported in the terminal and in Markdown.
source "$(dirname "$0")/lib.sh"

A="$SRC/tests/fixtures/runs/before"
B="$SRC/tests/fixtures/runs/after"
MD="$TMP/compare.md"

expect_exit 0 "kgym compare A B --md FILE" "$KGYM" compare "$A" "$B" --md "$MD"
echo "$OUT"
expect_output "^correct +55\.6% +62\.5% +\+6\.9 pp$" "correct % of both runs and the change"
expect_output "^fast_1 +11\.1% +25\.0% +\+13\.9 pp$" "fast_1 of both runs and the change"
expect_output "^geomean speedup +0\.80× +1\.08× +×1\.35$" "geomean speedup of both runs and the ratio"
expect_output "^level1/1_ReLU +pass +fail_correctness +1\.02× → — +broken$" "a broken case"
expect_output "^level1/3_SumReduction +fail_correctness +pass +— → 1\.45× +fixed$" "a fixed case"
# 4_Softmax went from 0.29x to 0.91x, but run B's A/A noise floor for it
# reads 0.46-3.27: a side against itself moved as much, so it is no change
# (the copy below with a narrow floor is faster).
check "a change within a run's noise floor is none" bash -c "! grep -q '^level1/4_Softmax' <<<\"\$0\"" "$OUT"
expect_output "^level1/9_MSELoss +timeout +— .*only in A$" "a case only in the first run"
expect_output "^6 cases unchanged" "unchanged cases are counted"
expect_output "wrote $MD" "says where the Markdown is"
expect_output "warning: the runs attempted different cases \(1 only in A, 0 only in B\)" \
  "warns that the totals compare different case sets"

# A gate for CI: --fail-on regression exits 1 when a case broke or got slower.
expect_exit 1 "--fail-on regression with a broken case" "$KGYM" compare "$A" "$B" --fail-on regression
expect_output "1 case\(s\) broke or got slower: level1/1_ReLU \(broken\)" "names the regression"
expect_exit 0 "--fail-on regression of a run against itself" "$KGYM" compare "$A" "$A" --fail-on regression
expect_exit 0 "kgym compare --json" bash -c "'$KGYM' compare '$A' '$B' --json >'$TMP/compare.json'"
check "--json: one object naming each change and the regression" json_true "$TMP/compare.json" \
  'r["kgym_json"] == 1 and r["command"] == "compare" and r["regressions"] == ["level1/1_ReLU (broken)"] and {c["change"] for c in r["cases"]} >= {"broken", "fixed", "same", "only in A"} and [c["b"]["noise_factor"] for c in r["cases"] if c["case"] == "level1/4_Softmax"][0] > 3.2'
expect_exit 2 "--fail-on with an unknown condition" "$KGYM" compare "$A" "$B" --fail-on anything

check "Markdown written" test -s "$MD"
check "Markdown aggregate table" grep -qF "| correct | 55.6% | 62.5% | +6.9 pp |" "$MD"
check "Markdown case table" grep -qF '| `level1/3_SumReduction` | fail\_correctness | pass | — → 1.45× | **fixed** |' "$MD"
check "Markdown holds no raw JSON" bash -c "! grep -q '[{}]' '$MD'"

check "the fixture runs name no torch: no torch warning" bash -c "! grep -q 'different torch' <<<\"\$0\"" "$OUT"
# Copies whose results name different torch builds.
cp -r "$A" "$TMP/a" && cp -r "$B" "$TMP/b"
for f in "$TMP"/a/cases/*/*/result.json; do
  json_edit "$f" 'r["environment"] = {"python": "/usr/bin/python3", "torch": "1.13.0", "torch_build": "cpu"}'
done
for f in "$TMP"/b/cases/*/*/result.json; do
  json_edit "$f" 'r["environment"] = {"python": "/usr/bin/python3", "torch": "2.15.0+cu132", "torch_build": "cuda 13.2"}'
done
expect_exit 0 "kgym compare across torch versions" "$KGYM" compare "$TMP/a" "$TMP/b" --md "$TMP/torch.md"
expect_output "warning: the runs used different torch builds \(A: torch 1\.13\.0 \(cpu\); B: torch 2\.15\.0\+cu132 \(cuda 13\.2\)\)" \
  "warns that the torch builds differ"
check "and so does the Markdown" grep -q '^> \*\*warning: the runs used different torch builds' "$TMP/torch.md"

expect_exit 2 "a directory that is not a run is a usage error" "$KGYM" compare "$A" "$TMP"
expect_output "is not a kgym run directory" "says which argument is wrong"

finish
