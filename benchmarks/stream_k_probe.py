"""Probe: is stream-K with the direct epilogue slower than the model says, or than stream-K
with TMA stores?

In sample on the H100 development data the fitted model predicts stream-K rows with the
direct epilogue 0.952x their measured time at the geometric mean (406 rows; the worst
0.57-0.70x), with the TMA-store epilogue 0.994x, split-K 1.03x with either
(benchmarks/MODEL_ACCURACY.md, "Tried in the sixteenth session"). The shipped sample
never pairs a configuration with its other epilogue. This times the ten stream-K rows the
model misses most with the direct epilogue and the four it misses most with TMA stores,
each as shipped and in the three variants beside it: the other epilogue, and both
epilogues without stream-K (the same tiles, data-parallel). Every run is verified against
float64 as in a sweep. It prints each shape's four times and the ratios stream-K over
data-parallel by epilogue. A GPU-side script: numpy + cuda-python only. With
``--predict probe.csv`` (no GPU; polars) it reads a run back instead and sets the fitted
model beside it (ws-pipelined fitted on every development row, model_ceiling.py): each
shape's measured and predicted stream-K over data-parallel, and predicted over measured
by schedule and epilogue. With ``--fixup`` it times instead the fix-up alone, stream-K
against split-K at the same decomposition: one tile (N = TN; 128x128 tiles, two consumer
warpgroups, and 64x128, one), M = 16 (partials of a few KB: their round trips) and M = TM
(whole partials), K = P k-blocks shared by P CTAs of one k-block each (split-K S = P;
stream-K's P workers of one iteration, the tile shared by all P), P = 2, 4, 8, 16 (and
32, 64 for stream-K alone), and the data-parallel kernel of one CTA over the P k-blocks
beside them; TMA-store epilogue, 4 stages.

    PYTHONPATH=src python3 benchmarks/stream_k_probe.py [--out probe.csv] [--fixup]
    python benchmarks/stream_k_probe.py --predict benchmarks/results/stream_k_probe/stream_k_probe_h100_2026-11-27.csv
"""

from __future__ import annotations

import sys

# (m, n, k, tile_m, tile_n, stages, cluster_m, cluster_n, raster, epilogue as shipped)
ROWS = (
    (512, 4096, 14336, 64, 128, 8, 1, 2, "column", "direct"),
    (2, 192, 5376, 256, 128, 2, 2, 1, "column", "direct"),
    (40, 7360, 149, 128, 128, 7, 1, 1, "grouped", "direct"),
    (4096, 257, 7168, 64, 128, 7, 1, 1, "column", "direct"),
    (64, 6656, 384, 128, 256, 4, 1, 1, "row", "direct"),
    (4096, 192, 4096, 64, 128, 8, 1, 2, "column", "direct"),
    (7, 10048, 152, 128, 128, 7, 1, 1, "column", "direct"),
    (128, 8192, 28672, 64, 128, 8, 1, 2, "column", "direct"),
    (7, 3848, 157, 64, 64, 7, 1, 1, "column", "direct"),
    (1024, 128, 1024, 128, 128, 5, 2, 2, "grouped", "direct"),
    (11, 48, 2816, 256, 128, 4, 2, 1, "grouped", "tma"),
    (64, 1480, 719, 128, 128, 6, 2, 1, "grouped", "tma"),
    (48, 704, 917, 256, 128, 4, 1, 2, "grouped", "tma"),
    (2, 557, 167, 256, 128, 2, 1, 1, "grouped", "tma"),
)
OTHER = {"direct": "tma", "tma": "direct"}
FIXUP_TILES = ((128, 128), (64, 128))  # --fixup: two consumer warpgroups, one
FIXUP_PARTS = (2, 4, 8, 16)  # split-K's S and stream-K's workers alike
FIXUP_MORE_PARTS = (32, 64)  # stream-K only (split-K stops at 16)


