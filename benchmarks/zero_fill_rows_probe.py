"""Probe: what does the zero fill of a partly filled box cost, by tile height, rows
zero-filled, ring depth and CTAs in the wave?

The zero-fill and out-of-bounds box probes timed one shape with 128x64 tiles. Read
together with the development data (benchmarks/MODEL_ACCURACY.md, "wholly out-of-bounds
multicast slices"), they leave open how the zero fill of a box that holds some rows of A
scales: the model charges it per zero row of the wave (latency that levels off, and the
same time again as work of the TMA path), the probes saw it hidden at 8 stages in one
shape. This times M = 1, TM/4, TM/2, TM - 1 and TM (TM - 1 down to 0 rows of each A box
zero-filled) for 64x64, 128x64 and 256x64 tiles at 2, 4 and 8 stages, with 32 CTAs
(N = 2048) and with a full wave of 132 (N = 8448), K = 8192 (128 k-blocks), in 1x1
clusters, and the 128x64 tiles again in 1x2 clusters (where M <= 64 puts a wholly
out-of-bounds multicast slice in every cluster). Each run is verified against float64 as
in a sweep; where the H100's shared memory cannot hold a ring (256x64 at 8 stages) the
deepest one it holds runs instead (256x64: 4 stages, once). It prints the time per k-block, by tile and N, M down
and the rings across. A
GPU-side script: numpy + cuda-python only.

    PYTHONPATH=src python3 benchmarks/zero_fill_rows_probe.py [--out probe.csv]
"""

from __future__ import annotations

import sys

TILES = ((64, 64, (1, 1)), (128, 64, (1, 1)), (256, 64, (1, 1)), (128, 64, (1, 2)))
STAGES = (2, 4, 8)
NS = (2048, 8448)  # 32 CTAs of 64 columns; 132, a full wave on the H100
K = 8192
TILE_K = 64


def ms(tile_m: int) -> tuple[int, ...]:
    """M values that zero-fill TM - 1, 3TM/4, TM/2, 1 and 0 rows of each A box."""
    return (1, tile_m // 4, tile_m // 2, tile_m - 1, tile_m)


def tasks() -> list[dict]:
    """The runs, in order: each a task row (``m``, ``n``, ``k`` and the configuration)."""
    from gemmperf.problem import KernelConfig

    out = []
    for tile_m, tile_n, (cm, cn) in TILES:
        for n in NS:
            for m in ms(tile_m):
                for stages in STAGES:
                    cfg = deepest_legal(KernelConfig(family="ws-hopper", dtype="bf16", tile_m=tile_m, tile_n=tile_n,
                                                     tile_k=TILE_K, stages=stages, cluster_m=cm, cluster_n=cn,
                                                     persistent=True, schedule="cooperative", epilogue="tma"))
                    task = {"m": m, "n": n, "k": K, **cfg.as_dict()}
                    if task not in out:
                        out.append(task)
    return out


def deepest_legal(cfg):
    """``cfg``, or with the deepest ring below its own that the H100's shared memory holds
    (256x64 tiles: 4 stages for 8)."""
    from gemmperf.hardware import get_gpu
    from gemmperf.kernels import check_legal

    from probes import DEVELOPMENT_GPU

    gpu = get_gpu(DEVELOPMENT_GPU)
    while cfg.stages > 2 and check_legal(cfg, gpu) is not None:
        cfg = cfg.replace(stages=cfg.stages - 1)
    return cfg


def main(argv=None) -> int:
    from probes import run, start

    a, gpu, meas = start(__doc__, argv)
    kblocks = -(-K // TILE_K)
    rows = run(a, gpu, meas, tasks(), lambda t: {
        "tile": f"{t['tile_m']}x{t['tile_n']}", "cluster": f"{t['cluster_m']}x{t['cluster_n']}", "m": t["m"],
        "n": t["n"], "stages": t["stages"], "zero_rows": -t["m"] % t["tile_m"]})
    print(f"\nus per k-block ({kblocks} k-blocks), stages: time")
    for tile_m, tile_n, (cm, cn) in TILES:
        for n in NS:
            print(f"{tile_m}x{tile_n} {cm}x{cn} N={n}")
            for m in ms(tile_m):
                t = [(r["stages"], r["time_us"] / kblocks) for r in rows if r["status"] == "ok"
                     and (r["tile"], r["cluster"], r["n"], r["m"]) == (f"{tile_m}x{tile_n}", f"{cm}x{cn}", n, m)]
                print(f"  M={m:<4d} " + " / ".join(f"{s}: {x:.3f}" for s, x in t))
    return 0


if __name__ == "__main__":
    sys.exit(main())
