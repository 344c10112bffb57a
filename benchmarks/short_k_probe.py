"""Probe: what do the optimizer's picks cost where K is shorter than one k-block?

On the H200's answer sets (benchmarks/optimizer_picks.py, every run of the 360 fresh
shapes so far), the fitted model is about right on the sampled configurations of the
shapes with K < 64 (0.98x their time at the mean) and far too fast on the ones it picks
(0.85x): persistent ping-pong tiles with TMA stores and no cluster 0.70x, non-persistent
TMA-store tiles 0.88-0.90x, while the same classes with K >= 64 are 0.89x and 0.96-1.0x.
On two small-C shapes (63 x 6032 x 24, 6067 x 48 x 20) a 64x64 non-persistent TMA-store
tile with no cluster ran 3.9-4.3 us where the model said 2.8, and a 64x64 persistent
one in 2x1 clusters 3.6 us (predicted 3.6); on 797 x 19032 x 34 (C of 30 MB, its rows
16 bytes off their sector every other row) 128x128 ping-pong ran 23 us for a predicted 11.

This times, on the same kind of shapes, one factor at a time: K in the tail (24 or 34)
against a whole k-block (64) and four (256); C's rows on their sector (N = 19040) or off it
(19032); the cluster (1x1, 2x1); persistent or not; ping-pong or cooperative; TMA stores
or direct ones. ``--grain`` times K = 16 to 256 on and off the row's 16-byte granule in
two persistent ping-pong tilings (TMA or direct stores) on two shapes of eight rounds of
one-k-block tiles; ``--ctas`` the same tilings with 16, 33, 66 and 132 persistent CTAs,
which tells a cost one SM pays (the same per tile at any count) from one the GPU shares;
``--rows`` pitches on the line, on the sector only, and off the sector over 1, 4 and 16
k-blocks, unclustered and in 2x1 and 1x2 clusters, on 16 and 132 CTAs.
Each run is verified against float64 as in a sweep. Prints a table of
time by configuration and K; with ``--read CSV`` on a machine with the project installed,
the times beside the in-sample model's predictions of ``--gpu``. GPU-side: numpy +
cuda-python only.

    PYTHONPATH=src python3 benchmarks/short_k_probe.py [--out probe.csv] [--grain | --ctas | --rows]
    PYTHONPATH=src:benchmarks python3 benchmarks/short_k_probe.py --read probe.csv [--gpu SLUG]
"""

from __future__ import annotations

import sys

# (tile_m, tile_n, stages, cluster_m, persistent, schedule, epilogue)
SMALL_CONFIGS = (
    (64, 64, 8, 1, False, "cooperative", "tma"),
    (64, 64, 8, 1, False, "cooperative", "direct"),
    (64, 64, 8, 2, False, "cooperative", "tma"),
    (64, 64, 6, 1, True, "pingpong", "tma"),
    (64, 64, 6, 2, True, "pingpong", "tma"),
    (128, 128, 6, 1, True, "pingpong", "tma"),
    (128, 128, 6, 2, True, "pingpong", "tma"),
)
LARGE_CONFIGS = (
    (128, 128, 6, 1, True, "pingpong", "tma"),
    (128, 128, 6, 2, True, "pingpong", "tma"),
    (128, 128, 6, 1, True, "cooperative", "tma"),
    (128, 128, 6, 1, True, "pingpong", "direct"),
    (128, 128, 6, 1, False, "cooperative", "tma"),
    (128, 256, 4, 2, True, "cooperative", "tma"),
)
# (M, N, K values): small C, one wave (a B of one tile column; an A of one tile row);
# C of 30 MB with its rows off their sector every other row (19032) or on it (19040);
# two shapes of a few waves whose picks (128x128 ping-pong, TMA stores, no cluster) ran
# 0.87x their prediction at one k-block
SMALL_SHAPES = ((6067, 48, (20, 64, 256)), (63, 6032, (24, 64, 256)))
LARGE_SHAPES = ((797, 19032, (34, 64, 256)), (797, 19040, (34, 64, 256)),
                (1152, 5184, (64, 128, 512)), (7558, 1344, (64, 128, 512)))


# --grain: K on and off the 16-byte granule of a row (K % 8), one k-block to four, on two
# shapes of eight rounds of tiles (C on its sectors), in the persistent tilings above
GRAIN_SHAPES = ((797, 19040), (2048, 8448))
GRAIN_KS = (16, 20, 24, 30, 32, 34, 40, 48, 56, 62, 64, 200, 226, 232, 256)
GRAIN_CONFIGS = (LARGE_CONFIGS[0], LARGE_CONFIGS[3])


# --ctas: the same tilings on one of those shapes with 16 to 132 persistent CTAs: a cost of
# the rows off their sector that one SM pays keeps its time per tile as the CTAs fall, one
# the whole GPU shares (the L2) shrinks with them
CTAS_SHAPE = (797, 19040)
CTAS = (16, 33, 66, 132)
CTAS_KS = (32, 34, 40, 64)


