# shellcheck shell=bash
# Sourced, not run: a private single-node Slurm cluster on localhost, started without systemd.
#
#   source testbench/slurm/local-slurm.sh
#   local_slurm_start DIR      # DIR: a new or empty scratch folder (short path: it holds a socket)
#   sbatch ...                 # any Slurm client command of this shell now talks to it
#   local_slurm_stop           # cancels the jobs, stops the daemons by PID, waits for them
#
# local_slurm_start generates a munge key in DIR, starts munged on its own socket in DIR, writes
# DIR/slurm.conf from slurm.conf.in (SlurmctldHost=localhost, one node with the CPUs and memory
# that `slurmd -C` detects, two free TCP ports, every state, spool, pid and log file in DIR) and
# starts slurmctld and slurmd in the foreground (-D) as background processes of this shell. It
# exports SLURM_CONF=DIR/slurm.conf and unsets every other SLURM_*, SBATCH_*, SQUEUE_*, ...
# variable that Slurm's commands read, so that nothing reads /etc/slurm or the system's munge
# socket, and returns once the node is idle. Daemon output is in DIR/log/. It sets
# LOCAL_SLURM_NODE and LOCAL_SLURM_PARTITION.
# Run it as root (SlurmUser and SlurmdUser are the current user).

LOCAL_SLURM_DIR=""
LOCAL_SLURM_NODE=""
LOCAL_SLURM_PARTITION="regress"
LOCAL_SLURM_PIDS=()   # munged slurmctld slurmd, in start order
_local_slurm_here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"

# local_slurm_missing: prints the programs this needs that are not installed (nothing if none).
local_slurm_missing() {
  local p
  for p in mungekey munged slurmctld slurmd sbatch squeue sinfo scancel scontrol python3; do
    command -v "$p" >/dev/null 2>&1 || PATH="$PATH:/usr/sbin:/sbin" command -v "$p" >/dev/null 2>&1 || echo "$p"
  done
}

