#!/usr/bin/env bash
# A throwaway single-node Slurm cluster (munged + slurmctld + slurmd) kept
# entirely under one directory: config, munge key and socket, state, spool,
# pid and log files. No system file is read or written, so tests can start
# several side by side, as root, without systemd.
#   cluster.sh start DIR   start it, wait until the node is idle, then print
#                          `export SLURM_CONF=DIR/slurm.conf` (for eval)
#   cluster.sh stop DIR    cancel its jobs and stop every process it started
# start exits 77 (skip) when slurmctld, slurmd or munged is missing or when
# not run as root (slurmd must be root to start jobs).
set -euo pipefail

log() { printf 'cluster.sh: %s\n' "$*" >&2; }
die() { log "$*"; exit 1; }

# Every daemon is started with this variable in its environment and slurmd
# passes it on to the slurmstepd of each job, so stop finds them all, even
# when DIR (and its pid files) is already gone.
MARKER=KGYM_SLURM_CLUSTER

# pids_with_marker DIR: the processes started for the cluster in DIR.
pids_with_marker() {
  local want="$MARKER=$1" f pid
  for f in /proc/[0-9]*/environ; do
    pid="${f#/proc/}"; pid="${pid%/environ}"
    [ "$pid" = "$$" ] && continue
    grep -qzxF -- "$want" "$f" 2>/dev/null && echo "$pid"
  done
  return 0
}

# descendants PID...: the given processes and all their children (job
# processes under a slurmstepd do not carry the marker).
descendants() {
  local -A parent_of=()
  local stat pid rest
  for stat in /proc/[0-9]*/stat; do
    read -r pid rest 2>/dev/null <"$stat" || continue
    rest="${rest##*) }"                 # skip "(comm)", which may hold spaces
    parent_of[$pid]="${rest#* }"; parent_of[$pid]="${parent_of[$pid]%% *}"
  done
  local -a todo=("$@") found=()
  while [ "${#todo[@]}" -gt 0 ]; do
    local p="${todo[0]}"; todo=("${todo[@]:1}")
    found+=("$p")
    for pid in "${!parent_of[@]}"; do [ "${parent_of[$pid]}" = "$p" ] && todo+=("$pid"); done
  done
  printf '%s\n' "${found[@]}"
}

# running PID: the process exists and is not a zombie (this machine's init
# may take a while to reap the daemons it inherits).
running() {
  local stat
  read -r stat 2>/dev/null <"/proc/$1/stat" || return 1
  stat="${stat##*) }"
  [ "${stat%% *}" != Z ]
}

# stop_pids WAIT_S PID...: SIGTERM, then SIGKILL what is left after WAIT_S seconds.
stop_pids() {
  local wait_s="$1"; shift
  [ "$#" -eq 0 ] && return 0
  kill -TERM "$@" 2>/dev/null || true
  local deadline=$((SECONDS + wait_s)) pid alive
  while :; do
    alive=()
    for pid in "$@"; do running "$pid" && alive+=("$pid"); done
    [ "${#alive[@]}" -eq 0 ] && return 0
    [ "$SECONDS" -ge "$deadline" ] && break
    sleep 0.2
  done
  log "killing what ignored SIGTERM: ${alive[*]}"
  kill -KILL "${alive[@]}" 2>/dev/null || true
}

# pid_from DIR/NAME.pid: the pid it names if that process is ours, else nothing
# (a stale pid file may name a pid the system has since reused).
pid_from() {
  local pid
  pid="$(cat "$1" 2>/dev/null)" || return 0
  [[ "$pid" =~ ^[0-9]+$ ]] || return 0
  grep -qzxF -- "$MARKER=$2" "/proc/$pid/environ" 2>/dev/null && echo "$pid"
  return 0
}

