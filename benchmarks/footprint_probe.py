"""Probe: does one configuration's k-block take the time the model says whatever the grid of
tiles its wave covers?

In sample on the H100 development data (benchmarks/model_ceiling.py's fit) the same
configuration runs its k-block at very different rates on shapes of like size: 64x256
tiles, 1x1, five stages, cooperative, direct epilogue, persistent, row raster took 0.38 us
a k-block on 4096 x 1536 x 7168 (predicted 1.52x its time) and 0.72 us on 2048 x 6144 x
4096 (0.86x), where the model gives both 0.53 us; and 256x64 tiles in 2x1 clusters, five
stages, direct, non-persistent, column raster ran at half the predicted rate on every
8192-row shape (0.48-0.50x), the same tiles elsewhere near it. This times, each verified
against float64 as in a sweep:

* ``grid``: three configurations (the 64x256 one above, 128x256 2x1 four-stage
  cooperative TMA-store, 128x128 1x1 six-stage ping-pong) on shapes of one K (4096) whose
  tile grids differ (M x N from 1536 x 4096 to 2048 x 12288 and their transposes), in
  every raster, each also as the load-only kernel (its consumers release a slot as it
  lands: the memory system alone);
* ``cluster``: the 256x64 2x1 five-stage tiles on 8192 x 8192 x 8192 in each raster,
  persistent and not, with either epilogue, and 1x1 and four stages beside them;
* ``--sweep`` instead: the 64x256 and 128x128 configurations in row raster on M = 4096
  with every tile-column count from 3 (6) to 20 (26): the heavy panel's readers that many
  CTAs apart in launch order.

It prints per configuration and shape the time (us) of a k-block of one CTA's tile
(time / (tiles per CTA * k-blocks)) for each raster. A GPU-side script: numpy +
cuda-python only. With ``--predict probe.csv`` (no GPU; polars) it reads a run back and
sets the fitted model's time over the measured beside each full-mode run.

    PYTHONPATH=src python3 benchmarks/footprint_probe.py [--out probe.csv] [--sweep]
    python benchmarks/footprint_probe.py --predict probe.csv [--sweep]
"""

from __future__ import annotations

import math
import sys

K = 4096
GRID_SHAPES = ((4096, 1536), (1536, 4096), (2048, 6144), (6144, 2048), (4096, 4096), (8192, 1536),
               (1536, 8192), (2048, 12288), (12288, 2048))
# (tile_m, tile_n, stages, cluster_m, cluster_n, schedule, epilogue, persistent)
GRID_CONFIGS = ((64, 256, 5, 1, 1, "cooperative", "direct", True),
                (128, 256, 4, 2, 1, "cooperative", "tma", True),
                (128, 128, 6, 1, 1, "pingpong", "tma", True))
RASTERS = ("row", "column", "grouped")
CLUSTER_SHAPE = (8192, 8192, 8192)
# (tile_m, tile_n, stages, cluster_m, cluster_n)
CLUSTER_CONFIGS = ((256, 64, 5, 2, 1), (256, 64, 4, 2, 1), (256, 64, 5, 1, 1))


# --sweep: the heavy panel's readers d = tiles_n apart in launch order (row raster, M = 4096)
SWEEP = ((64, 256, 5, "cooperative", "direct", range(3, 21)), (128, 128, 6, "pingpong", "tma", range(6, 27)))


def sweep_tasks() -> list[dict]:
    """--sweep's runs: each SWEEP configuration, persistent, row raster, on M = 4096 and
    N = tiles_n * TN for each tiles_n of its range, full then load-only."""
    from gemmperf.problem import KernelConfig

    out = []
    for tm, tn, st, schedule, epilogue, columns in SWEEP:
        for tiles_n in columns:
            for mode in ("full", "load-only"):
                cfg = KernelConfig(family="ws-hopper", dtype="bf16", tile_m=tm, tile_n=tn, tile_k=64, stages=st,
                                   persistent=True, raster="row", mode=mode, schedule=schedule, epilogue=epilogue)
                out.append({"probe": "sweep", "m": 4096, "n": tiles_n * tn, "k": K, **cfg.as_dict()})
    return out


