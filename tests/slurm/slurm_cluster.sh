#!/usr/bin/env bash
# A throw-away single-node SLURM on this machine (Debian 12: slurm-wlm, munge), as root.
#   tests/slurm/slurm_cluster.sh start DIR   # munged, slurmctld, slurmd; config, state, logs in DIR
#   tests/slurm/slurm_cluster.sh stop DIR    # stops them (by their pid files) and removes DIR
#   tests/slurm/slurm_cluster.sh check       # exit 0 when the SLURM and munge programs are installed
# start exits 77 (CTest's skip) when they are not (jobs/setup.sh installs them), 1 when it fails.
# Then: export SLURM_CONF=DIR/slurm.conf and use sbatch, srun, squeue, scancel, scontrol.
# The node is this machine's cores (at least 2 declared), one partition "debug" (the default),
# MpiDefault=pmix (Open MPI under srun). Where the machine has NVIDIA GPUs (/dev/nvidiaN) the
# node gets GRES gpu:N (so --gpus-per-task works); without, none, and sbatch refuses GPU requests.
# The ports are free ones picked at start, so several such clusters can run side by side.
set -uo pipefail
cmd=${1:-}
dir=${2:-}
sbin=/usr/sbin

have_programs() {
  local p
  for p in munged mungekey slurmctld slurmd; do [ -x "$sbin/$p" ] || return 1; done
  for p in sbatch srun sinfo scontrol scancel; do command -v "$p" >/dev/null || return 1; done
  [ -e /usr/lib/x86_64-linux-gnu/slurm-wlm/mpi_pmix.so ] || ls /usr/lib/*/slurm-wlm/mpi_pmix.so >/dev/null 2>&1
}

used_ports() {  # every local TCP port in use (listening or not), from /proc/net/tcp{,6}
  awk 'NR > 1 {split($2, a, ":"); print strtonum("0x" a[2])}' /proc/net/tcp /proc/net/tcp6 2>/dev/null | sort -un
}

pick_ports() {  # sets ctld_port, slurmd_port, srun_lo: a free block of 210 ports below the ephemeral range
  local lo hi used p
  read -r lo _ </proc/sys/net/ipv4/ip_local_port_range 2>/dev/null || lo=32768
  hi=$((lo - 300))
  ((hi > 10300)) || hi=30000
  used=" $(used_ports | tr '\n' ' ') "
  for _ in $(seq 100); do
    p=$((10000 + RANDOM % (hi - 10000)))
    local ok=1 q
    for q in $(seq "$p" $((p + 209))); do [[ "$used" == *" $q "* ]] && { ok=0; break; }; done
    ((ok)) && { ctld_port=$p slurmd_port=$((p + 1)) srun_lo=$((p + 10)); return 0; }
  done
  return 1
}

stop_pid() {  # pidfile: TERM, wait up to 10 s, then KILL
  local f=$1 pid
  [ -s "$f" ] || return 0
  pid=$(cat "$f")
  kill -TERM "$pid" 2>/dev/null || return 0
  for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || return 0; sleep 0.1; done
  kill -KILL "$pid" 2>/dev/null
  return 0
}

die() {
  echo "slurm_cluster: $*" >&2
  for f in "$dir"/log/slurmd.log "$dir"/log/slurmctld.log "$dir"/log/munged.log; do
    [ -s "$f" ] && { echo "--- last lines of $f" >&2; tail -n 15 "$f" >&2; }
  done
  exit 1
}

case "$cmd" in
check)
  have_programs || { echo "slurm_cluster: SLURM is not installed (apt-get install slurm-wlm munge libpmix-dev)" >&2; exit 1; }
  exit 0 ;;
start)
  [ -n "$dir" ] || { echo "usage: $0 start|stop DIR" >&2; exit 2; }
  have_programs || { echo "slurm_cluster: SLURM is not installed (apt-get install slurm-wlm munge libpmix-dev)" >&2; exit 77; }
  [ "$(id -u)" -eq 0 ] || { echo "slurm_cluster: run as root (slurmd runs jobs as their users)" >&2; exit 1; }
  "$0" stop "$dir" 2>/dev/null   # a cluster left over from an interrupted run
  [ ! -e "$dir" ] || [ -z "$(ls -A "$dir")" ] || die "$dir exists and is not empty"
  mkdir -p "$dir" && chmod 0755 "$dir" && touch "$dir/.tessera_slurm_cluster" || exit 1
  dir=$(cd "$dir" && pwd)
  host=$(hostname -s)
  mkdir -p "$dir"/{munge,log,state,spool/"$host",tmp} && chmod 0711 "$dir/munge" || exit 1
  # munge: its own key and socket, nothing of the system's /etc/munge or /run/munge.
  "$sbin/mungekey" --create --keyfile="$dir/munge/munge.key" 2>/dev/null ||
    { dd if=/dev/urandom of="$dir/munge/munge.key" bs=1024 count=1 2>/dev/null && chmod 0600 "$dir/munge/munge.key"; }
  "$sbin/munged" --force --socket="$dir/munge/munge.socket" --key-file="$dir/munge/munge.key" \
    --pid-file="$dir/munge/munged.pid" --seed-file="$dir/munge/munged.seed" \
    --log-file="$dir/log/munged.log" || die "munged did not start"
  cpus=$(nproc)
  ((cpus >= 2)) || cpus=2
  mem=$(awk '/MemTotal/ {print int($2 / 1024 / 2)}' /proc/meminfo)
  # GPUs: the NVIDIA device files of this machine (a container may hold /dev/nvidia3 alone).
  gres="" gpus=0
  : >"$dir/gres.conf"
  for f in $(ls /dev/nvidia[0-9]* 2>/dev/null | sort -V); do
    [[ "$f" =~ ^/dev/nvidia[0-9]+$ ]] && [ -c "$f" ] || continue
    echo "Name=gpu File=$f" >>"$dir/gres.conf"
    gpus=$((gpus + 1))
  done
  ((gpus == 0)) || gres="Gres=gpu:$gpus"
  echo "cpus=$cpus gpus=$gpus" >"$dir/node"
  export SLURM_CONF="$dir/slurm.conf"
  # Ports: a free block, picked again (up to 5 times) when another program took one meanwhile.
  up=0
  for attempt in 1 2 3 4 5; do
    pick_ports || die "no free ports"
    cat >"$dir/slurm.conf" <<EOF
# Written by tessera's tests/slurm/slurm_cluster.sh: a single-node SLURM for tests.
ClusterName=tessera-test
SlurmctldHost=$host(127.0.0.1)
SlurmctldPort=$ctld_port
SlurmdPort=$slurmd_port
SrunPortRange=$srun_lo-$((srun_lo + 200))
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$dir/munge/munge.socket
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool/%n
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd.pid
SlurmctldLogFile=$dir/log/slurmctld.log
SlurmdLogFile=$dir/log/slurmd.log
SlurmctldDebug=info
SlurmdDebug=info
TmpFS=$dir/tmp
ProctrackType=proctrack/linuxproc
TaskPlugin=task/affinity
MpiDefault=pmix
SwitchType=switch/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SchedulerType=sched/backfill
JobCompType=jobcomp/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SlurmdParameters=config_overrides
ReturnToService=2
KillWait=10
MinJobAge=600
InactiveLimit=0
MailProg=/bin/true
$( ((gpus > 0)) && echo "GresTypes=gpu" )
NodeName=$host NodeAddr=127.0.0.1 CPUs=$cpus RealMemory=$mem $gres State=UNKNOWN
PartitionName=debug Nodes=$host Default=YES MaxTime=INFINITE State=UP OverSubscribe=NO
EOF
    "$sbin/slurmctld" -i -f "$SLURM_CONF" || die "slurmctld did not start"
    for _ in $(seq 100); do   # up to 10 s for it to answer
      timeout 5 scontrol ping 2>/dev/null | grep -q UP && { up=1; break; }
      [ -s "$dir/slurmctld.pid" ] && ! kill -0 "$(cat "$dir/slurmctld.pid")" 2>/dev/null && break
      sleep 0.1
    done
    ((up)) && break
    echo "slurm_cluster: slurmctld did not come up on port $ctld_port (attempt $attempt)" >&2
    stop_pid "$dir/slurmctld.pid"
  done
  ((up)) || die "slurmctld did not come up"
  "$sbin/slurmd" -f "$SLURM_CONF" || die "slurmd did not start"
  for _ in $(seq 300); do   # up to 30 s for the node to register and become idle
    state=$(sinfo -h -N -o %T 2>/dev/null | head -n 1)
    [ "$state" = idle ] && { echo "slurm_cluster: up in $dir ($host, $cpus CPUs, $gpus GPUs); export SLURM_CONF=$SLURM_CONF"; exit 0; }
    sleep 0.1
  done
  die "the node did not become idle (state '${state:-none}')" ;;
stop)
  [ -n "$dir" ] || { echo "usage: $0 start|stop DIR" >&2; exit 2; }
  [ -e "$dir/.tessera_slurm_cluster" ] || exit 0   # not (or no longer) one of ours
  if [ -s "$dir/slurmctld.pid" ] && kill -0 "$(cat "$dir/slurmctld.pid")" 2>/dev/null; then
    export SLURM_CONF="$dir/slurm.conf"   # cancel what still runs, wait up to 20 s for it to end
    timeout 10 scancel --quiet --user=root 2>/dev/null
    for _ in $(seq 200); do [ -z "$(timeout 5 squeue -h -o %i 2>/dev/null)" ] && break; sleep 0.1; done
  fi
  stop_pid "$dir/slurmd.pid"
  stop_pid "$dir/slurmctld.pid"
  stop_pid "$dir/munge/munged.pid"
  rm -rf "$dir"
  exit 0 ;;
*)
  echo "usage: $0 start|stop DIR | check" >&2
  exit 2 ;;
esac
