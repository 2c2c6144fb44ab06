#!/usr/bin/env bash
# labels: e2e sanitize
# report.html of a fixture run: written by `kgym report`, well-formed,
# self-contained, every link relative and pointing at a file of the run.
source "$(dirname "$0")/lib.sh"

RUN="$TMP/run"
cp -r "$SRC/tests/fixtures/runs/before" "$RUN"
CASE="$RUN/cases/level1/5_Matmul"
mkdir -p "$CASE/candidate"
echo "# spec" >"$CASE/SPEC.md"
echo "class ModelNew: pass" >"$CASE/candidate/model_new.py"
echo "log" >"$CASE/verify.log"

expect_exit 0 "kgym report writes report.html" "$KGYM" report "$RUN"
expect_output "report.html" "says where report.html is"
HTML="$RUN/report.html"
check "report.html written" test -s "$HTML"

# The page is also well-formed XML: parse it with the standard library.
check "report.html is well-formed" python3 -c 'import sys, xml.dom.minidom; xml.dom.minidom.parse(sys.argv[1])' "$HTML"
for id in headline plots cases provenance plot-speedup plot-fast-p plot-verdicts plot-phases; do
  check "section #$id present" grep -q "id=\"$id\"" "$HTML"
done
check "four inline SVG plots" test "$(grep -c '<svg ' "$HTML")" -eq 4
check "no external reference" bash -c "! grep -qiE 'https?:|src=|url\\(|@import|<link|<script' '$HTML'"
check "provenance shows the run seed" grep -q '<dt>run_seed</dt><dd>1234567</dd>' "$HTML"

# Every href is relative and names an existing file of the run.
links="$(grep -oE 'href="[^"]*"' "$HTML" | sed -E 's/href="(.*)"/\1/' | sort -u)"
check "links to SPEC.md, candidate, verify log and result.json of a case" \
  test "$(grep -c '^cases/level1/5_Matmul/' <<<"$links")" -eq 4
missing=0
while read -r link; do
  [ -z "$link" ] && continue
  [ -f "$RUN/$link" ] || { echo "     dangling link: $link"; missing=$((missing + 1)); }
done <<<"$links"
check "every link resolves inside the run dir" test "$missing" -eq 0

finish