def tasks() -> list[dict]:
    """The runs, in order: per row, stream-K with the shipped epilogue (the shipped
    configuration), then with the other, then data-parallel with each; a variant the
    H100's shared memory cannot hold (TMA staging beside a deep ring) is left out."""
    from gemmperf.hardware import get_gpu
    from gemmperf.kernels import check_legal
    from gemmperf.problem import KernelConfig

    from probes import DEVELOPMENT_GPU

    gpu = get_gpu(DEVELOPMENT_GPU)
    out = []
    for m, n, k, tile_m, tile_n, stages, cm, cn, raster, shipped in ROWS:
        for stream_k, epilogue in ((True, shipped), (True, OTHER[shipped]), (False, shipped), (False, OTHER[shipped])):
            cfg = KernelConfig(family="ws-hopper", dtype="bf16", tile_m=tile_m, tile_n=tile_n, tile_k=64,
                               stages=stages, cluster_m=cm, cluster_n=cn, persistent=True, raster=raster,
                               schedule="cooperative", epilogue=epilogue, stream_k=stream_k)
            if check_legal(cfg, gpu) is None:
                out.append({"m": m, "n": n, "k": k, **cfg.as_dict()})
    return out


def fixup_tasks(tiles=FIXUP_TILES) -> list[dict]:
    """--fixup's runs, in order: per tile of ``tiles`` and M, per P the data-parallel,
    split-K and stream-K kernels over K = P k-blocks (stream-K alone for FIXUP_MORE_PARTS)."""
    from gemmperf.problem import KernelConfig

    out = []
    for tile_m, tile_n in tiles:
        for m in (16, tile_m):
            for parts in FIXUP_PARTS + FIXUP_MORE_PARTS:
                kinds = (("data-parallel", 1, False), ("split-k", parts, False), ("stream-k", 1, True))
                for name, split_k, stream_k in kinds if parts in FIXUP_PARTS else (kinds[0], kinds[2]):
                    cfg = KernelConfig(family="ws-hopper", dtype="bf16", tile_m=tile_m, tile_n=tile_n, tile_k=64,
                                       stages=4, cluster_m=1, cluster_n=1, persistent=True, raster="grouped",
                                       schedule="cooperative", epilogue="tma", split_k=split_k, stream_k=stream_k)
                    out.append({"m": m, "n": tile_n, "k": 64 * parts, **cfg.as_dict()})
    return out


