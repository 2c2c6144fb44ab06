#!/usr/bin/env bash
# labels: e2e sanitize slow
# Reproduction bundles (docs/repro.md): `kgym run` with output.bundles writes
# one per verified case, `kgym repro` writes one for a case, and `kgym verify
# --bundle` re-runs it elsewhere and compares with the recorded result. An
# edited bundle and hostile archives are refused with exit 2, naming the
# entry and the rule; a request edited to be checked less is ignored.
source "$(dirname "$0")/lib.sh"

S="$SRC/data/sample"
# 1_ReLU passes (timed: a speedup interval), 3_SumReduction fails correctness.
cat >"$TMP/run.yaml" <<YAML
bench_dir: $S
cases: "1,3"
devices: ["0"]
concurrency: 1
output: {root_dir: $TMP/runs, run_name: r, bundles: true}
agent: {kind: replay, dir: $S/solutions}
verifier:
  mode: performance
  timing: {budget_sec: 2, warmup: 1}
YAML
RUN="$TMP/runs/r"
RELU="$RUN/cases/level1/1_ReLU"
SUM="$RUN/cases/level1/3_SumReduction"
expect_exit 1 "kgym run with output.bundles (3_SumReduction fails on purpose)" "$KGYM" run --config "$TMP/run.yaml"
expect_verdict "$RELU/result.json" pass
expect_verdict "$SUM/result.json" fail_correctness
check "the run wrote a bundle per verified case" test -s "$RELU/repro.tar.gz" -a -s "$SUM/repro.tar.gz"
check "summary.md gives the bundle's command, from the run directory" grep -qF "\`kgym verify --bundle cases/level1/1_ReLU/repro.tar.gz\`" "$RUN/summary.md"
check "report.html gives it under the case's files" grep -qF "reproduce: <code>kgym verify --bundle cases/level1/1_ReLU/repro.tar.gz" "$RUN/report.html"

# From the run directory, with the path summary.md shows.
expect_exit 0 "kgym repro writes a bundle of a case" bash -c "cd '$RUN' && '$KGYM' repro cases/level1/1_ReLU -o '$TMP/relu.tar.gz'"
expect_output "re-run it with: kgym verify --bundle $TMP/relu.tar.gz" "kgym repro prints the command"
LISTING="$(tar -tzf "$TMP/relu.tar.gz")"
for f in manifest.json request.json result.json provenance.json problem/1_ReLU.py candidate/model_new.py; do
  check "the bundle holds $f (any tar reads it)" grep -qx "$f" <<<"$LISTING"
done
check "the manifest hashes every file" grep -q '"sha256": "[0-9a-f]\{64\}"' <(tar -xzOf "$TMP/relu.tar.gz" manifest.json)
check "the provenance names kgym's commit" grep -q '"commit": "' <(tar -xzOf "$TMP/relu.tar.gz" provenance.json)

# Re-run from another directory, with the run directory out of reach. A
# short timing on a shared machine may land outside the recorded interval:
# then it says so and exits 1, and the verdicts still agree.
mkdir "$TMP/elsewhere" && cd "$TMP/elsewhere" || exit 1
mv "$RUN" "$TMP/moved-run"
OUT="$("$KGYM" verify --bundle "$TMP/relu.tar.gz" 2>&1)"
got=$?
echo "$OUT" | grep -E '^(repro|pass):'
expect_output '^repro: case level1/1_ReLU from ' "it says which case it reproduces"
expect_output '^pass: ' "the usual verdict line"
expect_output '^repro: verdict pass, recorded pass: same$' "the verdicts are compared"
SPEEDUP='^repro: speedup [0-9.]+x \[[0-9.]+, [0-9.]+\], recorded [0-9.]+x \[[0-9.]+, [0-9.]+\]'
expect_output "$SPEEDUP: (inside|OUTSIDE) the recorded interval$" "the speedup is compared with the recorded interval"
if grep -q ': inside the recorded interval$' <<<"$OUT"; then
  check "inside: it agrees and exits 0" test "$got" -eq 0 -a -n "$(grep -x 'repro: agrees with the recorded result' <<<"$OUT")"
else
  check "outside: it disagrees and exits 1" test "$got" -eq 1 -a -n "$(grep -x 'repro: disagrees with the recorded result: the speedup lies outside the recorded interval' <<<"$OUT")"
