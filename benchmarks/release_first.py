"""Benchmark: what would freeing a ring slot before the next k-block's issue buy on real shapes?

ws-hopper's consumer frees k-block j - 1's slot once j - 1's wgmmas are done and j's are
issued; ring_depth_probe.py --release found that freeing it before j's issue
(``WsHopper.release_first``) takes about half a multiply off a shallow ring of 256-row
tiles and about 0.05 us off every other two-stage ring, with nothing lost at four stages.
This times, on development shapes of the H100 reference data, each shape's fastest
measured configurations and its fastest shallow rings, as measured and freed first, in
the same process: whether the change would move each shape's best time, and which
configurations it would move. Every run is verified against float64 as in a sweep.

``--plan`` (no GPU; polars) picks the runs from the shipped H100 measurements and writes
them to PLAN: SHAPES_PER_LIST shapes of each development testlist (a seeded sample), and
for each its three fastest measured configurations (bf16, full mode), its fastest with a
256-row tile at two or three stages and its fastest of any other tile at two or three
stages. The GPU run reads PLAN (numpy + cuda-python only), times every run as measured
and then freed first, and prints per shape the best time each way, then the geometric
mean of freed-first over as-measured by kind of run. ``--summary run.csv`` prints the same
from a run's CSV.

    python benchmarks/release_first.py --plan
    PYTHONPATH=src python3 benchmarks/release_first.py [--out run.csv]
    python benchmarks/release_first.py --summary run.csv
"""

from __future__ import annotations

import math
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PLAN = ROOT / "benchmarks" / "results" / "release_first" / "plan_h100.csv"
SHIPPED = ROOT / "results" / "h100-sxm5-80gb" / "shipped" / "measurements"
LISTS = ("decode", "dsv3", "llm", "paper-grid", "random", "squares")  # the development testlists
SHAPES_PER_LIST = 4
SEED = 20261127
FASTEST = 3
CONFIG = ("family", "dtype", "tile_m", "tile_n", "tile_k", "stages", "cluster_m", "cluster_n", "persistent",
          "raster", "mode", "epilogue", "schedule", "group_m", "persistent_ctas", "split_k", "stream_k")


def plan() -> list[dict]:
    """The runs: per sampled shape, its fastest measured configurations (``kind``
    "fastest"), its fastest 256-row two- or three-stage ring ("shallow-256") and its
    fastest other two- or three-stage ring ("shallow"), each once."""
    import polars as pl

    from gemmperf import tables

    out = []
    for name in LISTS:
        rows = tables.read_measurements(SHIPPED / f"{name}.csv").filter(
            pl.col("family") == "ws-hopper", pl.col("dtype") == "bf16", pl.col("status") == "ok",
            pl.col("mode") == "full")
        shapes = rows.select("m", "n", "k").unique().sort("m", "n", "k").sample(SHAPES_PER_LIST, seed=SEED)
        for m, n, k in shapes.iter_rows():
            runs = rows.filter(pl.col("m") == m, pl.col("n") == n, pl.col("k") == k).sort("time_us")
            shallow = runs.filter(pl.col("stages") <= 3)
            picks = [("fastest", r) for r in runs.head(FASTEST).iter_rows(named=True)]
            picks += [("shallow-256", r) for r in shallow.filter(pl.col("tile_m") == 256).head(1).iter_rows(named=True)]
            picks += [("shallow", r) for r in shallow.filter(pl.col("tile_m") != 256).head(1).iter_rows(named=True)]
            seen = set()
            for kind, r in picks:
                key = tuple(r[c] for c in CONFIG)
                if key not in seen:
                    seen.add(key)
                    out.append({"testlist": name, "m": m, "n": n, "k": k, "kind": kind,
                                "shipped_us": r["time_us"], **{c: r[c] for c in CONFIG}})
    return out


def read_plan(path=PLAN) -> list[dict]:
    """PLAN's runs as task rows (the configuration's fields typed as KernelConfig wants)."""
    from probes import read_tasks

    return read_tasks(path, floats=("shipped_us",))


def label(task: dict) -> dict:
    """The columns that name a run; ``config`` tells apart every configuration of a shape."""
    persistent = f"p{task['persistent_ctas'] or ''}" if task["persistent"] else "np"
    config = (f"{task['tile_m']}x{task['tile_n']} s{task['stages']} c{task['cluster_m']}x{task['cluster_n']} "
              f"{task['schedule']} {task['epilogue']} {task['raster']} g{task['group_m']} {persistent}")
    config += " stream-k" if task["stream_k"] else f" split-k {task['split_k']}" if task["split_k"] > 1 else ""
    return {"testlist": task["testlist"], "shape": f"{task['m']}x{task['n']}x{task['k']}", "kind": task["kind"],
            "config": config, "release": "first" if task["release_first"] else "after-issue",
            "shipped_us": task["shipped_us"]}


def summary(rows: list[dict]) -> list[str]:
    """Per shape the best time as measured and freed first; then, by kind of run, the
    geometric mean of freed-first over as-measured and its range."""
    t = {}
    for r in rows:
        if r["status"] == "ok":
            t[(r["testlist"], r["shape"], r["kind"], r["config"], r["release"])] = float(r["time_us"])
    runs = sorted({key[:4] for key in t if (*key[:4], "first") in t and (*key[:4], "after-issue") in t})
    out = ["shape                      best as measured  best freed first  ratio  (config freed first)"]
    ratios = []
    for shape in dict.fromkeys(key[:2] for key in runs):
        mine = [key for key in runs if key[:2] == shape]
        before = min(t[(*key, "after-issue")] for key in mine)
        after, best = min((t[(*key, "first")], key[3]) for key in mine)
        ratios.append(after / before)
        out.append(f"{shape[0]:<10} {shape[1]:<16} {before:12.2f} us {after:12.2f} us  {after / before:.3f}  ({best})")
    out.append(f"best time, freed first over as measured: geomean {_geomean(ratios):.3f} over {len(ratios)} shapes, "
               f"{min(ratios):.3f}-{max(ratios):.3f}")
    for kind in ("fastest", "shallow-256", "shallow"):
        r = [t[(*key, "first")] / t[(*key, "after-issue")] for key in runs if key[2] == kind]
        if r:
            out.append(f"{kind:<12} runs: freed first / as measured geomean {_geomean(r):.3f} over {len(r)}, "
                       f"{min(r):.3f}-{max(r):.3f}")
    return out


def _geomean(values: list[float]) -> float:
    return math.exp(sum(math.log(v) for v in values) / len(values))


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["--plan"]:
        from probes import write_csv

        runs = plan()
        PLAN.parent.mkdir(parents=True, exist_ok=True)
        write_csv(PLAN, runs)
        print(f"{PLAN}: {len(runs)} runs over {len({(r['m'], r['n'], r['k']) for r in runs})} shapes")
        return 0
    if argv[:1] == ["--summary"]:
        from probes import read_csv

        if len(argv) != 2:
            raise SystemExit("usage: release_first.py --summary run.csv")
        print("\n".join(summary(read_csv(argv[1]))))
        return 0
    from probes import run_knobs, start

    a, gpu, meas = start(__doc__, argv)
    todo = [{**t, "release_first": first} for first in (False, True) for t in read_plan()]  # as measured first
    rows = run_knobs(a, gpu, meas, todo, label)
    print("\n" + "\n".join(summary(rows)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