stop() {
  local dir="$1"
  # Cancel the jobs first, while slurmctld is still there to do it: a
  # slurmstepd outlives slurmd by design.
  if [ -n "$(pid_from "$dir/slurmctld.pid" "$dir")" ] && [ -n "$(pid_from "$dir/slurmd.pid" "$dir")" ]; then
    local -a jobs
    mapfile -t jobs < <(SLURM_CONF="$dir/slurm.conf" timeout 10 squeue -h -o %A 2>/dev/null | sort -u)
    if [ "${#jobs[@]}" -gt 0 ]; then
      SLURM_CONF="$dir/slurm.conf" timeout 10 scancel "${jobs[@]}" 2>/dev/null || true
      local deadline=$((SECONDS + 15))
      while [ "$SECONDS" -lt "$deadline" ] &&
        [ -n "$(SLURM_CONF="$dir/slurm.conf" timeout 10 squeue -h -o %A 2>/dev/null)" ]; do sleep 0.5; done
    fi
  fi
  # All three at once, none needs another to shut down.
  local name pid daemons=()
  for name in slurmd slurmctld munged; do
    pid="$(pid_from "$dir/$name.pid" "$dir")"
    [ -n "$pid" ] && daemons+=("$pid")
  done
  stop_pids 10 "${daemons[@]}"
  # Whatever is left: a slurmstepd of a job that did not end, its job's processes.
  local -a pids
  mapfile -t pids < <(pids_with_marker "$dir")
  if [ "${#pids[@]}" -gt 0 ]; then
    mapfile -t pids < <(descendants "${pids[@]}")
    log "stopping leftover processes: ${pids[*]}"
    stop_pids 2 "${pids[@]}"
  fi
  rm -f "$dir"/{slurmd,slurmctld,munged}.pid
}

# free_port: a random port nothing listens on, below the usual ephemeral range
# (32768+) so no outgoing connection holds it. Random, so that two clusters
# or a stale one left running never collide; a tiny race remains.
free_port() {
  local port
  for _ in $(seq 200); do
    port=$((10000 + RANDOM % 22000))
    if ! timeout 2 bash -c "exec 3<>/dev/tcp/127.0.0.1/$port" 2>/dev/null; then
      echo "$port"; return
    fi
  done
  die "found no free port in 10000-31999"
}