def tasks() -> list[dict]:
    """The runs, in order: the grid runs (configuration, shape, raster, full then
    load-only), then the cluster runs (configuration, persistent, epilogue, raster)."""
    from gemmperf.problem import KernelConfig

    out = []
    for tm, tn, st, cm, cn, schedule, epilogue, persistent in GRID_CONFIGS:
        for m, n in GRID_SHAPES:
            for raster in RASTERS:
                for mode in ("full", "load-only"):
                    cfg = KernelConfig(family="ws-hopper", dtype="bf16", tile_m=tm, tile_n=tn, tile_k=64, stages=st,
                                       cluster_m=cm, cluster_n=cn, persistent=persistent, raster=raster, mode=mode,
                                       schedule=schedule, epilogue=epilogue)
                    out.append({"probe": "grid", "m": m, "n": n, "k": K, **cfg.as_dict()})
    m, n, k = CLUSTER_SHAPE
    for tm, tn, st, cm, cn in CLUSTER_CONFIGS:
        for persistent in (False, True):
            for epilogue in ("direct", "tma"):
                for raster in RASTERS:
                    cfg = KernelConfig(family="ws-hopper", dtype="bf16", tile_m=tm, tile_n=tn, tile_k=64, stages=st,
                                       cluster_m=cm, cluster_n=cn, persistent=persistent, raster=raster,
                                       schedule="cooperative", epilogue=epilogue)
                    out.append({"probe": "cluster", "m": m, "n": n, "k": k, **cfg.as_dict()})
    return out


def label(task: dict) -> dict:
    return {"probe": task["probe"], "shape": f"{task['m']}x{task['n']}x{task['k']}",
            "config": f"{task['tile_m']}x{task['tile_n']} {task['cluster_m']}x{task['cluster_n']} s{task['stages']} "
                      f"{task['schedule']} {task['epilogue']} {'persistent' if task['persistent'] else 'launch'}",
            "raster": task["raster"], "mode": task["mode"], "kblock_runs": kblock_runs(task)}


def kblock_runs(task: dict) -> int:
    """k-blocks one CTA runs one after another: its tiles (tiles over the CTAs in flight,
    132 SMs, rounded up) times the k-blocks of a tile."""
    tiles = math.ceil(task["m"] / task["tile_m"]) * math.ceil(task["n"] / task["tile_n"])
    return math.ceil(tiles / 132) * math.ceil(task["k"] / task["tile_k"])


def summary(rows: list[dict], extra: dict | None = None) -> list[str]:
    """One line a configuration, shape and mode: us a k-block in each raster (and, with
    ``extra``, the model's time over the measured after each)."""
    out = []
    groups = dict.fromkeys((r["probe"], r["config"], r["shape"], r["mode"]) for r in rows)
    for probe, config, shape, mode in groups:
        cells = []
        for raster in RASTERS:
            r = next((r for r in rows if (r["probe"], r["config"], r["shape"], r["mode"], r["raster"])
                      == (probe, config, shape, mode, raster)), None)
            if r is None or r["status"] != "ok":
                cells.append(f"{raster} {'-' if r is None else r['status']:>7}")
                continue
            cell = f"{raster} {float(r['time_us']) / int(r['kblock_runs']):7.3f}"
            if extra and (config, shape, mode, raster) in extra:
                cell += f" ({extra[config, shape, mode, raster]:.2f}x)"
            cells.append(cell)
        out.append(f"{config:<44} {shape:<16} {mode:<9} " + "  ".join(cells))
    return out


def predict(path, sweep: bool = False) -> list[str]:
    """The run at ``path`` (of ``--sweep`` with ``sweep``) beside the fitted model
    (probes.predicted): each full-mode run's predicted over measured time."""
    from probes import measured, predicted, read_csv

    full = [t for t in (sweep_tasks() if sweep else tasks()) if t["mode"] == "full"]
    rows = read_csv(path)
    times = measured(rows, ("config", "shape", "mode", "raster"))
    ratio = {}
    for t, p in zip(full, predicted([{c: v for c, v in t.items() if c != "probe"} for t in full])):
        key = tuple(label(t)[c] for c in ("config", "shape", "mode", "raster"))
        if key in times:
            ratio[key] = p / times[key]
    logs = [math.log(v) for v in ratio.values()]
    mape = 100 * sum(abs(v - 1) for v in ratio.values()) / len(ratio)
    return summary(rows, ratio) + [f"predicted / measured over {len(ratio)} full runs: geomean "
                                   f"{math.exp(sum(logs) / len(logs)):.3f}, MAPE {mape:.1f}%"]


def main(argv=None) -> int:
    if argv is None:
        argv = sys.argv[1:]
    if argv[:1] == ["--predict"] and len(argv) in (2, 3) and argv[2:] in ([], ["--sweep"]):
        print("\n".join(predict(argv[1], sweep=argv[2:] == ["--sweep"])))
        return 0
    from probes import run, start

    a, gpu, meas = start(__doc__, argv, {"sweep": "the heavy panel's readers 3 to 26 CTAs apart (row raster)"})
    rows = run(a, gpu, meas, sweep_tasks() if a.sweep else tasks(), label)
    print("\nus a k-block of one CTA (time / (tiles per CTA * k-blocks a tile)), by raster")
    print("\n".join(summary(rows)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
