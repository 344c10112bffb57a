"""Probe: why do a few split-K launches of 128-accumulator tiles run 2-3x their prediction?

Fitted on every development row, the model predicts 10 of the 643 split-K rows of each
GPU below 0.75x their measured time, and both GPUs measure those rows alike to within 1%
(benchmarks/results/cross_gpu_bf16_2026-11-29b.md): 384x768x640 at 256x128, split 2,
33.2 us on the H100 and 33.4 on the H200, 11.8 predicted; 4x256x512 at 128x256, split 2,
24.6 us where the same tile unsplit takes 7.9. All are tiles whose consumer warpgroups
hold 128 fp32 accumulators a thread (128x256 and 256x128; 64x256 with one warpgroup),
most are split 2 on unclustered non-persistent grids. This times, on the shapes of the
worst of them, the shipped tile and the 128x128 tile (64 accumulators a thread) at
split 1, 2, 3 and 4, each on 1x1 and 1x2 clusters, non-persistent and persistent; and the
shipped tile, 1x1, non-persistent, split 1 and 2 with no TMA loads (``math-only``: the
operands stay in shared memory; the fix-up and epilogue run as in full mode). Every
full-mode run is verified against float64 as in a sweep. It prints per shape and tile a
table of times by split, then the ratio split over unsplit.

The cause, read in the SASS: unrolled over split-K's constant number of contributors,
ptxas turned a 128-accumulator tile's predicated fix-up loads into a branch each and
waited out every load's L2 round trip before the next. ``--sass`` (no GPU needed: NVRTC
and nvdisasm, from a CUDA toolkit on PATH or in /usr/local/cuda/bin) compiles every
split-K and stream-K configuration's kernel (bf16 and fp8, every cooperative tile,
cluster shape and epilogue; split 2 and 3, and stream-K) for sm_90a and counts, in each, the
partial loads (``LDG.E.64.STRONG.GPU``) that land in one register: 2 where they are
issued in batches, one for each load where serialized. It prints the worst and exits 1
if any kernel serializes them, then how many of a partial's loads a thread issues before
its first add, by the accumulators it holds.

With the loads batched, a thread still holds only so many partial values in flight
beside its accumulators: a 128-accumulator tile's 64 loads of a partial cannot all be in
flight at once, a 64-accumulator tile's 32 can. ``--fixup`` asks whether that makes a
partial cost a second L2 round trip: it times the fix-up alone as ``stream_k_probe.py
--fixup`` does (one tile, P CTAs of one k-block each, M = 16 and M = TM, P = 2-16 for
split-K, to 64 for stream-K) on the 128-accumulator tiles 128x256 and 256x128 beside
128x128, and prints what one more partial costs (the slope from P = 4 to 16; split-K's
and stream-K's main loops do not grow with P). On the H200 (2026-11-29, after the fix),
split-K: 0.64 / 0.61 us (128x256, M = 16 / 128), 0.56 / 0.72 (256x128) against 0.38 /
0.45 (128x128): 1.5-1.7x at M = 16, where a partial is a few rows and its bytes do not
count.

    PYTHONPATH=src python3 benchmarks/split_k_probe.py [--out probe.csv]
    python benchmarks/split_k_probe.py --summary probe.csv
    PYTHONPATH=src python3 benchmarks/split_k_probe.py --sass
    PYTHONPATH=src python3 benchmarks/split_k_probe.py --fixup [--out fixup.csv]
    python benchmarks/split_k_probe.py --fixup-summary fixup.csv
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import tempfile
from collections import Counter

# (m, n, k, the shipped tile_m, tile_n, stages, epilogue): the worst split-K rows
ROWS = (
    (4, 256, 512, 128, 256, 4, "direct"),
    (384, 768, 640, 256, 128, 4, "tma"),
    (64, 54, 11831, 128, 256, 4, "direct"),
    (64, 37888, 3584, 128, 256, 4, "direct"),
    (4096, 2048, 7168, 128, 256, 4, "direct"),
)
CONTROL = (128, 128, 6)  # 64 accumulators a thread
SPLITS = (1, 2, 3, 4)
CLUSTERS = ((1, 1), (1, 2))
SASS_SPLITS = (2, 3)
SERIAL = 4  # partial loads into one register beyond which a kernel counts as serializing them


def tasks() -> list[dict]:
    """The runs, in order: per row, per tile (shipped, control), per cluster and grid, the
    splits; then the shipped tile's math-only runs."""
    from gemmperf.problem import KernelConfig

    def config(tile_m, tile_n, stages, epilogue, cluster, persistent, split_k, mode="full"):
        return KernelConfig(family="ws-hopper", dtype="bf16", tile_m=tile_m, tile_n=tile_n, tile_k=64,
                            stages=stages, cluster_m=cluster[0], cluster_n=cluster[1], persistent=persistent,
                            raster="column", mode=mode, schedule="cooperative", epilogue=epilogue, split_k=split_k)

    out = []
    for m, n, k, tile_m, tile_n, stages, epilogue in ROWS:
        for tm, tn, st in ((tile_m, tile_n, stages), CONTROL):
            for cluster in CLUSTERS:
                for persistent in (False, True):
                    for split_k in SPLITS:
                        out.append({"m": m, "n": n, "k": k,
                                    **config(tm, tn, st, epilogue, cluster, persistent, split_k).as_dict()})
        for split_k in (1, 2):
            cfg = config(tile_m, tile_n, stages, epilogue, (1, 1), False, split_k, "math-only")
            out.append({"m": m, "n": n, "k": k, **cfg.as_dict()})
    return out


