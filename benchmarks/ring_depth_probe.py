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
the time per k-block, by tile and CTAs, the ring depths across. With ``--schedules`` it
times instead the rings of clusters and of ping-pong consumers: 128x64 and 128x128 tiles,
clusters 1x1, 2x1, 1x2 and 2x2 (a cluster of cm x cn CTAs takes cm tile rows: M = cm*TM),
cooperative and ping-pong, the same CTA counts and depths (a cluster shares every
multicast slot; ping-pong's two consumers take turns with whole tiles). With ``--wide``
it times the tiles of 256 rows or columns (256x128, 128x256, 256x64, 64x256), 1x1
clusters, both schedules where they are legal: a 256-row tile gives each cooperative
consumer warpgroup two m64 wgmma rows per k16 step, a 256-column tile one of n256. With
``--modes`` each run is timed also as the load-only kernel (its consumers release a slot
as it lands: the ring without the multiply) and the math-only one (no loads), which time
the two halves of the ring apart (not verifiable: their C is not a product). A GPU-side
script: numpy + cuda-python only.

    PYTHONPATH=src python3 benchmarks/ring_depth_probe.py [--out probe.csv] [--schedules | --wide] [--modes]
"""

from __future__ import annotations

import sys

TILES = ((128, 64), (128, 128), (128, 256), (64, 128))
STAGES = (2, 3, 4, 5, 6, 7, 8)
CTAS = (32, 132)  # one tile row of 32 tiles; a full wave on the H100
K = 8192
TILE_K = 64
SCHEDULE_TILES = ((128, 64), (128, 128))  # --schedules
CLUSTERS = ((1, 1), (2, 1), (1, 2), (2, 2))
SCHEDULES = ("cooperative", "pingpong")
WIDE_TILES = ((256, 128), (128, 256), (256, 64), (64, 256))  # --wide
MODES = ("full", "load-only", "math-only")  # --modes


def tasks(schedules: bool = False, wide: bool = False, modes: bool = False) -> list[dict]:
    """The runs, in order: each a task row (``m``, ``n``, ``k`` and the configuration); ring
    depths the H100's shared memory cannot hold are left out. ``schedules``: the clusters'
    and ping-pong's rings (SCHEDULE_TILES x CTAS x CLUSTERS x SCHEDULES x STAGES); ``wide``:
    tiles of 256 rows or columns, 1x1 clusters, both schedules (WIDE_TILES x CTAS x
    SCHEDULES x STAGES); ``modes``: each run also as the load-only kernel (the consumers
    release each slot as it lands: the ring without the multiply) and the math-only one
    (no loads)."""
    from gemmperf.hardware import get_gpu
    from gemmperf.kernels import check_legal
    from gemmperf.problem import KernelConfig

    gpu = get_gpu("h100-sxm5-80gb")
    clusters = CLUSTERS if schedules else ((1, 1),)
    kinds = [(c, s) for c in clusters for s in SCHEDULES] if schedules or wide else [((1, 1), "cooperative")]
    out = []
    for tile_m, tile_n in SCHEDULE_TILES if schedules else WIDE_TILES if wide else TILES:
        for ctas in CTAS:
            for (cm, cn), schedule in kinds:
                for stages in STAGES:
                    cfg = KernelConfig(family="ws-hopper", dtype="bf16", tile_m=tile_m, tile_n=tile_n,
                                       tile_k=TILE_K, stages=stages, cluster_m=cm, cluster_n=cn, persistent=True,
                                       schedule=schedule, epilogue="tma")
                    if check_legal(cfg, gpu) is None:  # cm tile rows, ctas / cm tile columns
                        for mode in MODES if modes else ("full",):
                            out.append({"m": cm * tile_m, "n": ctas // cm * tile_n, "k": K,
                                        **{**cfg.as_dict(), "mode": mode}})
    return out


def label(task: dict, named: bool) -> dict:
    """The columns that name a run: tile, CTAs, M, N, stages (and, ``named``, the cluster,
    the schedule and the mode, for runs that differ in them)."""
    ctas = task["m"] // task["tile_m"] * (task["n"] // task["tile_n"])
    kind = {"cluster": f"{task['cluster_m']}x{task['cluster_n']}", "schedule": task["schedule"],
            "mode": task["mode"]} if named else {}
    return {"tile": f"{task['tile_m']}x{task['tile_n']}", "ctas": ctas, **kind, "m": task["m"], "n": task["n"],
            "stages": task["stages"]}


def main(argv=None) -> int:
    from probes import run, start

    a, gpu, meas = start(__doc__, argv, {"schedules": "the rings of clusters and ping-pong consumers",
                                         "wide": "tiles of 256 rows or columns, both schedules",
                                         "modes": "every run also as the load-only and the math-only kernel"})
    kblocks = -(-K // TILE_K)
    named = a.schedules or a.wide or a.modes  # the runs differ in schedule, cluster or mode
    rows = run(a, gpu, meas, tasks(a.schedules, a.wide, a.modes), lambda t: label(t, named))
    print(f"\nus per k-block ({kblocks} k-blocks), stages: time")
    kind = lambda r: tuple(r[c] for c in ("tile", "ctas", "cluster", "schedule", "mode") if c in r)  # noqa: E731
    for name in dict.fromkeys(kind(r) for r in rows):  # one line a tile, CTA count (cluster, schedule, mode)
        t = [(r["stages"], r["time_us"] / kblocks) for r in rows if r["status"] == "ok" and kind(r) == name]
        print(" ".join(str(v) for v in name) + "  " + " / ".join(f"{s}: {x:.3f}" for s, x in t))
    return 0


if __name__ == "__main__":
    sys.exit(main())