show_logs() {
  local f
  for f in "$1"/log/*; do
    [ -s "$f" ] || continue
    log "---- $f (last 40 lines)"
    tail -n 40 "$f" >&2
  done
}

start() {
  local dir="$1" cmd
  for cmd in slurmctld slurmd munged; do
    command -v "$cmd" >/dev/null 2>&1 || PATH="$PATH:/usr/sbin:/sbin" command -v "$cmd" >/dev/null 2>&1 ||
      { log "SKIP: $cmd is not installed (Debian: apt-get install slurmctld slurmd munge)"; exit 77; }
  done
  export PATH="$PATH:/usr/sbin:/sbin"
  [ "$(id -u)" -eq 0 ] || { log "SKIP: needs root (slurmd starts jobs as their user)"; exit 77; }
  mkdir -p "$dir"
  dir="$(cd "$dir" && pwd -P)"          # absolute: it is written into slurm.conf
  # A unix socket path holds at most 107 bytes.
  [ "${#dir}" -le 80 ] || die "DIR is too long for munge's socket path (${#dir} > 80 bytes): $dir"
  # Not writable by others (munged checks), reachable by all (clients need the socket).
  chmod 0711 "$dir"

  # A cluster already running in DIR (a test that died without stopping it):
  # stop it, then start from empty state.
  stop "$dir"
  rm -rf "$dir"/{state,spool,log} "$dir"/munge.* "$dir/slurm.conf"
  mkdir -p "$dir"/{state,spool,log}
  # From here on, a failed start leaves nothing running.
  trap 'show_logs "$dir"; stop "$dir"' EXIT

  # munged, on its own key and socket. --force: it refuses to run as root otherwise.
  local sock="$dir/munge.socket"
  dd if=/dev/urandom of="$dir/munge.key" bs=1024 count=1 status=none
  chmod 0400 "$dir/munge.key"
  env "$MARKER=$dir" munged --force --socket="$sock" --key-file="$dir/munge.key" --pid-file="$dir/munged.pid" \
    --log-file="$dir/log/munged.log" --seed-file="$dir/munge.seed" </dev/null >>"$dir/log/munged.out" 2>&1 ||
    die "munged did not start"
  munge -n -S "$sock" | unmunge -S "$sock" >/dev/null || die "munged does not answer on $sock"

  # The node as slurmd sees it (CPUs, sockets, cores, threads, RealMemory), so
  # the node never drains for "Low RealMemory" or a CPU count mismatch.
  local host hw ctld_port slurmd_port
  host="$(hostname -s)"
  hw="$(slurmd -C | head -n 1 | sed 's/^NodeName=[^ ]* //')"
  ctld_port="$(free_port)"
  slurmd_port="$(free_port)"
  while [ "$slurmd_port" = "$ctld_port" ]; do slurmd_port="$(free_port)"; done

  cat >"$dir/slurm.conf" <<EOF
# Written by tests/slurm/cluster.sh: a single-node cluster kept under $dir.
ClusterName=kgym
# 127.0.0.1: works even where the host name does not resolve.
SlurmctldHost=$host(127.0.0.1)
SlurmctldPort=$ctld_port
SlurmdPort=$slurmd_port
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$sock
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd.pid
SlurmctldLogFile=$dir/log/slurmctld.log
SlurmdLogFile=$dir/log/slurmd.log
# No cgroups (a container may not let us use them): track job processes
# through /proc, bind no CPUs.
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
# One task per core: several one-CPU jobs run side by side.
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
# No accounting: there is no slurmdbd, so sacct fails.
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
JobCompType=jobcomp/none
MpiDefault=none
SwitchType=switch/none
MailProg=/bin/true
# Finished jobs stay visible to scontrol/squeue for 10 minutes.
MinJobAge=600
# A node that was DOWN comes back as soon as slurmd registers.
ReturnToService=2
# Cancelled jobs get SIGKILL 5 s after SIGTERM (default 30 s).
KillWait=5
# Start a submitted batch job at once (default: within 3 s, batching submissions).
SchedulerParameters=batch_sched_delay=0
NodeName=$host NodeAddr=127.0.0.1 $hw State=UNKNOWN
PartitionName=debug Nodes=$host Default=YES MaxTime=INFINITE State=UP
EOF
  export SLURM_CONF="$dir/slurm.conf"

  # Both daemonize; their startup errors go to the .out files shown on failure.
  env "$MARKER=$dir" slurmctld -f "$SLURM_CONF" </dev/null >>"$dir/log/slurmctld.out" 2>&1 || die "slurmctld did not start"
  env "$MARKER=$dir" slurmd -f "$SLURM_CONF" </dev/null >>"$dir/log/slurmd.out" 2>&1 || die "slurmd did not start"

  local deadline=$((SECONDS + 60)) state="" name
  while :; do
    state="$(timeout 10 sinfo -h -N -n "$host" -o %T 2>/dev/null | head -n 1)" || state=""
    case "$state" in
      idle) break ;;
      down* | drain*)
        # e.g. "Node unexpectedly rebooted"; ReturnToService=2 usually avoids it.
        timeout 10 scontrol update nodename="$host" state=resume 2>/dev/null || true ;;
    esac
    [ "$SECONDS" -ge "$deadline" ] && die "node $host not idle after 60 s (state: '${state:-no answer}')"
    for name in munged slurmctld slurmd; do
      if [ -f "$dir/$name.pid" ] && [ -z "$(pid_from "$dir/$name.pid" "$dir")" ]; then die "$name exited"; fi
    done
    sleep 0.2
  done
  trap - EXIT
  echo "export SLURM_CONF=$dir/slurm.conf"
}

case "${1:-} $#" in
  "start 2") start "$2" ;;
  "stop 2") stop "$2" ;;
  *) sed -n '2,10p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2 ;;
esac