def label(task: dict) -> dict:
    return {"shape": f"{task['m']}x{task['n']}x{task['k']}", "tile": f"{task['tile_m']}x{task['tile_n']}",
            "cluster": f"{task['cluster_m']}x{task['cluster_n']}", "persistent": task["persistent"],
            "mode": task["mode"], "split_k": task["split_k"]}


def summary(rows: list[dict]) -> list[str]:
    """Per shape and tile, a line per (mode, cluster, grid): the time (us) at each split,
    then each split over the unsplit."""
    out = []
    t = {(r["shape"], r["tile"], r["mode"], r["cluster"], str(r["persistent"]), int(r["split_k"])):
         float(r["time_us"]) for r in rows if r["status"] == "ok"}
    head = " ".join(f"{'S=' + str(s):>7}" for s in SPLITS) + "  " + " ".join(f"{'S' + str(s) + '/S1':>6}"
                                                                            for s in SPLITS[1:])
    for shape, tile in dict.fromkeys((r["shape"], r["tile"]) for r in rows):
        out.append(f"{shape} {tile}:")
        out.append(f"  {'mode':<9} {'cluster':<7} {'grid':<12} {head}")
        for mode, cluster, persistent in dict.fromkeys((r["mode"], r["cluster"], str(r["persistent"])) for r in rows
                                                        if (r["shape"], r["tile"]) == (shape, tile)):
            times = [t.get((shape, tile, mode, cluster, persistent, s), float("nan")) for s in SPLITS]
            grid = "persistent" if persistent == "True" else "a CTA a tile"
            out.append(f"  {mode:<9} {cluster:<7} {grid:<12} " + " ".join(f"{x:7.2f}" for x in times) + "  "
                       + " ".join(f"{x / times[0]:6.2f}" for x in times[1:]))
    return out


def sass_configs() -> list:
    """--sass's kernels: every split-K and stream-K configuration of each dtype, tile,
    cluster shape and epilogue, at the deepest ring the H100 holds up to 4 stages."""
    from gemmperf.hardware import get_gpu
    from gemmperf.kernels import check_legal
    from gemmperf.problem import KernelConfig

    from probes import DEVELOPMENT_GPU

    gpu = get_gpu(DEVELOPMENT_GPU)
    out = []
    for dtype, tile_k in (("bf16", 64), ("fp8", 128)):
        for tile_m, tile_n in ((64, 64), (64, 128), (64, 256), (128, 64), (128, 128), (128, 256), (256, 64),
                               (256, 128)):
            for cm, cn in ((1, 1), (2, 1), (1, 2), (2, 2)):
                for epilogue in ("direct", "tma"):
                    for split_k, stream_k in [(s, False) for s in SASS_SPLITS] + [(1, True)]:
                        for stages in (4, 3, 2):
                            cfg = KernelConfig(family="ws-hopper", dtype=dtype, tile_m=tile_m, tile_n=tile_n,
                                               tile_k=tile_k, stages=stages, cluster_m=cm, cluster_n=cn,
                                               persistent=stream_k, raster="column", epilogue=epilogue,
                                               split_k=split_k, stream_k=stream_k)
                            if check_legal(cfg, gpu) is None:
                                out.append(cfg)
                                break
    return out


def first_batch(sass: str) -> int:
    """The partial loads a kernel's fix-up issues before its first add (after the arrival's
    atomic): how many of a partial's loads a thread has in flight at once."""
    tail = sass[sass.find("ATOMG.E.ADD"):]
    ops = re.findall(r"LDG\.E\.64\.STRONG\.GPU|FADD", tail)
    return next((i for i, op in enumerate(ops) if op == "FADD"), len(ops))


