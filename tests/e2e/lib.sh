# Shared helpers for the end-to-end tests. Each test script sources this,
# gets $KGYM (the binary), $SRC (the source tree) and a fresh $TMP, calls
# check/expect_* and ends with `finish`, which prints "N passed, N failed".
set -uo pipefail

KGYM="${1:?usage: $0 PATH_TO_KGYM}"
SRC="${KGYM_SOURCE_DIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}"
TMP="$(mktemp -d "${TMPDIR:-/tmp}/kgym-e2e.XXXXXX")"
PASSED=0
FAILED=0
[ -n "${KGYM_E2E_KEEP:-}" ] || trap 'rm -rf "$TMP"' EXIT  # KGYM_E2E_KEEP=1 keeps it for a post-mortem
export TMPDIR="$TMP"  # scratch dirs that kgym keeps for failed verifications land here too

ok() { PASSED=$((PASSED + 1)); printf 'ok   %s\n' "$1"; }
bad() { FAILED=$((FAILED + 1)); printf 'FAIL %s\n' "$1"; [ -n "${2:-}" ] && printf '     %s\n' "$2"; return 0; }

# check DESCRIPTION COMMAND... : passes when the command succeeds.
check() { local what="$1"; shift; if "$@"; then ok "$what"; else bad "$what"; fi; }

# expect_exit CODE DESCRIPTION COMMAND... : runs COMMAND, output in $OUT.
expect_exit() {
  local want="$1" what="$2"; shift 2
  OUT="$("$@" 2>&1)"; local got=$?
  if [ "$got" -eq "$want" ]; then ok "$what (exit $got)"; else bad "$what: exit $got, want $want" "$(tail -n 20 <<<"$OUT")"; fi
}

# expect_output PATTERN DESCRIPTION : grep -E on the last command's output.
expect_output() {
  if grep -qE -- "$1" <<<"$OUT"; then ok "$2"; else bad "$2: no match for /$1/" "$(tail -n 20 <<<"$OUT")"; fi
}

# baseline_config PROBLEM_FILE CASE RUN_NAME [VERIFIER_LINE...] : in the
# current directory, bench/level1/CASE.py (a copy of PROBLEM_FILE) and
# run.yaml, a short A/A run of it in performance mode into runs/RUN_NAME;
# each VERIFIER_LINE (e.g. "baselines: [eager, compile]") goes under verifier.
baseline_config() {
  local problem="$1" case="$2" run_name="$3" line
  shift 3
  mkdir -p bench/level1
  cp "$problem" "bench/level1/$case.py"
  {
    printf 'bench_dir: bench\nagent: {kind: reference}\nverifier:\n  mode: performance\n'
    for line in "$@"; do printf '  %s\n' "$line"; done
    printf '  timing: {budget_sec: 1, warmup: 1}\noutput: {root_dir: runs, run_name: %s}\n' "$run_name"
  } >run.yaml
}

# torch_python : prints the interpreter kgym finds when none is configured
# (python3 on PATH, else /usr/bin/python3: the first that imports torch).
torch_python() {
  local python
  for python in "$(command -v python3)" /usr/bin/python3; do
    [ -n "$python" ] && "$python" -c 'import torch' 2>/dev/null && { echo "$python"; return 0; }
  done
  return 1
}