fi
mv "$TMP/moved-run" "$RUN"

# rehash DIR : the manifest of an extracted bundle made to match its files.
rehash() {
  json_edit "$1/manifest.json" "import hashlib
for f in r['files']:
    f['sha256'] = hashlib.sha256(open('$1/' + f['path'], 'rb').read()).hexdigest()"
}
# The same bundle with its recorded interval edited (and its manifest made
# to match): wide, the speedup falls inside (exit 0); far above, outside (exit 1).
rebundle() {  # SRC DST LO HI
  rm -rf "$TMP/re" && mkdir "$TMP/re" && tar -xzf "$1" -C "$TMP/re" &&
    json_edit "$TMP/re/result.json" "r['performance']['speedup']['ci95'] = [$3, $4]" && rehash "$TMP/re"
  tar -czf "$2" -C "$TMP/re" manifest.json problem candidate request.json result.json provenance.json
}
rebundle "$TMP/relu.tar.gz" "$TMP/wide.tar.gz" 0.001 1000
# With the run's config the verification is checked as the run checked it.
expect_exit 0 "kgym verify --bundle agrees: verdict same, speedup inside" \
  "$KGYM" verify --bundle "$TMP/wide.tar.gz" --config "$TMP/run.yaml"
check "with the run's config, no timing setting is ignored" test -z "$(grep "request.json's config.timing" <<<"$OUT")"
expect_output "$SPEEDUP: inside the recorded interval$" "inside the recorded interval"
expect_output '^repro: agrees with the recorded result$' "it concludes that they agree"
rebundle "$TMP/relu.tar.gz" "$TMP/far.tar.gz" 500 1000
expect_exit 1 "kgym verify --bundle disagrees: speedup outside" "$KGYM" verify --bundle "$TMP/far.tar.gz"
expect_output '^repro: disagrees with the recorded result: the speedup lies outside the recorded interval$' \
  "it concludes that they disagree, and why"
expect_exit 0 "a failing case reproduces its failure" "$KGYM" verify --bundle "$SUM/repro.tar.gz"
expect_output '^repro: verdict fail_correctness, recorded fail_correctness: same$' "the failure is the same"

rm "$RELU/repro.tar.gz"
expect_exit 0 "kgym report" "$KGYM" report "$RUN"
check "without its bundle a case gets the kgym repro command" grep -qF "\`kgym repro cases/level1/1_ReLU\`" "$RUN/summary.md"

expect_exit 2 "--bundle does not mix with --problem" "$KGYM" verify --bundle "$TMP/relu.tar.gz" --problem "$S/level1/1_ReLU.py"

# A bundle is data (docs/repro.md "What a bundle may ask for"): a request
# edited to be checked less, with the manifest hashed again, is verified
# the verifier's way. hostile_request SRC DST CANDIDATE_FILE|- PYTHON_EDIT
hostile_request() {
  rm -rf "$TMP/hr" && mkdir "$TMP/hr" && tar -xzf "$1" -C "$TMP/hr" &&
    { [ "$3" = - ] || cp "$3" "$TMP/hr/candidate/model_new.py"; } &&
    json_edit "$TMP/hr/request.json" "request = r; $4" && rehash "$TMP/hr"
  tar -czf "$2" -C "$TMP/hr" manifest.json problem candidate request.json result.json provenance.json
}
# The torch.relu cheat, its request saying candidate_is_reference (it would
# run unboxed as a trusted reference, with no static rules and no op trace).
cat >"$TMP/relu_cheat.py" <<'PY'
import torch


class ModelNew(torch.nn.Module):
    def forward(self, x):
        return torch.relu(x)
PY
hostile_request "$TMP/relu.tar.gz" "$TMP/as_reference.tar.gz" "$TMP/relu_cheat.py" \
  'request["candidate_is_reference"] = True'
expect_exit 1 "a bundle's candidate_is_reference is ignored: the relu cheat is caught and disagrees" \
  "$KGYM" verify --bundle "$TMP/as_reference.tar.gz"
expect_output '^fail_cheat: ' "the cheat is a cheat"
expect_output "^repro: note: request.json's candidate_is_reference true is ignored; this verification uses false$" \
  "a note names the ignored field"
