#!/usr/bin/env bash
# Smoke test of tests/slurm/cluster.sh: a real cluster in a temporary
# directory runs a throttled job array, cancels one task of another, shows
# what a task sees. It prints the raw output of squeue, scontrol and sacct
# between "---- NAME" lines so their formats can be read off, then "PASS".
# Exits 77 (skip) when Slurm or munge is not installed.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
dir="$(mktemp -d /tmp/kgym-slurm.XXXXXX)"
trap '"$here/cluster.sh" stop "$dir"; rm -rf "$dir"' EXIT

fail() { printf 'FAIL: %s\n' "$*" >&2; exit 1; }
ms() { echo $(($(date +%s%N) / 1000000)); }
show() { printf -- '---- %s\n%s\n' "$1" "$2"; }

# wait_done JOBID SECONDS: until squeue lists no pending or running task of
# the job (finished jobs are not listed; it still knows them for MinJobAge).
wait_done() {
  local deadline=$((SECONDS + $2))
  while [ -n "$(squeue -h -j "$1" -o %i)" ]; do
    [ "$SECONDS" -lt "$deadline" ] || fail "job $1 still queued after $2 s: $(squeue -j "$1")"
    sleep 0.1
  done
}

t0="$(ms)"
out="$("$here/cluster.sh" start "$dir")" || exit $?   # 77: skip
eval "$out"
echo "cluster started in $(($(ms) - t0)) ms: $out"

# 1. A four-task array, at most two at a time: every task writes its index.
t0="$(ms)"
q_fmt='%F|%K|%T|%N|%r|%j'   # array job id|task id|state|node|reason|name
job="$(sbatch --parsable -J smoke-a --array=0-3%2 -o "$dir/array-%A_%a.log" \
  --wrap "echo \$SLURM_ARRAY_TASK_ID > $dir/out.\$SLURM_ARRAY_TASK_ID; sleep 1")"
[[ "$job" =~ ^[0-9]+$ ]] || fail "sbatch --parsable printed '$job'"
show "squeue -h -j $job -o '%i %A %a %T %r' (just submitted)" "$(squeue -h -j "$job" -o '%i %A %a %T %r')"
show "squeue -h -r --name=smoke-a -o '$q_fmt' (just submitted)" "$(squeue -h -r --name=smoke-a -o "$q_fmt")"
wait_done "$job" 60
echo "array of 4 (%2, sleep 1 each) done in $(($(ms) - t0)) ms"
for i in 0 1 2 3; do
  [ "$(cat "$dir/out.$i" 2>/dev/null)" = "$i" ] || fail "task $i wrote '$(cat "$dir/out.$i" 2>&1)'"
done
show "scontrol -o show job $job (finished)" "$(scontrol -o show job "$job")"

# 2. A trivial one-task array, from sbatch to done.
t0="$(ms)"
job="$(sbatch --parsable --array=0 -o /dev/null --wrap true)"
wait_done "$job" 30
echo "trivial array task: sbatch to done in $(($(ms) - t0)) ms"

# 3. Cancel one task of a running array: the others keep running.
job="$(sbatch --parsable -J smoke-c --array=0-2 -o /dev/null --wrap 'sleep 30')"
deadline=$((SECONDS + 30))
until [ "$(squeue -h -j "$job" -t RUNNING -o %i | wc -l)" -eq 2 ]; do
  [ "$SECONDS" -lt "$deadline" ] || fail "two one-CPU tasks never ran side by side: $(squeue -j "$job")"
  sleep 0.1
done
show "squeue -h -r --name=smoke-c -o '$q_fmt' (two running on two cores)" "$(squeue -h -r --name=smoke-c -o "$q_fmt")"
scancel "${job}_1"
deadline=$((SECONDS + 30))
until scontrol -o show job "${job}_1" | grep -q 'JobState=CANCELLED'; do
  [ "$SECONDS" -lt "$deadline" ] || fail "task ${job}_1 not CANCELLED: $(scontrol -o show job "${job}_1")"
  sleep 0.1
done
show "scontrol -o show job ${job}_1 (cancelled)" "$(scontrol -o show job "${job}_1")"
show "squeue -h -r --name=smoke-c -o '$q_fmt' (after scancel ${job}_1)" "$(squeue -h -r --name=smoke-c -o "$q_fmt")"
show "scontrol -o show job $job (after scancel ${job}_1)" "$(scontrol -o show job "$job")"
set +e
sacct_out="$(sacct -n -P -X --jobs="$job" -o JobID,State,NodeList,JobName 2>&1)"
sacct_rc=$?
unknown_out="$(scontrol -o show job 999999 2>&1)"
unknown_rc=$?
set -e
show "sacct -n -P -X --jobs=$job -o JobID,State,NodeList,JobName (exit $sacct_rc)" "$sacct_out"
show "scontrol -o show job 999999 (exit $unknown_rc)" "$unknown_out"
[ "$sacct_rc" -ne 0 ] || fail "sacct succeeded although accounting is off"
scancel "$job"
wait_done "$job" 30

# 4. What a task sees, with one CPU asked for.
# shellcheck disable=SC2016  # expanded by the task, not here
job="$(sbatch --parsable --array=5 --cpus-per-task=1 -o "$dir/env.out" --wrap '
  for v in SLURM_JOB_ID SLURM_ARRAY_JOB_ID SLURM_ARRAY_TASK_ID SLURMD_NODENAME SLURM_CPUS_ON_NODE SLURM_CPUS_PER_TASK SLURM_CONF; do
    echo "$v=$(printenv $v || echo "<unset>")"
  done
  taskset -pc $$')"
wait_done "$job" 30
show "environment of task ${job}_5" "$(cat "$dir/env.out")"
grep -qx "SLURM_ARRAY_TASK_ID=5" "$dir/env.out" || fail "task did not see SLURM_ARRAY_TASK_ID=5"

t0="$(ms)"
"$here/cluster.sh" stop "$dir"
echo "cluster stopped in $(($(ms) - t0)) ms"
echo PASS
