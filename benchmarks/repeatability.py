"""The noise floor of the accuracy figures: the same configurations measured twice.

Two measurement tables of one GPU model (another machine, another day) are joined on
their configuration keys, and the second's times are scored as a "prediction" of the
first's with the accuracy metrics of the protocol (MAPE, p95, per-shape Spearman, regret
with ties at their mean). No model can be scored better than this against the first
table, so it is the floor under issue 17's targets.

    python benchmarks/repeatability.py results/h100-sxm5-80gb/shipped/fp8/measurements/random.csv \\
        benchmarks/results/repeat/h100_fp8_random_2026-11-25.csv

With ``--predictions P`` (the ``<grouping>.parquet`` that ``accuracy_protocol.py --out``
writes) the protocol's out-of-sample predictions of those rows are scored against the
first table, each repeat, and the geometric mean of every measurement of a row (a target
with less scatter): how much of the model's error the scatter makes.

    python benchmarks/repeatability.py SHIPPED.csv REPEAT.csv [REPEAT2.csv ...] --predictions P.parquet
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


PREDICTED = ("fitted_us", "corrected_us")  # the protocol's out-of-sample columns scored


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("first", help="measurement table (the reference)")
    p.add_argument("second", nargs="+", help="the same configurations measured again (one or more)")
    p.add_argument("--predictions", default="", help="accuracy_protocol.py --out's <grouping>.parquet")
    p.add_argument("--testlist", default="", help="the predictions' testlist (default: the first table's name)")
    args = p.parse_args(argv)
    sys.path.insert(0, str(ROOT / "src"))
    import polars as pl

    from gemmperf.fit.accuracy import metrics
    from gemmperf.tables import CONFIG_KEY, KEY_COLUMNS, read_measurements

    a = read_measurements(args.first).filter(pl.col("status") == "ok")
    again = [read_measurements(x).filter(pl.col("status") == "ok") for x in args.second]
    keys = [c for c in KEY_COLUMNS if c in a.columns and all(c in b.columns for b in again)] + ["family", "dtype"]
    keys = list(dict.fromkeys(keys))
    both = a
    for i, b in enumerate(again):
        both = both.join(b.select(*keys, pl.col("time_us").alias(f"again{i}_us")), on=keys, how="inner")
    print(f"{args.first}: {a.height} ok rows on {', '.join(a.get_column('gpu').unique().sort().to_list())}")
    for x, b in zip(args.second, again):
        print(f"{x}: {b.height} ok rows on {', '.join(b.get_column('gpu').unique().sort().to_list())}")
    print(f"paired: {both.height} configurations, {both.select(keys[:3]).unique().height} shapes")
    for i, x in enumerate(args.second):
        if len(again) > 1:
            print(f"\n{x} as a prediction of {args.first}:")
        m = metrics(both, pred=f"again{i}_us")
        for name in ("mape_pct", "median_ape_pct", "p95_ape_pct", "max_ape_pct", "within_10pct", "geomean_ratio",
                     "spearman_mean", "regret_mean_pct", "regret_max_pct"):
            print(f"{name:<16} {m[name]:8.3f}")
    if args.predictions:
        testlist = args.testlist or Path(args.first).stem
        pred = pl.read_parquet(args.predictions)
        # a configuration of two testlists is predicted in each list's fold: keep this list's
        pred = pred.filter(pl.col("testlist") == testlist) if "testlist" in pred.columns else pred
        print(f"\npredictions of testlist {testlist}")
        print_predictions(pred, both, len(again), metrics, CONFIG_KEY)
    return 0


def print_predictions(pred, both, repeats: int, metrics, config_key) -> None:
    """The protocol's predictions of the paired rows, scored against each measurement of
    them and against the geometric mean of all of them."""
    import polars as pl

    targets = ["time_us", *(f"again{i}_us" for i in range(repeats))]
    on = [c for c in config_key if c in pred.columns and c in both.columns]
    both = both.with_columns([pl.col(c).cast(pred.schema[c]) for c in on])
    rows = pred.select(*on, *[c for c in PREDICTED if c in pred.columns]).join(
        both.select(*on, *targets), on=on, how="inner")
    rows = rows.with_columns(mean_us=pl.concat_list([pl.col(t).log() for t in targets]).list.mean().exp())
    print(f"\npredictions: {rows.height} of the paired rows; MAPE / p95 / Spearman / regret %")
    print(f"{'model':<14}" + "".join(f"{t:>28}" for t in [*targets, "mean_us"]))
    for model in (c for c in PREDICTED if c in rows.columns):
        cells = []
        for t in [*targets, "mean_us"]:
            m = metrics(rows, pred=model, meas=t)
            cells.append(f"{m['mape_pct']:.2f} / {m['p95_ape_pct']:.1f} / {m['spearman_mean']:.3f} / "
                         f"{m['regret_mean_pct']:.2f}")
        print(f"{model:<14}" + "".join(f"{c:>28}" for c in cells))


if __name__ == "__main__":
    sys.exit(main())
