"""Probe: why do the optimizer's stream-K answers run so much slower than it says?

Over the H200's 360 fresh answer sets (benchmarks/optimizer_picks.py) the re-ranked picks
regret 2.7% at the mean, but the few stream-K picks ran 0.56-0.78x their fitted prediction
and regret 15-71% (1152 x 8640 x 14591 in 128x256 tiles: 657 us against 385 for the best
data-parallel tiling, predicted 367), while the sampled stream-K rows of the development
lists are 0.95-0.98x at the geometric mean. The model's stream-K wave (``stream_k_offsets``)
counts L2 hits from workers on one panel at the same k offset (workers 44 apart in that
example read the same B k-block at once: two thirds of B's reads) and from workers a few
k-blocks ahead, whose hold grows with the hit rate (a fixed point, 0.70 there).

This times each of those shapes at its pick's tiling, stream-K and the data-parallel twin
(persistent, the same tiles, stages, cluster and epilogue), under each raster (row,
column, grouped: the panels the workers share change with it), and stream-K again with
half the workers (66 persistent CTAs: other offsets, half the wave's stream). Each run is
verified against float64 as in a sweep. Prints each shape's times and stream-K over
data-parallel by raster; with ``--read CSV`` on a machine with the project installed, the
runs beside the in-sample model's predictions of ``--gpu``. GPU-side: numpy + cuda-python.

    PYTHONPATH=src python3 benchmarks/stream_k_picks_probe.py [--out probe.csv]
    PYTHONPATH=src:benchmarks python3 benchmarks/stream_k_picks_probe.py --read probe.csv [--gpu SLUG]
"""

from __future__ import annotations

import sys

# (m, n, k, tile_m, tile_n, stages, cluster_m, cluster_n, the pick's raster, epilogue): the
# stream-K configurations the optimizer answered on the H200's fresh sets (each set's answers
# as planned, and step 35's --corrected picks), by their regret against the shape's best
# run, and one that ran as predicted (200 x 26981 x 5643, 1.06x)
PICKS = (
    (1152, 8640, 14591, 128, 256, 4, 1, 1, "row", "tma"),
    (6145, 13320, 57, 128, 256, 4, 1, 1, "column", "tma"),
    (384, 6896, 19264, 128, 256, 4, 1, 1, "row", "tma"),
    (3072, 384, 10944, 128, 128, 7, 1, 1, "column", "direct"),
    (7558, 1344, 64, 256, 128, 2, 1, 1, "row", "tma"),
    (2936, 7537, 2944, 128, 256, 4, 1, 1, "column", "tma"),
    (7808, 1136, 5040, 256, 128, 4, 1, 1, "row", "tma"),
    (14882, 1280, 16, 128, 256, 4, 1, 1, "row", "tma"),
    (3520, 13184, 64, 256, 128, 4, 1, 1, "row", "tma"),
    (200, 26981, 5643, 128, 256, 4, 2, 1, "row", "tma"),
)
RASTERS = ("row", "column", "grouped")
HALF_WORKERS = 66


def config(pick: tuple, raster: str, stream_k: bool, persistent_ctas: int = 0) -> dict:
    """A run of ``pick`` (a PICKS row) under ``raster``, stream-K or data-parallel."""
    from gemmperf.problem import KernelConfig

    m, n, k, tile_m, tile_n, stages, cm, cn, _, epilogue = pick
    cfg = KernelConfig(family="ws-hopper", dtype="bf16", tile_m=tile_m, tile_n=tile_n, tile_k=64, stages=stages,
                       cluster_m=cm, cluster_n=cn, persistent=True, raster=raster, schedule="cooperative",
                       epilogue=epilogue, stream_k=stream_k, persistent_ctas=persistent_ctas)
    return {"m": m, "n": n, "k": k, **cfg.as_dict()}