check "it does not agree with the recorded pass" test -z "$(grep 'repro: agrees' <<<"$OUT")"
check "it does not pass" test -z "$(grep -E '^pass: ' <<<"$OUT")"
# An honest candidate whose request drops the uid change and every limit:
# it runs in this verifier's box all the same.
hostile_request "$TMP/relu.tar.gz" "$TMP/unboxed.tar.gz" - \
  'request["sandbox"] = {"mode": "none", "drop_privileges": False, "address_space_mb": 0, "cpu_sec": 0, "file_size_mb": 0, "processes": 0, "hidden": []}; request["config"]["mode"] = "correctness"'
OUT="$("$KGYM" verify --bundle "$TMP/unboxed.tar.gz" --log "$TMP/unboxed.log" 2>&1)"
echo "$OUT" | grep -E '^(repro|pass|fail[a-z_]*):'
expect_output '^pass: ' "the honest candidate still passes"
expect_output "^repro: note: request.json's sandbox.drop_privileges false is ignored; this verification uses true$" \
  "drop_privileges false is ignored"
expect_output "^repro: note: request.json's sandbox.address_space_mb 0 is ignored; this verification uses [1-9]" \
  "a limit of 0 is ignored"
expect_output "^repro: note: request.json's sandbox.mode \"none\" is ignored" "the sandbox mode is ignored"
check "the candidate ran in a box" grep -q 'candidate sandbox: ' "$TMP/unboxed.log"
check "not the box the bundle asked for" test -z "$(grep 'candidate sandbox: none' "$TMP/unboxed.log")"
if [ "$(id -u)" -eq 0 ]; then
  check "as root, the candidate ran as uid 65534" grep -q 'candidate sandbox: .*uid 65534' "$TMP/unboxed.log"
fi

# An edited candidate, packed again with the system's tar.
mkdir "$TMP/x" && tar -xzf "$TMP/relu.tar.gz" -C "$TMP/x"
echo "# edited" >>"$TMP/x/candidate/model_new.py"
tar -czf "$TMP/edited.tar.gz" -C "$TMP/x" manifest.json problem candidate request.json result.json provenance.json
expect_exit 2 "an edited bundle is refused" "$KGYM" verify --bundle "$TMP/edited.tar.gz"
expect_output "bad bundle: .*entry 'candidate/model_new.py': its sha256 [0-9a-f]+ does not match manifest.json's" \
  "the error names the entry and the hash mismatch"

# Hostile archives: a '../' entry, an absolute path, a symbolic link.
hostile() {
  python3 - "$1" "$2" <<'PY'
import io, sys, tarfile
out, kind = sys.argv[1], sys.argv[2]
with tarfile.open(out, "w:gz", format=tarfile.USTAR_FORMAT) as tar:
    info = tarfile.TarInfo({"dotdot": "../evil.py", "absolute": "/tmp/evil.py", "link": "candidate/model_new.py"}[kind])
    if kind == "link":
        info.type, info.linkname = tarfile.SYMTYPE, "/etc/passwd"
        tar.addfile(info)
    else:
        data = b"print('escaped')\n"
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))
PY
}
hostile "$TMP/dotdot.tar.gz" dotdot
expect_exit 2 "a bundle with a ../ entry is refused" "$KGYM" verify --bundle "$TMP/dotdot.tar.gz"
expect_output "bad bundle: .*entry 1 '../evil.py': '..' component" "the error names the entry and the rule"
check "nothing was written outside" test ! -e "$TMP/evil.py" -a ! -e "$TMP/elsewhere/../evil.py"
hostile "$TMP/absolute.tar.gz" absolute
expect_exit 2 "a bundle with an absolute path is refused" "$KGYM" verify --bundle "$TMP/absolute.tar.gz"
expect_output "entry 1 '/tmp/evil.py': absolute path" "the error names the absolute path"
hostile "$TMP/link.tar.gz" link
expect_exit 2 "a bundle with a symbolic link is refused" "$KGYM" verify --bundle "$TMP/link.tar.gz"
expect_output "entry 1 'candidate/model_new.py': is a symbolic link to '/etc/passwd'" "the error names the link"
echo "not a bundle" >"$TMP/garbage.tar.gz"
expect_exit 2 "garbage is refused" "$KGYM" verify --bundle "$TMP/garbage.tar.gz"
expect_output "not gzip data" "the error says what it is not"

finish
