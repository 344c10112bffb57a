#!/usr/bin/env bash
# A real SLURM test: a one-node cluster on this machine (munge, slurmctld, slurmd, one
# GPU-less partition), the workflow's CPU stages on shipped measurements submitted
# through `--workflow-profile profiles/slurm` (snakemake-executor-plugin-slurm), and the
# outputs compared with a local run of the same config.
#
#   sudo-less root:  bash tests/cluster/slurm_test.sh        (Debian/Ubuntu; installs
#   slurm-wlm and munge with apt-get when missing, the plugin with pip: ".[slurm]")
#
# Idempotent and self-cleaning: it stops the daemons it started (by their pid files)
# and leaves nothing but its work folder ($GEMMPERF_SLURM_DIR, default
# /tmp/gemmperf-slurm, emptied at each start). Runs in a few minutes.
set -euo pipefail
REPO=$(cd "$(dirname "$0")/../.." && pwd)
D=${GEMMPERF_SLURM_DIR:-/tmp/gemmperf-slurm}
PY=${PYTHON:-python3}
HOST=$(hostname -s)
log() { echo "slurm_test: $*" >&2; }
# Job steps (srun inside an sbatch job) read the default configuration path, not
# $SLURM_CONF: the test's configuration is also put there, and removed at the end.
ETC=/etc/slurm/slurm.conf
MARK="written by gemmperf tests/cluster/slurm_test.sh"

[ "$(id -u)" = 0 ] || { log "needs root (it starts munged, slurmctld and slurmd)"; exit 1; }
if [ -e "$ETC" ] && ! grep -qs "$MARK" "$ETC"; then
  log "$ETC exists and is not this test's: a real SLURM installation? Not touching it."
  exit 1
fi

# ---- install (only what is missing)
if ! command -v slurmctld >/dev/null || ! command -v munged >/dev/null; then
  log "installing slurm-wlm and munge"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq slurm-wlm munge >/dev/null
fi
if ! "$PY" -c "import snakemake_executor_plugin_slurm" 2>/dev/null; then
  log "installing the SLURM executor plugin"
  "$PY" -m pip install -q -e "$REPO[slurm]"
fi

# ---- daemons: stop what a previous run left, start fresh ones
stop_daemons() {
  for pidfile in "$D/slurmd.pid" "$D/slurmctld.pid" "$D/munged.pid"; do
    if [ -s "$pidfile" ]; then
      pid=$(cat "$pidfile")
      kill "$pid" 2>/dev/null || true
      for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
      kill -9 "$pid" 2>/dev/null || true
      rm -f "$pidfile"
    fi
  done
  if grep -qs "$MARK" "$ETC"; then rm -f "$ETC"; fi
}
[ -d "$D" ] && stop_daemons
rm -rf "$D"
mkdir -p "$D"/{state,spool,munge,work}
trap 'status=$?; stop_daemons; exit $status' EXIT

# munge: its own socket, key and pid under $D (the system's munged, if any, is left alone)
cp /etc/munge/munge.key "$D/munge/munge.key" 2>/dev/null || {
  dd if=/dev/urandom of="$D/munge/munge.key" bs=1 count=1024 2>/dev/null
}
chmod 700 "$D/munge"
chmod 400 "$D/munge/munge.key"
SOCKET=$D/munge/munge.socket
munged --force --key-file="$D/munge/munge.key" --socket="$SOCKET" \
  --pid-file="$D/munged.pid" --log-file="$D/munge/munged.log" --seed-file="$D/munge/seed"
for _ in $(seq 50); do [ -S "$SOCKET" ] && break; sleep 0.1; done

NCPU=$(nproc)
cat >"$D/slurm.conf" <<EOF
# $MARK
ClusterName=gemmperf-test
SlurmctldHost=$HOST
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$SOCKET
MpiDefault=none
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SchedulerType=sched/backfill
SlurmdParameters=config_overrides
ReturnToService=2
MinJobAge=600
StateSaveLocation=$D/state
SlurmdSpoolDir=$D/spool
SlurmctldPidFile=$D/slurmctld.pid
SlurmdPidFile=$D/slurmd.pid
SlurmctldLogFile=$D/slurmctld.log
SlurmdLogFile=$D/slurmd.log
SlurmctldPort=${GEMMPERF_SLURMCTLD_PORT:-6817}
SlurmdPort=${GEMMPERF_SLURMD_PORT:-6818}
NodeName=$HOST CPUs=$(( NCPU > 4 ? NCPU : 4 )) RealMemory=64000 State=UNKNOWN
PartitionName=debug Nodes=$HOST Default=YES MaxTime=INFINITE State=UP OverSubscribe=YES
EOF
export SLURM_CONF=$D/slurm.conf
mkdir -p "$(dirname "$ETC")"
cp "$SLURM_CONF" "$ETC"
slurmctld -c
slurmd -c
for i in $(seq 60); do
  state=$(sinfo -h -o %t 2>/dev/null || true)
  [ "$state" = idle ] && break
  [ "$i" = 60 ] && { log "the node never came up: '$state'"; tail -20 "$D/slurmctld.log" "$D/slurmd.log" >&2; exit 1; }
  sleep 1
done
log "cluster up: $(sinfo -h -o '%P %D %t %c')"

# ---- the same small workflow twice: locally, and through SLURM
for run in local slurm; do
  "$PY" "$REPO/tests/cluster/small_workdir.py" "$D/work/$run"
done
SMK=("$PY" -m snakemake -s "$REPO/Snakefile")
t0=$(date +%s)
(cd "$D/work/local" && "${SMK[@]}" -d . --cores 2 --configfile test-config.yaml >run.log 2>&1) \
  || { tail -40 "$D/work/local/run.log" >&2; exit 1; }
t1=$(date +%s)
(cd "$D/work/slurm" && "${SMK[@]}" -d . --workflow-profile "$REPO/profiles/slurm" --configfile test-config.yaml \
  --slurm-status-command squeue --slurm-init-seconds-before-status-checks 2 \
  --seconds-between-status-checks 2 --latency-wait 10 >run.log 2>&1) \
  || { tail -60 "$D/work/slurm/run.log" >&2; tail -20 "$D/slurmctld.log" >&2; exit 1; }
t2=$(date +%s)
submitted=$(grep -c "submitted with SLURM jobid" "$D/work/slurm/run.log" || true)
log "local run $((t1 - t0)) s; SLURM run $((t2 - t1)) s, $submitted sbatch jobs"
[ "$submitted" -ge 5 ] || { log "too few jobs went through SLURM"; tail -40 "$D/work/slurm/run.log" >&2; exit 1; }

"$PY" "$REPO/tests/cluster/small_workdir.py" --compare "$D/work/local" "$D/work/slurm"
log "PASS: the SLURM run's outputs equal the local run's"