_local_slurm_log_tail() {
  local f
  for f in "$LOCAL_SLURM_DIR"/munge/munged.log "$LOCAL_SLURM_DIR"/log/*; do
    [ -f "$f" ] || continue
    echo "---- $f (last 25 lines)" >&2
    tail -n 25 "$f" >&2
  done
}

_local_slurm_fail() {
  echo "local-slurm: $*" >&2
  _local_slurm_log_tail
  return 1
}

# _local_slurm_wait SECONDS DESCRIPTION COMMAND...: polls COMMAND every 0.1 s until it succeeds;
# fails after SECONDS, or as soon as one of the started daemons has exited.
_local_slurm_wait() {
  local limit=$1 what=$2 pid
  shift 2
  local deadline=$((SECONDS + limit))
  while ! "$@" >/dev/null 2>&1; do
    for pid in "${LOCAL_SLURM_PIDS[@]}"; do
      kill -0 "$pid" 2>/dev/null || { _local_slurm_fail "a daemon (pid $pid) exited while waiting for $what"; return 1; }
    done
    [ $SECONDS -lt $deadline ] || { _local_slurm_fail "timed out after ${limit}s waiting for $what"; return 1; }
    sleep 0.1
  done
}

_local_slurm_node_idle() {
  [ "$(sinfo -h -n "$LOCAL_SLURM_NODE" -o '%T' 2>/dev/null)" = "idle" ]
}

local_slurm_start() {
  local dir=$1
  PATH="$PATH:/usr/sbin:/sbin"
  mkdir -p "$dir" && LOCAL_SLURM_DIR="$(cd "$dir" && pwd)" || return 1
  dir="$LOCAL_SLURM_DIR"
  mkdir -p "$dir/munge" "$dir/state" "$dir/spool" "$dir/run" "$dir/log"
  chmod 755 "$dir/munge"   # munged wants its socket folder searchable by all
  : > "$dir/plugstack.conf"

  # munge: own key, socket, pid, seed and log file; -F keeps it a child of this shell.
  mungekey --create --keyfile="$dir/munge/munge.key" >/dev/null 2>&1 ||
    { _local_slurm_fail "mungekey could not create a key"; return 1; }
  munged -F --force --socket="$dir/munge/munge.socket" --key-file="$dir/munge/munge.key" \
    --pid-file="$dir/munge/munged.pid" --log-file="$dir/munge/munged.log" \
    --seed-file="$dir/munge/munged.seed" >"$dir/log/munged.out" 2>&1 &
  LOCAL_SLURM_PIDS+=($!)
  _local_slurm_wait 10 "munged's socket" \
    bash -c "munge -n -S '$dir/munge/munge.socket' | unmunge -S '$dir/munge/munge.socket'" || return 1

  # slurm.conf: the node as slurmd detects it, on two TCP ports that are free now.
  local node_line ports ctld_port slurmd_port
  LOCAL_SLURM_NODE="$(hostname -s)"
  node_line="$(slurmd -C 2>/dev/null | head -n 1)"
  [[ "$node_line" == NodeName=* ]] || { _local_slurm_fail "slurmd -C printed no node description"; return 1; }
  node_line="NodeName=$LOCAL_SLURM_NODE ${node_line#NodeName=* }"
  ports="$(python3 -c 'import socket
s = [socket.socket() for _ in range(2)]
for x in s: x.bind(("127.0.0.1", 0))
print(" ".join(str(x.getsockname()[1]) for x in s))')" || { _local_slurm_fail "no free TCP ports"; return 1; }
  read -r ctld_port slurmd_port <<< "$ports"
  sed -e "s|@DIR@|$dir|g" -e "s|@USER@|$(id -un)|g" -e "s|@CTLD_PORT@|$ctld_port|g" \
      -e "s|@SLURMD_PORT@|$slurmd_port|g" -e "s|@NODE_LINE@|$node_line|g" \
      -e "s|@PARTITION@|$LOCAL_SLURM_PARTITION|g" \
      "$_local_slurm_here/slurm.conf.in" > "$dir/slurm.conf"

  # This shell's Slurm clients, and the daemons, read only this configuration.
  local v
  for v in $(compgen -e); do
    case "$v" in SLURM_*|SBATCH_*|SALLOC_*|SRUN_*|SQUEUE_*|SINFO_*|SCANCEL_*|SACCT_*) unset "$v" ;; esac
  done
  export SLURM_CONF="$dir/slurm.conf"

  slurmctld -D -c -f "$SLURM_CONF" >"$dir/log/slurmctld.out" 2>&1 &
  LOCAL_SLURM_PIDS+=($!)
  _local_slurm_wait 20 "slurmctld to answer" scontrol ping || return 1
  slurmd -D -f "$SLURM_CONF" -N "$LOCAL_SLURM_NODE" >"$dir/log/slurmd.out" 2>&1 &
  LOCAL_SLURM_PIDS+=($!)
  _local_slurm_wait 30 "node $LOCAL_SLURM_NODE to be idle" _local_slurm_node_idle || return 1
}

# local_slurm_stop: cancels every job of the cluster, waits (10 s at most) for the queue to
# empty, then stops slurmd, slurmctld and munged by their PIDs: SIGTERM, up to 10 s, SIGKILL.
# Safe to call more than once, and after a failed or partial start.
local_slurm_stop() {
  [ -n "$LOCAL_SLURM_DIR" ] || return 0
  local pid i deadline
  if [ ${#LOCAL_SLURM_PIDS[@]} -ge 2 ] && kill -0 "${LOCAL_SLURM_PIDS[1]}" 2>/dev/null; then
    scancel --full --user="$(id -un)" >/dev/null 2>&1 || true
    deadline=$((SECONDS + 10))
    while [ -n "$(squeue -h -o %i 2>/dev/null)" ] && [ $SECONDS -lt $deadline ]; do sleep 0.2; done
  fi
  for ((i = ${#LOCAL_SLURM_PIDS[@]} - 1; i >= 0; i--)); do
    pid=${LOCAL_SLURM_PIDS[i]}
    kill -TERM "$pid" 2>/dev/null || { wait "$pid" 2>/dev/null; continue; }
    deadline=$((SECONDS + 10))
    while kill -0 "$pid" 2>/dev/null && [ $SECONDS -lt $deadline ]; do sleep 0.1; done
    kill -0 "$pid" 2>/dev/null && { echo "local-slurm: pid $pid ignored SIGTERM; killing it" >&2; kill -KILL "$pid" 2>/dev/null; }
    wait "$pid" 2>/dev/null || true
  done
  LOCAL_SLURM_PIDS=()
  LOCAL_SLURM_DIR=""
}
