#!/usr/bin/env bash
# Multi-GPU sharding on one node, without Snakemake: what profiles/multi-gpu makes
# Snakemake do, spelled out for a machine that has only python3, numpy and cuda-python.
#
#   PYTHONPATH=src bash tests/cluster/two_gpus.sh [OUTDIR]
#
# A testlist (every 8th shape of paper-grid: 64 shapes, preset paper, ws-hopper bf16)
# is collected in 2 shards, each shard started as the collect_shard rule starts it:
#   gemmperf gpu-slot -- gemmperf collect --shard i/2 ...
# 1. one GPU:  pool GEMMPERF_GPUS=0: both shards started at once; the slot pool lets
#    one run at a time (as Snakemake with --resources gpu=1 would).
# 2. two GPUs: pool GEMMPERF_GPUS=0,1: both shards run at once, one per GPU.
# Kernels are compiled once beforehand (shared on-disk cache), so neither run pays the
# compile. Each run's shards are merged (gemmperf.bench.merge.merge_shards, the
# merge_shards rule's code); the two merged tables must hold the same configurations,
# all verified (times differ between GPUs, naturally).
set -euo pipefail
cd "$(dirname "$0")/../.."
export PYTHONPATH=src PYTHONUNBUFFERED=1
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
OUTDIR=${1:-${OUT:-/tmp/gemmperf-two-gpus}}
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
export GEMMPERF_CACHE=$WORK/kernel-cache GEMMPERF_GPU_SLOTS=$WORK/slots
mkdir -p "$OUTDIR"
PY=${PYTHON:-python3}
nvidia-smi -L | tee "$OUTDIR/summary.txt"

awk 'NR == 1 || (NR - 2) % 8 == 0' testlists/paper-grid.csv >"$WORK/list.csv"
$PY -m gemmperf hardware --out "$WORK/hardware.json"
collect() { # shard-of-shards out
  $PY -m gemmperf gpu-slot -- $PY -m gemmperf collect --gpu "$WORK/hardware.json" \
    --testlist "$WORK/list.csv" --families ws-hopper --dtype bf16 --preset paper \
    --shard "$1" --out "$2"
}
# compile the sweep's kernels once (4 configurations)
GEMMPERF_GPUS=0 $PY -m gemmperf collect --gpu "$WORK/hardware.json" --testlist "$WORK/list.csv" \
  --families ws-hopper --dtype bf16 --preset paper --limit 4 --out "$WORK/warmup.csv" 2>/dev/null

for run in one:0 two:0,1; do
  name=${run%%:*}
  export GEMMPERF_GPUS=${run#*:}
  t0=$(date +%s.%N)
  collect 0/2 "$WORK/$name.0.csv" 2>"$WORK/$name.0.log" &
  p0=$!
  collect 1/2 "$WORK/$name.1.csv" 2>"$WORK/$name.1.log" &
  p1=$!
  wait $p0 && wait $p1
  t1=$(date +%s.%N)
  echo "$name GPU pool $GEMMPERF_GPUS: wall $(awk "BEGIN {printf \"%.1f\", $t1 - $t0}") s" | tee -a "$OUTDIR/summary.txt"
  grep -h "gpu-slot:" "$WORK/$name.0.log" "$WORK/$name.1.log" | sed 's/^/  /' | tee -a "$OUTDIR/summary.txt"
  $PY -c "from gemmperf.bench.merge import merge_shards as m; print('  merged rows:', m(['$WORK/$name.0.csv', '$WORK/$name.1.csv'], '$OUTDIR/$name-gpu.csv'))" \
    | tee -a "$OUTDIR/summary.txt"
  cat "$WORK/$name.0.log" "$WORK/$name.1.log" | tr '\r' '\n' | tail -n 20 >"$OUTDIR/$name-gpu.log"
done
unset GEMMPERF_GPUS

$PY - "$OUTDIR" <<'EOF' | tee -a "$OUTDIR/summary.txt"
import csv, statistics, sys
from pathlib import Path
from gemmperf.bench.sweep import task_key
out = Path(sys.argv[1])
tables = {n: {task_key(r): r for r in csv.DictReader((out / f"{n}-gpu.csv").open())} for n in ("one", "two")}
one, two = tables["one"], tables["two"]
same_keys = one.keys() == two.keys()
same_status = same_keys and all(one[k]["status"] == two[k]["status"] for k in one)
ok = sum(r["status"] == "ok" for r in two.values())
ratio = [float(two[k]["time_us"]) / float(one[k]["time_us"]) for k in one if k in two and one[k]["status"] == "ok"]
print(f"rows: one GPU {len(one)}, two GPUs {len(two)}; same configurations: {same_keys}; "
      f"same statuses: {same_status}; ok: {ok}/{len(two)}")
print(f"time_us two-GPU/one-GPU per configuration: median {statistics.median(ratio):.3f}, "
      f"min {min(ratio):.3f}, max {max(ratio):.3f}")
sys.exit(0 if same_keys and same_status and ok == len(two) else 1)
EOF