# json_get FILE EXPR : prints EXPR, Python over the file's JSON as `r`
# (e.g. 'r["correctness"]["trials"]'); a list or object as JSON.
json_get() {
  /usr/bin/python3 -c 'import json, sys
r = json.load(open(sys.argv[1]))
v = eval(sys.argv[2])
print(json.dumps(v) if isinstance(v, (list, dict)) else v)' "$1" "$2"
}
# json_true FILE EXPR [SHOW] : succeeds when EXPR holds (e.g. as a `check`
# command). Says why when it does not: the expression, or what it raised,
# and the value of the expression SHOW when one is given.
json_true() { /usr/bin/python3 -c 'import json, sys
r = json.load(open(sys.argv[1]))
try:
    held = eval(sys.argv[2])
except Exception as e:
    sys.exit(f"     {sys.argv[1]}: {type(e).__name__} {e} in {sys.argv[2]}")
if held:
    sys.exit(0)
shown = ""
if len(sys.argv) > 3:
    try:
        shown = f"\n     {sys.argv[3]} = {json.dumps(eval(sys.argv[3]))}"
    except Exception as e:
        shown = f"\n     {sys.argv[3]}: {type(e).__name__} {e}"
sys.exit(f"     {sys.argv[1]}: not {sys.argv[2]}{shown}")' "$@"; }

# json_lines_any FILE EXPR : succeeds when EXPR holds for some line of a JSON-lines file (as `r`).
json_lines_any() { /usr/bin/python3 -c 'import json, sys
sys.exit(0 if any(eval(sys.argv[2], {"r": json.loads(l)}) for l in open(sys.argv[1]) if l.strip()) else 1)' "$1" "$2"; }

# json_edit FILE STATEMENTS : runs Python STATEMENTS on the file's JSON as `r`
# and writes it back (e.g. 'r["verdict"] = "fail_correctness"').
json_edit() { /usr/bin/python3 -c 'import json, sys
r = json.load(open(sys.argv[1]))
exec(sys.argv[2])
json.dump(r, open(sys.argv[1], "w"), indent=2)' "$1" "$2"; }

# json_parses FILE... : every file that exists parses as JSON, and every
# line of each *.jsonl one does, the last ending with a newline; says
# which does not.
json_parses() { /usr/bin/python3 -c 'import json, sys
for name in sys.argv[1:]:
    try:
        data = open(name, "rb").read()
    except FileNotFoundError:
        continue
    try:
        if name.endswith(".jsonl"):
            if data and not data.endswith(b"\n"):
                sys.exit(f"     {name}: does not end with a whole line")
            for n, line in enumerate(data.split(b"\n")[:-1], 1):
                json.loads(line)
        else:
            json.loads(data)
    except ValueError as e:
        sys.exit(f"     {name}: {e}")' "$@"; }

# doubled_relu DEST : the sample ReLU solution made wrong — positive values
# doubled, under a module name of its own — for the tests of what kgym says
# about a wrong kernel (samples, feedback rounds, kgym-check, the CLIs).
doubled_relu() {
  sed -e 's/0.0f : in\[i\]/0.0f : 2.0f * in[i]/' -e 's/kgym_sample_relu/kgym_sample_relu_doubled/' \
    "$SRC/data/sample/solutions/level1/1_ReLU/model_new.py" >"$1"
}

# verdict_of RESULT_JSON : prints the verdict field.
verdict_of() { sed -nE 's/^  "verdict": "([a-z_]+)".*/\1/p' "$1"; }

expect_verdict() {
  local file="$1" want="$2" got
  got="$(verdict_of "$file" 2>/dev/null)"
  if [ "$got" = "$want" ]; then ok "$(basename "$(dirname "$file")") -> $want"
  else bad "$(basename "$(dirname "$file")"): verdict '$got', want '$want'" "$(grep -E '"reason"' "$file" 2>/dev/null)"; fi
}

finish() {
  echo "$PASSED passed, $FAILED failed"
  [ "$FAILED" -eq 0 ]
}

# no_process PATTERN : true when no process's command line matches.
no_process() { ! pgrep -f -- "$1" >/dev/null; }

# npm_cli DIR PACKAGE VERSION BIN : prints the path of the CLI BIN of npm's
# PACKAGE@VERSION, installed once into DIR of the test cache (next to the
# kgym binary, or $KGYM_TEST_CACHE; never globally). When npm, the registry
# or the CLI does not work here it says why on stderr and fails: the caller
# then skips (`CLI="$(npm_cli ...)" || exit 77`).
npm_cli() {
  local dir="$1" package="$2" version="$3" bin="$4"
  local cache="${KGYM_TEST_CACHE:-$(cd "$(dirname "$KGYM")" && pwd)/test-cache}/$dir"
  local cli="$cache/node_modules/.bin/$bin"
  if ! command -v npm >/dev/null 2>&1; then
    echo "SKIP: npm is not installed (apt-get install npm), so the real $package cannot be installed" >&2
    return 1
  fi
  if ! "$cli" --version 2>/dev/null | grep -qF "$version"; then
    mkdir -p "$cache"
    if ! timeout 600 npm install --prefix "$cache" --no-audit --no-fund --loglevel=error "$package@$version" \
      >"$TMP/npm.log" 2>&1; then
      echo "SKIP: npm install $package@$version failed (registry unreachable?): $(grep -v 'complete log' "$TMP/npm.log" | tail -n 1)" >&2
      return 1
    fi
  fi
  if [ -z "$("$cli" --version 2>/dev/null | head -n 1)" ]; then
    echo "SKIP: the installed $package $version does not run on this machine" >&2
    return 1
  fi
  echo "$cli"
}

# scripted [SECONDS] : from here on $KGYM is kgym-scripted (tests/scripted/):
# kgym whose `kgym verify` and `kgym build` follow a script instead of
# starting workers, for a test whose subject is not verification (the loop,
# resume, kills, a full disk, Slurm, reports, history). The script,
# $TMP/verdicts.json, gives the sample set's stored solutions the verdicts
# data/sample/solutions/README.md promises (2_LeakyReLU's fail_cheat comes
# from kgym's own static gate), each verification taking SECONDS (default
# 0.5); a test may add rules in front of them with script_rule.
scripted() {
  KGYM="${KGYM_SCRIPTED:-$(dirname "$KGYM")/kgym-scripted}"
  [ -x "$KGYM" ] || { echo "no kgym-scripted at $KGYM (ninja builds it beside kgym)"; exit 1; }
  SCRIPT_SECONDS="${1:-0.5}"
  SCRIPT_RULES=()
  export KGYM_SCRIPTED_VERDICTS="$TMP/verdicts.json"
  write_script
}
# script_rule JSON : one more rule, matched before the sample set's.
script_rule() { SCRIPT_RULES+=("$1"); write_script; }
write_script() {
  local rules=("${SCRIPT_RULES[@]}" \
    '{"case": "3_SumReduction", "verdict": "fail_correctness", "seconds": '"$SCRIPT_SECONDS"', "reason": "scripted: trial 1 output 0 differs"}' \
    '{"case": "8_ScaleShift", "verdict": "crash", "seconds": '"$SCRIPT_SECONDS"', "reason": "scripted: the candidate worker died of SIGSEGV"}' \
    '{"case": "9_MSELoss", "verdict": "timeout", "seconds": '"$SCRIPT_SECONDS"', "reason": "scripted: forward did not return"}' \
    "{\"seconds\": $SCRIPT_SECONDS}")
  local IFS=,
  printf '{"rules": [%s]}\n' "${rules[*]}" >"$KGYM_SCRIPTED_VERDICTS"
}

# copying_run YAML CASES CONCURRENCY ROOT_DIR RUN_NAME [PAUSE]: writes
# $TMP/agent.sh, a scripted command agent that (after PAUSE seconds) copies
# its case's stored sample solution, and YAML, a correctness-only run of it
# over the sample set: the runs the kill, resume and disk-full tests stop
# and restart.
copying_run() {
  local yaml="$1" cases="$2" concurrency="$3" root="$4" name="$5" pause="${6:-0}"
  local samples="$SRC/data/sample"
  cat >"$TMP/agent.sh" <<SH
#!/usr/bin/env bash
set -eu
echo "agent ran for \$1"
sleep $pause
cp "\$SOLUTIONS/level1/\${1#level1/}/model_new.py" model_new.py
SH
  chmod +x "$TMP/agent.sh"
  cat >"$yaml" <<YAML
bench_dir: $samples
cases: "$cases"
concurrency: $concurrency
output: {root_dir: $root, run_name: $name}
agent:
  kind: command
  argv: ["$TMP/agent.sh", "{case_id}"]
  env: {SOLUTIONS: "$samples/solutions"}
verifier: {mode: correctness}
sandbox: {agent_read_only: ["$samples/solutions"]}
YAML
}