def accumulators(cfg) -> int:
    """fp32 accumulators a consumer thread holds: WG_M * TN / 128 (cooperative: a 128- or
    256-row tile's two warpgroups take half the rows each)."""
    return (cfg.tile_m if cfg.tile_m < 128 else cfg.tile_m // 2) * cfg.tile_n // 128


def serial_loads(sass: str) -> int:
    """The most partial loads (``LDG.E.64.STRONG.GPU``) of a kernel's SASS into one register."""
    dest = Counter(re.findall(r"LDG\.E\.64\.STRONG\.GPU (R\d+),", sass))
    return max(dest.values(), default=0)


def sass_check() -> int:
    from gemmperf.kernels import build
    from gemmperf.kernels.builder import build_all

    tool = shutil.which("nvdisasm") or shutil.which("/usr/local/cuda/bin/nvdisasm")
    if tool is None:
        print("--sass: no nvdisasm on PATH or in /usr/local/cuda/bin", file=sys.stderr)
        return 2
    configs = sass_configs()
    failed = build_all(configs, "sm_90a", jobs=16)
    worst, batches = [], {}
    with tempfile.TemporaryDirectory() as tmp:
        for cfg in configs:
            if cfg.key() in failed:
                continue
            path = f"{tmp}/k.cubin"
            with open(path, "wb") as f:
                f.write(build(cfg, "sm_90a").cubin)
            sass = subprocess.run([tool, "-c", path], capture_output=True, text=True, check=True).stdout
            worst.append((serial_loads(sass), cfg.key()))
            batches.setdefault(accumulators(cfg), []).append(first_batch(sass))
    worst.sort(reverse=True)
    bad = [w for w in worst if w[0] > SERIAL]
    print(f"{len(worst)} kernels disassembled ({len(failed)} failed to compile); the most partial loads into one "
          f"register:")
    for n, key in worst[:8]:
        print(f"  {n:3d}  {key}")
    print(f"{len(bad)} serialize their fix-up's loads (more than {SERIAL} into one register)")
    print("a partial's loads a thread has in flight before its first add, by the accumulators it holds:")
    for acc, n in sorted(batches.items()):
        print(f"  {acc:3d} accumulators ({acc // 2} loads): {min(n)}-{max(n)} over {len(n)} kernels")
    return 1 if bad or failed else 0


FIXUP_TILES = ((128, 256), (256, 128), (128, 128))  # --fixup: 128 accumulators a thread, and 64


def fixup_slopes(rows: list[dict]) -> list[str]:
    """Per tile and M: what one more partial costs, (t(P=16) - t(P=4)) / 12 in us, for
    split-K and stream-K, whose CTAs each run one k-block at once (their main loop does
    not grow with P: the growth is the last arriver's read-back), and beside them the
    data-parallel kernel's time a k-block."""
    t = {(r["tile"], str(r["m"]), r["kind"], int(r["parts"])): float(r["time_us"]) for r in rows
         if r["status"] == "ok"}
    out = [f"{'tile':<8} {'M':>4} {'split-k us/partial':>19} {'stream-k us/partial':>20} {'data-parallel us/kb':>20}"]
    for tile, m in dict.fromkeys((r["tile"], str(r["m"])) for r in rows):
        def slope(kind):
            return (t.get((tile, m, kind, 16), float("nan")) - t.get((tile, m, kind, 4), float("nan"))) / 12
        out.append(f"{tile:<8} {m:>4} {slope('split-k'):19.3f} {slope('stream-k'):20.3f} "
                   f"{slope('data-parallel'):20.3f}")
    return out


def main(argv=None) -> int:
    if argv is None:
        argv = sys.argv[1:]
    from probes import read_csv, run, start

    if argv == ["--sass"]:
        return sass_check()
    if argv[:1] == ["--fixup-summary"] and len(argv) == 2:
        from stream_k_probe import fixup_summary

        rows = read_csv(argv[1])
        print("\n".join(fixup_summary(rows) + [""] + fixup_slopes(rows)))
        return 0
    if argv[:1] == ["--fixup"]:
        from stream_k_probe import fixup_label, fixup_summary, fixup_tasks

        a, gpu, meas = start(__doc__, argv[1:])
        rows = run(a, gpu, meas, fixup_tasks(FIXUP_TILES), fixup_label)
        print("\n".join(["", "time (us) by the parts P sharing the tile's K, one k-block each"]
                        + fixup_summary(rows) + [""] + fixup_slopes(rows)))
        return 0
    if argv[:1] == ["--summary"] and len(argv) == 2:
        print("\n".join(summary(read_csv(argv[1]))))
        return 0
    a, gpu, meas = start(__doc__, argv)
    rows = run(a, gpu, meas, tasks(), label)
    print()
    print("\n".join(summary(rows)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