# --rows: where one SM's cost of the rows off their sector sits as K grows, and what a
# cluster's multicast takes off it: 1, 4 and 16 k-blocks whose pitch is on the line (64j),
# on the sector but off the line (64j - 16) or off the sector every other row (64j - 8), on
# 16 CTAs (one SM's cost, nothing shared) and on 132, in clusters of 1, 2x1 and 1x2
# ((tiling as above, cluster_n))
ROWS_SHAPE = (797, 19040)
ROWS_TILINGS = (((128, 128, 6, 1, True, "pingpong", "tma"), 1), ((128, 128, 6, 2, True, "pingpong", "tma"), 1),
                ((128, 128, 6, 1, True, "pingpong", "tma"), 2), ((128, 128, 6, 1, True, "cooperative", "direct"), 1))
ROWS_KS = tuple(k for j in (1, 4, 16) for k in (64 * j, 64 * j - 16, 64 * j - 8))
ROWS_CTAS = (16, 132)


def config(tiling: tuple, persistent_ctas: int = 0, cluster_n: int = 1) -> dict:
    """The configuration's fields of one tiling of the tables above (ws-hopper bf16, tile K
    64, grouped raster)."""
    from gemmperf.problem import KernelConfig

    tile_m, tile_n, stages, cluster_m, persistent, schedule, epilogue = tiling
    return KernelConfig(family="ws-hopper", dtype="bf16", tile_m=tile_m, tile_n=tile_n, tile_k=64, stages=stages,
                        cluster_m=cluster_m, cluster_n=cluster_n, persistent=persistent, raster="grouped",
                        schedule=schedule, epilogue=epilogue, persistent_ctas=persistent_ctas).as_dict()


def tasks(grain: bool = False, ctas: bool = False, rows: bool = False) -> list[dict]:
    """The runs, in order: each a task row (``m``, ``n``, ``k`` and the configuration);
    with ``grain``, ``--grain``'s; with ``ctas``, ``--ctas``'s; with ``rows``, ``--rows``'."""
    if rows:
        m, n = ROWS_SHAPE
        return [{"m": m, "n": n, "k": k, **config(tiling, p, cn)} for p in ROWS_CTAS for tiling, cn in ROWS_TILINGS
                for k in ROWS_KS]
    if ctas:
        m, n = CTAS_SHAPE
        return [{"m": m, "n": n, "k": k, **config(tiling, p)} for tiling in GRAIN_CONFIGS for p in CTAS
                for k in CTAS_KS]
    if grain:
        return [{"m": m, "n": n, "k": k, **config(tiling)} for tiling in GRAIN_CONFIGS for m, n in GRAIN_SHAPES
                for k in GRAIN_KS]
    return [{"m": m, "n": n, "k": k, **config(tiling)}
            for shapes, tilings in ((SMALL_SHAPES, SMALL_CONFIGS), (LARGE_SHAPES, LARGE_CONFIGS))
            for tiling in tilings for m, n, ks in shapes for k in ks]


def label(t: dict) -> str:
    """A configuration's short name."""
    ctas = f" {t['persistent_ctas']}" if t.get("persistent_ctas") else ""
    return (f"{t['tile_m']}x{t['tile_n']} {t['cluster_m']}x{t['cluster_n']} "
            f"{'p' if t['persistent'] else 'np'}{ctas} {t['schedule']} {t['epilogue']}")


def read(path: str, gpu: str) -> int:
    """The probe's runs beside the in-sample model's predictions, by shape and configuration."""
    from probes import measured, predicted, read_csv

    got = measured(read_csv(path), ("config", "m", "n", "k"))
    key = lambda t: (label(t), str(t["m"]), str(t["n"]), str(t["k"]))  # noqa: E731
    # a run once, whichever mode
    every = {key(t): t for t in tasks() + tasks(grain=True) + tasks(ctas=True) + tasks(rows=True)}
    runs = [t for k, t in every.items() if k in got]
    pred = predicted(runs, gpu=gpu)
    print(f"measured and predicted (in-sample fit of {gpu}), us; measured / predicted")
    for t, p in zip(runs, pred):
        m = got[key(t)]
        print(f"{t['m']:5d} x {t['n']:5d} x {t['k']:3d}  {label(t):34s} {m:8.2f} {p:8.2f}  {m / p:.3f}")
    return 0


def main(argv=None) -> int:
    from probes import read_back, run, start

    code, rest = read_back(argv, read)
    if code is not None:
        return code

    a, gpu, meas = start(__doc__, rest, {"grain": "time K on and off the row's 16-byte granule instead",
                                         "ctas": "time 16 to 132 persistent CTAs instead",
                                         "rows": "time rows on and off their line and sector over 1-16 k-blocks, "
                                                 "in clusters, on 16 and 132 CTAs instead"})
    rows = run(a, gpu, meas, tasks(a.grain, a.ctas, a.rows),
               lambda t: {"config": label(t), "m": t["m"], "n": t["n"], "k": t["k"]})
    print("\nus by shape and K")
    for name in dict.fromkeys(r["config"] for r in rows):
        for mn in dict.fromkeys((r["m"], r["n"]) for r in rows if r["config"] == name):
            got = [r for r in rows if r["config"] == name and (r["m"], r["n"]) == mn and r["status"] == "ok"]
            print(f"{name:34s} {mn[0]}x{mn[1]}: " + "  ".join(f"K={r['k']}:{r['time_us']:.2f}" for r in got))
    return 0


if __name__ == "__main__":
    sys.exit(main())
