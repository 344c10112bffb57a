"""Probe: how does a k-block's time fall with the ring depth B, at fixed tiles and CTAs?

The model's ring takes max(Tc, x, (lat + x + Tc) / B) a k-block. The kernel's consumer
releases a slot one k-block late (it waits for the previous k-block's wgmma after issuing
the next one), which as a max-plus cycle would give (lat + x) / (B - 1); the development
data prefer B, the zero-fill-rows probe's in-bounds rows sit between the two
(benchmarks/MODEL_ACCURACY.md, "Tried in the twelfth session"). This times every ring
depth from 2 up to the deepest the shared memory holds, for 128x64, 128x128, 128x256 and
64x128 tiles (1x1 clusters, cooperative, TMA-store epilogue, persistent), nothing
overhanging M or N, K = 8192 (TK = 64: 128 k-blocks), with 32 CTAs (one tile row, 32
tiles) and with a full wave of 132, so the per-k-block time shows how many loads a ring
of B slots keeps in flight. Each run is verified against float64 as in a sweep. It prints
the time per k-block, by tile and CTAs, the ring depths across. A GPU-side script: numpy +
cuda-python only.

    PYTHONPATH=src python3 benchmarks/ring_depth_probe.py [--out probe.csv]
"""

from __future__ import annotations

import sys

TILES = ((128, 64), (128, 128), (128, 256), (64, 128))
STAGES = (2, 3, 4, 5, 6, 7, 8)
CTAS = (32, 132)  # one tile row of 32 tiles; a full wave on the H100
K = 8192
TILE_K = 64


def tasks() -> list[dict]:
    """The runs, in order: each a task row (``m``, ``n``, ``k`` and the configuration); ring
    depths the H100's shared memory cannot hold are left out."""
    from gemmperf.hardware import get_gpu
    from gemmperf.kernels import check_legal
    from gemmperf.problem import KernelConfig

    gpu = get_gpu("h100-sxm5-80gb")
    out = []
    for tile_m, tile_n in TILES:
        for ctas in CTAS:
            for stages in STAGES:
                cfg = KernelConfig(family="ws-hopper", dtype="bf16", tile_m=tile_m, tile_n=tile_n, tile_k=TILE_K,
                                   stages=stages, cluster_m=1, cluster_n=1, persistent=True, schedule="cooperative",
                                   epilogue="tma")
                if check_legal(cfg, gpu) is None:
                    out.append({"m": tile_m, "n": ctas * tile_n, "k": K, **cfg.as_dict()})
    return out


def main(argv=None) -> int:
    from probes import run, start

    a, gpu, meas = start(__doc__, argv)
    kblocks = -(-K // TILE_K)
    rows = run(a, gpu, meas, tasks(), lambda t: {
        "tile": f"{t['tile_m']}x{t['tile_n']}", "ctas": t["n"] // t["tile_n"], "m": t["m"], "n": t["n"],
        "stages": t["stages"]})
    print(f"\nus per k-block ({kblocks} k-blocks), stages: time")
    for tile_m, tile_n in TILES:
        for ctas in CTAS:
            t = [(r["stages"], r["time_us"] / kblocks) for r in rows if r["status"] == "ok"
                 and (r["tile"], r["ctas"]) == (f"{tile_m}x{tile_n}", ctas)]
            print(f"{tile_m}x{tile_n} CTAs={ctas:<3d} " + " / ".join(f"{s}: {x:.3f}" for s, x in t))
    return 0


if __name__ == "__main__":
    sys.exit(main())
