"""Collection speed and repeatability (runs on a GPU machine).

    PYTHONPATH=src python3 benchmarks/collect_speed.py [--testlist testlists/squares.csv] [--n 50]

1. Cold compile cache: a sweep of N configurations with an empty kernel cache.
2. Warm compile cache: the same N configurations again, measured afresh.
3. Repeatability: a third measurement of the same N configurations, compared with the
   second: median and worst relative difference of time_us.
Rates are verified configurations per second of wall time on the GPU machine (the
sweep's whole cost: compile, verify against float64, time).
"""

from __future__ import annotations

import argparse
import csv
import os
import statistics
import sys
import tempfile
import time
from functools import partial
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "src"))

from gemmperf.bench.collect import tasks_for  # noqa: E402
from gemmperf.bench.measure import Measurer  # noqa: E402
from gemmperf.bench.sweep import run_sweep, task_key  # noqa: E402
from gemmperf.hardware import probe  # noqa: E402
from gemmperf.problem import read_testlist  # noqa: E402


def rows(path: Path) -> dict:
    with path.open(newline="") as fh:
        return {task_key(r): r for r in csv.DictReader(fh)}


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--testlist", default="testlists/squares.csv")
    ap.add_argument("--n", type=int, default=50)
    ap.add_argument("--out", default=os.environ.get("OUT", "."))
    a = ap.parse_args()
    gpu = probe()
    shapes = read_testlist(a.testlist)
    tasks = tasks_for(shapes, gpu, ["ws-hopper"], "bf16", "medium")
    step = max(1, len(tasks) // a.n)
    tasks = tasks[::step][: a.n]
    out = Path(a.out)
    results = {}
    with tempfile.TemporaryDirectory() as cache:
        os.environ["GEMMPERF_CACHE"] = cache  # cold: nothing compiled yet
        for label in ("cold", "warm", "repeat"):
            path = out / f"collect_speed_{label}.csv"
            path.unlink(missing_ok=True)
            t0 = time.perf_counter()
            counts = run_sweep(tasks, path, partial(Measurer, gpu), progress=False)
            wall = time.perf_counter() - t0
            results[label] = (counts, wall, rows(path))
    print(f"GPU: {gpu.name}, {len(tasks)} configurations from {a.testlist}")
    print(f"{'cache':8} {'ok':>4} {'wall s':>8} {'verified cfg/s':>15}")
    for label in ("cold", "warm"):
        counts, wall, _ = results[label]
        print(f"{label:8} {counts.get('ok', 0):>4} {wall:>8.1f} {counts.get('ok', 0) / wall:>15.2f}")
    a2, a3 = results["warm"][2], results["repeat"][2]
    diffs = [abs(float(a3[k]["time_us"]) / float(a2[k]["time_us"]) - 1) for k in a2
             if k in a3 and a2[k]["status"] == a3[k]["status"] == "ok"]
    print(f"repeatability over {len(diffs)} configurations: median {100 * statistics.median(diffs):.2f}%, "
          f"worst {100 * max(diffs):.2f}% (target: median <= 2%)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