def tasks() -> list[dict]:
    """The runs, in order: per shape, stream-K and data-parallel under each raster, then
    stream-K on HALF_WORKERS CTAs under the pick's raster."""
    out = []
    for pick in PICKS:
        for raster in RASTERS:
            out += [config(pick, raster, True), config(pick, raster, False)]
        out.append(config(pick, pick[8], True, HALF_WORKERS))
    return out


def label(t: dict) -> dict:
    """The columns that name a run."""
    kind = "stream-k" if t["stream_k"] else "data-parallel"
    workers = f" {t['persistent_ctas']}" if t["persistent_ctas"] else ""
    return {"shape": f"{t['m']}x{t['n']}x{t['k']}", "raster": t["raster"], "kind": kind + workers,
            "config": f"{t['tile_m']}x{t['tile_n']} {t['cluster_m']}x{t['cluster_n']} s{t['stages']} {t['epilogue']}"}


def summary(rows: list[dict]) -> list[str]:
    """One line a shape: stream-K and data-parallel (us) by raster, stream-K on half the
    workers, and stream-K over data-parallel by raster."""
    out = [f"{'shape':<18} {'config':<22} " + " ".join(f"{'sk ' + r:>10} {'dp ' + r:>10}" for r in RASTERS)
           + f" {'sk ' + str(HALF_WORKERS):>8}  sk/dp " + "/".join(RASTERS)]
    for shape, config in dict.fromkeys((r["shape"], r["config"]) for r in rows):
        t = {(r["kind"], r["raster"]): float(r["time_us"]) for r in rows
             if (r["shape"], r["config"]) == (shape, config) and r["status"] == "ok"}
        nan = float("nan")
        times = " ".join(f"{t.get(('stream-k', r), nan):10.2f} {t.get(('data-parallel', r), nan):10.2f}"
                         for r in RASTERS)
        half = next((v for (kind, _), v in t.items() if kind == f"stream-k {HALF_WORKERS}"), nan)
        ratios = " ".join(f"{t.get(('stream-k', r), nan) / t.get(('data-parallel', r), nan):.2f}" for r in RASTERS)
        out.append(f"{shape:<18} {config:<22} {times} {half:8.2f}  {ratios}")
    return out


def read(path: str, gpu: str) -> int:
    """The probe's runs beside the in-sample model's predictions: per run measured,
    predicted and their ratio; per shape and raster stream-K over data-parallel, measured
    and predicted."""
    from probes import measured, predicted, read_csv

    cols = ("shape", "raster", "kind", "config")
    got = measured(read_csv(path), cols)
    runs = [t for t in tasks() if tuple(label(t)[c] for c in cols) in got]
    pred = predicted(runs, gpu=gpu)
    print(f"measured and predicted (in-sample fit of {gpu}), us; measured / predicted")
    both = {}
    for t, p in zip(runs, pred):
        lab = label(t)
        m = got[tuple(lab[c] for c in cols)]
        both[lab["shape"], lab["raster"], lab["kind"]] = (m, p)
        print(f"{lab['shape']:<18} {lab['config']:<22} {lab['raster']:<8} {lab['kind']:<17} {m:9.2f} {p:9.2f}  "
              f"{m / p:.3f}")
    print("\nstream-K over data-parallel, measured / predicted")
    for shape in dict.fromkeys(s for s, _, _ in both):
        cells = []
        for raster in RASTERS:
            sk, dp = both.get((shape, raster, "stream-k")), both.get((shape, raster, "data-parallel"))
            cells.append(f"{raster} {sk[0] / dp[0]:.2f} / {sk[1] / dp[1]:.2f}" if sk and dp else f"{raster} -")
        print(f"{shape:<18} " + "   ".join(cells))
    return 0


def main(argv=None) -> int:
    from probes import read_back, run, start

    code, rest = read_back(argv, read)
    if code is not None:
        return code
    a, gpu, meas = start(__doc__, rest)
    rows = run(a, gpu, meas, tasks(), label)
    print()
    print("\n".join(summary(rows)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