def fixup_label(task: dict) -> dict:
    kind = "stream-k" if task["stream_k"] else "split-k" if task["split_k"] > 1 else "data-parallel"
    return {"tile": f"{task['tile_m']}x{task['tile_n']}", "m": task["m"], "parts": task["k"] // 64, "kind": kind}


def fixup_summary(rows: list[dict]) -> list[str]:
    """One line a tile, M and kind: its time (us) at each P, and beneath each kind's time
    beyond the data-parallel kernel's."""
    out = []
    parts = FIXUP_PARTS + FIXUP_MORE_PARTS
    for tile, m in dict.fromkeys((r["tile"], r["m"]) for r in rows):
        t = {(r["kind"], r["parts"]): r["time_us"] for r in rows
             if (r["tile"], r["m"]) == (tile, m) and r["status"] == "ok"}
        out.append(f"{tile} M={m}: P " + " ".join(f"{p:>7d}" for p in parts))
        for kind in ("data-parallel", "split-k", "stream-k"):
            out.append(f"  {kind:<13} " + " ".join(f"{t.get((kind, p), float('nan')):7.2f}" for p in parts))
        for kind in ("split-k", "stream-k"):
            extra = [t.get((kind, p), float("nan")) - t.get(("data-parallel", p), float("nan")) for p in parts]
            out.append(f"  {kind + ' - dp':<13} " + " ".join(f"{e:7.2f}" for e in extra))
    return out


def label(task: dict) -> dict:
    return {"shape": f"{task['m']}x{task['n']}x{task['k']}",
            "config": f"{task['tile_m']}x{task['tile_n']} {task['cluster_m']}x{task['cluster_n']} s{task['stages']} "
                      f"{task['raster']}",
            "schedule": "stream-k" if task["stream_k"] else "data-parallel", "epilogue": task["epilogue"]}


def summary(rows: list[dict]) -> list[str]:
    """One line a shape: the four times (us) and stream-K over data-parallel by epilogue."""
    out = [f"{'shape':<18} {'config':<28} {'sk direct':>9} {'sk tma':>8} {'dp direct':>9} {'dp tma':>8} "
           f"{'sk/dp direct':>12} {'sk/dp tma':>9}"]
    for shape, config in dict.fromkeys((r["shape"], r["config"]) for r in rows):
        t = {(r["schedule"], r["epilogue"]): r["time_us"] for r in rows
             if (r["shape"], r["config"]) == (shape, config) and r["status"] == "ok"}
        get = lambda s, e: t.get((s, e), float("nan"))  # noqa: E731
        out.append(f"{shape:<18} {config:<28} {get('stream-k', 'direct'):9.2f} {get('stream-k', 'tma'):8.2f} "
                   f"{get('data-parallel', 'direct'):9.2f} {get('data-parallel', 'tma'):8.2f} "
                   f"{get('stream-k', 'direct') / get('data-parallel', 'direct'):12.3f} "
                   f"{get('stream-k', 'tma') / get('data-parallel', 'tma'):9.3f}")
    return out


def predict(path) -> list[str]:
    """The run at ``path`` (this probe's CSV) beside the fitted model: one line a shape and
    epilogue (stream-K over data-parallel, measured and predicted), then predicted over
    measured by schedule and epilogue (geometric means)."""
    import math

    from probes import measured, predicted, read_csv

    todo = tasks()
    times_of = measured(read_csv(path), ("shape", "config", "schedule", "epilogue"))
    times = {}  # (shape, config, epilogue) -> schedule -> (measured, predicted)
    for t, p in zip(todo, predicted(todo)):
        run = label(t)
        key = (run["shape"], run["config"], run["schedule"], run["epilogue"])
        if key in times_of:
            times.setdefault(key[:2] + key[3:], {})[run["schedule"]] = (times_of[key], p)
    out = [f"{'shape':<18} {'epilogue':<8} {'measured sk/dp':>14} {'predicted sk/dp':>15}"]
    for (shape, _, epilogue), t in times.items():
        if len(t) == 2:
            (ms, ps), (md, pd) = t["stream-k"], t["data-parallel"]
            out.append(f"{shape:<18} {epilogue:<8} {ms / md:14.2f} {ps / pd:15.2f}")
    means = []
    for schedule in ("stream-k", "data-parallel"):
        for epilogue in ("direct", "tma"):
            logs = [math.log(p / m) for (_, _, e), t in times.items() if e == epilogue and schedule in t
                    for m, p in [t[schedule]]]
            means.append(f"{schedule} {epilogue} {math.exp(sum(logs) / len(logs)):.3f} ({len(logs)})")
    out.append("predicted / measured (geomean): " + ", ".join(means))
    return out


def main(argv=None) -> int:
    if argv is None:
        argv = sys.argv[1:]
    if argv[:1] == ["--predict"] and len(argv) == 2:
        print("\n".join(predict(argv[1])))
        return 0
    from probes import run, start

    a, gpu, meas = start(__doc__, argv, {"fixup": "the fix-up alone: stream-K against split-K, one tile"})
    if a.fixup:
        rows = run(a, gpu, meas, fixup_tasks(), fixup_label)
        print("\ntime (us) by the parts P sharing the tile's K, one k-block each")
        print("\n".join(fixup_summary(rows)))
        return 0
    rows = run(a, gpu, meas, tasks(), label)
    print()
    print("\n".join(summary(rows)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
