#!/usr/bin/env bash
# labels: e2e sanitize
# A gated workflow: the harness checks each stage itself and re-prompts a
# stage with its failed checks. The scripted agent writes a plan with "TBD"
# first and fixes it only when the re-prompt lists that check; for
# 4_Softmax it never does, so that case fails after max_attempts.
source "$(dirname "$0")/lib.sh"

S="$SRC/data/sample"
mkdir -p "$TMP/prompts"
printf 'STAGE=plan for {case_id}: write PLAN.md\n' >"$TMP/prompts/plan.md"
printf 'STAGE=develop for {case_id}: write model_new.py\n' >"$TMP/prompts/develop.md"
cat >"$TMP/agent.sh" <<'SH'
#!/usr/bin/env bash
set -eu
prompt="$1"
echo "run with $(basename "$prompt")"
case "$(head -n 1 "$prompt")" in
  STAGE=plan*)
    if grep -q "Checks that failed" "$prompt" && grep -q "contains 'TBD'" "$prompt" && [ "$KGYM_CASE_ID" != level1/4_Softmax ]; then
      printf '# Plan\n\n## Goal\nrelu\n\n## Approach\nvectorized loop\n' >PLAN.md
    else
      printf '# Plan\n\n## Goal\nrelu\n\n## Approach\nTBD\n' >PLAN.md
    fi ;;
  STAGE=develop*) cp "$SOLUTIONS/level1/1_ReLU/model_new.py" model_new.py ;;
esac
SH
chmod +x "$TMP/agent.sh"
cat >"$TMP/wf.yaml" <<YAML
bench_dir: $S
cases: "1,4"
output: {root_dir: $TMP/runs, run_name: wf}
sandbox: {agent_read_only: ["$S/solutions"]}  # the stored answers this scripted agent copies
agent:
  kind: command
  argv: ["$TMP/agent.sh", "{prompt_file}"]
  env: {SOLUTIONS: "$S/solutions"}
  artifacts: [model_new.py, PLAN.md]
workflow:
  max_attempts: 2
  stages:
    - name: plan
      prompt: prompts/plan.md
      artifacts: [PLAN.md]
      gates:
        - {kind: headings, file: PLAN.md, headings: [Goal, Approach]}
        - {kind: forbidden_words, file: PLAN.md, words: [TBD, 待定]}
    - name: develop
      prompt: prompts/develop.md
      gates:
        - {kind: python_symbols, file: model_new.py, symbols: [ModelNew]}
        - {kind: static_check, file: model_new.py}
        - {kind: command, argv: [sh, -c, 'grep -q load_inline model_new.py && echo KERNEL_FOUND'], marker: KERNEL_FOUND}
verifier: {mode: correctness}
YAML
RUN="$TMP/runs/wf"
expect_exit 1 "a run with a 2-stage workflow" "$KGYM" run --config "$TMP/wf.yaml"
C="$RUN/cases/level1/1_ReLU"
expect_verdict "$C/result.json" pass
check "the agent ran plan twice, then develop" \
  test "$(grep '^run with' "$C/agent.log" | tr '\n' ' ')" = "run with plan.1.md run with plan.2.md run with develop.1.md "
check "the re-prompt names the failed check" grep -q "forbidden_words PLAN.md: PLAN.md contains 'TBD' (line 7)" "$C/work/.kgym/plan.2.md"
check "the first prompt is the template, filled in" grep -qx "STAGE=plan for level1/1_ReLU: write PLAN.md" "$C/work/.kgym/plan.1.md"
check "result.json records both stages, plan's two attempts" json_true "$C/result.json" \
  '[s["name"] for s in r["generation"]["stages"]] == ["plan", "develop"] and [a["attempt"] for a in r["generation"]["stages"][0]["attempts"]] == [1, 2]'
check "plan's first attempt failed forbidden_words alone" json_true "$C/result.json" \
  '{x["gate"]: x["ok"] for x in r["generation"]["stages"][0]["attempts"][0]["gates"]} == {"non_empty PLAN.md": True, "headings PLAN.md": True, "forbidden_words PLAN.md": False}'
check "develop passed every gate; the outcome and the prompt's hash" json_true "$C/result.json" \
  'all(x["ok"] for x in r["generation"]["stages"][1]["attempts"][0]["gates"]) and r["generation"]["stages"][1]["passed"] and r["generation"]["outcome"] == "ok" and len(r["generation"]["prompt_sha256"]) == 64'
F="$RUN/cases/level1/4_Softmax/result.json"
expect_verdict "$F" generation_failed
check "the failed gate is the outcome" grep -q '"outcome": "gate_failed"' "$F"
check "the reason names stage, attempts and check" \
  grep -q "stage 'plan' failed its checks after 2 attempt(s): forbidden_words PLAN.md: PLAN.md contains 'TBD'" "$F"
check "the artifacts of the plan stage were copied out too" test -s "$C/candidate/PLAN.md"
check "state.json shows the stage and attempt" grep -q '"stage": "develop"' "$RUN/state.json"
check "state.json keeps the failed checks" grep -q "PLAN.md contains 'TBD'" "$RUN/state.json"
check "events.jsonl has the gate results" grep -q '"gates"' "$RUN/events.jsonl"
finish
