"""The noise floor of the accuracy figures: the same configurations measured twice.

Two measurement tables of one GPU model (another machine, another day) are joined on
their configuration keys, and the second's times are scored as a "prediction" of the
first's with the accuracy metrics of the protocol (MAPE, p95, per-shape Spearman, regret
with ties at their mean). No model can be scored better than this against the first
table, so it is the floor under issue 17's targets.

    python benchmarks/repeatability.py results/h100-sxm5-80gb/shipped/fp8/measurements/random.csv \\
        benchmarks/results/repeat/h100_fp8_random_2026-11-25.csv
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("first", help="measurement table (the reference)")
    p.add_argument("second", help="the same configurations measured again")
    args = p.parse_args(argv)
    sys.path.insert(0, str(ROOT / "src"))
    import polars as pl

    from gemmperf.fit.accuracy import metrics
    from gemmperf.tables import KEY_COLUMNS, read_measurements

    a, b = (read_measurements(x).filter(pl.col("status") == "ok") for x in (args.first, args.second))
    keys = [c for c in KEY_COLUMNS if c in a.columns and c in b.columns] + ["family", "dtype"]
    keys = list(dict.fromkeys(keys))
    both = a.join(b.select(*keys, pl.col("time_us").alias("again_us"), pl.col("gpu").alias("again_gpu")),
                  on=keys, how="inner")
    print(f"{args.first}: {a.height} ok rows on {', '.join(a.get_column('gpu').unique().sort().to_list())}")
    print(f"{args.second}: {b.height} ok rows on {', '.join(b.get_column('gpu').unique().sort().to_list())}")
    print(f"paired: {both.height} configurations, {both.select(keys[:3]).unique().height} shapes")
    m = metrics(both, pred="again_us")
    for name in ("mape_pct", "median_ape_pct", "p95_ape_pct", "max_ape_pct", "within_10pct", "geomean_ratio",
                 "spearman_mean", "regret_mean_pct", "regret_max_pct"):
        print(f"{name:<16} {m[name]:8.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
