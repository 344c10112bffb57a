"""Where the run-to-run scatter of a measured time comes from: the same configurations
timed four times in one process, with the inputs where they were or moved elsewhere in
device memory.

The H200's bf16 tables repeat to 1.7-2.3% MAPE a week apart and 1.8% on two machine
starts the same day (``results/repeat/README.md``), while one measurement's own spread
over its repeats is 0.7%. This probe separates the two likely sources inside one
process on one card. For each shape of a testlist (the sweep's own sample: the same
configurations and seed), its configurations are timed by the collector's Measurer in
four passes, in turn:

- ``a``: as the sweep times them;
- ``b``: again at once, the same input buffers (the same addresses; seconds later);
- ``c``, ``d``: the inputs freed and allocated again behind a held block of device
  memory of a random size (seeded; 2-512 MiB, a different one for each), so A, B and C
  sit at other addresses, and on other physical pages.

If ``a``/``b`` differ as little as one measurement's spread while ``c``/``d`` differ as
much as two runs of the sweep, the scatter is where the data sit in memory, not the
clock or time.

    PYTHONPATH=src python3 benchmarks/noise_probe.py --gpu h200-sxm-141gb --testlist dsv3 \\
        --deadline 420 --out noise.csv
    python benchmarks/noise_probe.py --read noise.csv      # the table again, from the CSV

GPU side: numpy + cuda-python + the standard library. Prints, last, each pair of passes
compared as repeatability.py compares two tables (MAPE, p95 of the absolute percentage
difference, geometric mean ratio).
"""

from __future__ import annotations

import argparse
import csv
import math
import random
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PASSES = ("a", "b", "c", "d")
PAIRS = (("a", "b"), ("c", "d"), ("a", "c"), ("b", "d"))
MIB = 1 << 20


def _pct(x: float, q: float) -> float:
    xs = sorted(x)
    return xs[min(len(xs) - 1, max(0, math.ceil(q * len(xs)) - 1))]


def compare(rows: list[dict]) -> list[tuple]:
    """(first, second, pairs, MAPE %, p95 %, max %, geomean ratio) of each pair of passes,
    over the configurations timed ok in both."""
    times = {}
    for r in rows:
        if r["status"] == "ok":
            times.setdefault(r["pass"], {})[r["task"]] = float(r["time_us"])
    out = []
    for one, two in PAIRS:
        common = sorted(set(times.get(one, {})) & set(times.get(two, {})))
        if not common:
            continue
        ratios = [times[two][t] / times[one][t] for t in common]
        ape = [abs(x - 1) * 100 for x in ratios]
        out.append((one, two, len(common), sum(ape) / len(ape), _pct(ape, 0.95), max(ape),
                    math.exp(sum(map(math.log, ratios)) / len(ratios))))
    return out


def print_table(rows: list[dict]) -> None:
    print("\npasses   pairs   MAPE %   p95 %   max %  geomean")
    for one, two, n, mape, p95, top, gm in compare(rows):
        print(f"{one} / {two}  {n:6d}  {mape:7.2f}  {p95:6.2f}  {top:6.1f}  {gm:7.4f}")
    spreads = [float(r["spread"]) for r in rows if r["status"] == "ok" and r.get("spread") not in (None, "")]
    if spreads:
        print(f"one timing's own spread over its repeats: mean {100 * sum(spreads) / len(spreads):.2f}%")


def read(path: str) -> int:
    with open(path, newline="") as fh:
        print_table(list(csv.DictReader(fh)))
    return 0


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--gpu", default="auto", help="slug the sample is drawn for (auto: probe)")
    p.add_argument("--testlist", default="dsv3")
    p.add_argument("--dtype", default="bf16")
    p.add_argument("--shapes", type=int, default=0, help="the first N shapes only (0: all)")
    p.add_argument("--deadline", type=float, default=420.0, help="seconds; shapes not begun by then are left out")
    p.add_argument("--seed", type=int, default=7, help="of the held blocks' sizes")
    p.add_argument("--out", default="", help="CSV of every timing")
    p.add_argument("--read", default="", help="print the table of a CSV this probe wrote, and stop")
    args = p.parse_args(argv)
    if args.read:
        return read(args.read)
    sys.path.insert(0, str(ROOT / "src"))
    from gemmperf.bench.collect import SAMPLE_COUNT, SAMPLE_SEED, tasks_for
    from gemmperf.bench.measure import Measurer
    from gemmperf.hardware import get_gpu, probe
    from gemmperf.kernels.launch import DeviceBuffer
    from gemmperf.problem import read_testlist

    gpu = probe(0) if args.gpu == "auto" else get_gpu(args.gpu)
    shapes = read_testlist(ROOT / "testlists" / f"{args.testlist}.csv", args.dtype)
    shapes = shapes[: args.shapes] if args.shapes else shapes
    tasks = tasks_for(shapes, gpu, ["ws-hopper"], args.dtype, "sample", (SAMPLE_COUNT, SAMPLE_SEED))
    by_shape: dict[tuple, list[dict]] = {}
    for t in tasks:
        by_shape.setdefault((t["m"], t["n"], t["k"]), []).append(t)
    meas = Measurer(gpu)  # the collector's settings: cold L2, 2% spread, 2 s cap
    rng = random.Random(args.seed)
    held: DeviceBuffer | None = None
    rows, t0 = [], time.monotonic()

    def moved() -> None:
        """Free the inputs and the held block; hold a new block; the next timing allocates after it."""
        nonlocal held
        for a, b in meas.pool:
            a.free()
            b.free()
        meas.pool, meas.pool_key = [], None
        if held is not None:
            held.free()
        held = DeviceBuffer(rng.randint(2, 512) * MIB + rng.randrange(0, 64) * 4096)

    try:
        for shape, group in by_shape.items():
            if time.monotonic() - t0 > args.deadline:
                print(f"deadline: {len(rows) // len(PASSES)} timings a pass, shape {shape} not begun")
                break
            for name in PASSES:
                if name in ("c", "d"):
                    moved()
                for i, task in enumerate(group):
                    out = meas(dict(task))
                    rows.append({"pass": name, "task": f"{shape}:{i}", "m": shape[0], "n": shape[1], "k": shape[2],
                                 "status": out.get("status"), "time_us": out.get("time_us"),
                                 "spread": out.get("spread"), "clock_end": out.get("sm_clock_end_mhz"),
                                 "a_ptr": hex(meas.pool[0][0].ptr) if meas.pool else "",
                                 "held_mib": round(held.nbytes / MIB, 2) if held is not None else 0})
            print(f"[{time.monotonic() - t0:6.0f} s] {shape}: {len(group)} configurations x {len(PASSES)} passes",
                  flush=True)
    finally:
        if held is not None:
            held.free()
    if args.out:
        with open(args.out, "w", newline="") as fh:
            w = csv.DictWriter(fh, fieldnames=list(rows[0]) if rows else ["pass"])
            w.writeheader()
            w.writerows(rows)
    print_table(rows)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
