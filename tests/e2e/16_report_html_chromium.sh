#!/usr/bin/env bash
# labels: e2e
# Opens report.html of a fixture run in headless Chromium: the page loads
# offline, its four plots are in the rendered DOM, and a screenshot is saved
# for review (build/test-artifacts/report_html.png, or $KGYM_ARTIFACTS).
# Skipped (exit 77) when Chromium is not installed: it is optional
# (Debian: apt-get install chromium).
source "$(dirname "$0")/lib.sh"

CHROMIUM="$(command -v chromium || command -v chromium-browser || command -v google-chrome || true)"
if [ -z "$CHROMIUM" ]; then
  echo "SKIPPED: no chromium on PATH; install Debian's 'chromium' package to run this test"
  exit 77
fi
ARTIFACTS="${KGYM_ARTIFACTS:-$(dirname "$KGYM")/test-artifacts}"
mkdir -p "$ARTIFACTS"

RUN="$TMP/run"
cp -r "$SRC/tests/fixtures/runs/before" "$RUN"
expect_exit 0 "kgym report writes report.html" "$KGYM" report "$RUN"

# --no-sandbox: CI containers run as root, where Chromium's sandbox refuses to start.
flags=(--headless --no-sandbox --disable-gpu --hide-scrollbars --no-first-run --disable-extensions
  --user-data-dir="$TMP/chromium-profile")
DOM="$(timeout 60 "$CHROMIUM" "${flags[@]}" --dump-dom "file://$RUN/report.html" 2>/dev/null)"
check "chromium renders the page with its four plots" test "$(grep -o '<svg ' <<<"$DOM" | wc -l)" -eq 4
check "the rendered page holds the case table" grep -q 'id="case-level1/5_Matmul"' <<<"$DOM"

PNG="$ARTIFACTS/report_html.png"
rm -f "$PNG"
timeout 60 "$CHROMIUM" "${flags[@]}" --window-size=1280,2600 --screenshot="$PNG" "file://$RUN/report.html" \
  >/dev/null 2>&1
check "screenshot saved" test -s "$PNG"
check "screenshot is a PNG" bash -c "head -c 8 '$PNG' | od -An -tx1 | grep -q '89 50 4e 47 0d 0a 1a 0a'"
echo "screenshot for review: $PNG"

finish
