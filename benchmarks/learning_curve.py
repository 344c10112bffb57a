"""What more development data of the same kind would buy: leave-one-testlist-out with the
residual correction trained on a share of each fold's training rows.

The constants are fitted once per left-out testlist on all its training rows (as the
protocol does; with ``--refit`` on the share too). The correction, as shipped, is then
trained on a share of those rows, drawn two ways at the same row count:
  shape  whole shapes (fewer shapes, each with all its sampled configurations),
  row    rows within every shape (every shape, fewer configurations each).
Prints, per draw and share (mean over seeds, the seeds' range in brackets), the fitted and
corrected MAPE, p95, per-shape Spearman and regret (ties at their mean) of every
development row, and a power law a + b * share^-c fitted to the corrected MAPE by shape:
its value at twice the shapes and its limit a. The held-out list is never read.

    python benchmarks/learning_curve.py [--gpu h100-sxm5-80gb] [--dtype bf16] [--jobs 2]
        [--fractions 0.25,0.5,0.75] [--seeds 2] [--by shape,row] [--refit]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))
from model_ceiling import development  # noqa: E402
from residual_sweep import fitted_folds, run_tasks, use_src  # noqa: E402

DRAWS = ("shape", "row")


def subsample(train, by: str, fraction: float, seed):
    """``fraction`` of the training rows ``train`` (with a ``shape`` column): whole shapes
    drawn at random (``by`` "shape", at least one), or in every shape ceil(fraction x its
    rows) drawn at random ("row"). A fraction of 1 or more keeps every row."""
    import polars as pl

    if fraction >= 1.0:
        return train
    rng = np.random.default_rng(seed)
    if by == "shape":
        shapes = np.sort(train.get_column("shape").unique().to_numpy())
        keep = rng.choice(shapes, max(1, round(fraction * len(shapes))), replace=False)
        return train.filter(pl.col("shape").is_in(keep.tolist()))
    if by == "row":
        drawn = pl.col("_draw").rank("ordinal").over("shape") <= (pl.len().over("shape") * fraction).ceil()
        return train.with_columns(pl.Series("_draw", rng.random(train.height))).filter(drawn).drop("_draw")
    raise ValueError(f"by: {by!r}, not one of {DRAWS}")


def _score(task):
    """((draw, fraction, seed), mean training rows per fold, the left-out lists' fitted and
    corrected predictions) for one draw. ``pset`` None: ``folds`` hold predictions of the
    constants fitted on the whole training rows; else raw rows, the constants refitted on
    the share."""
    import polars as pl

    from gemmperf.fit import constants as C
    from gemmperf.fit.accuracy import single_thread_blas
    from gemmperf.fit.residual import Correction
    from gemmperf.models import ws_pipelined as W

    (by, fraction, seed), folds, sms, pset = task
    out, rows = [], []
    with single_thread_blas():
        for i, (fold, train, test) in enumerate(folds):
            part = subsample(train, by, fraction, (seed, i))
            if pset is not None:
                fitted, _ = C.fit_constants(part, pset)
                part, test = W.predict(part, fitted), W.predict(test, fitted)
            rows.append(part.height)
            corr = Correction.fit(part, sms)
            out.append(corr(test).with_columns(pl.lit(fold).alias("fold"), pl.col("predicted_us").alias("fitted_us")))
    return (by, fraction, seed), float(np.mean(rows)), pl.concat(out, how="diagonal_relaxed")


def power_law(fractions, values):
    """(a, b, c) of values ~ a + b * fraction^-c, least squares over c in 0.05..4 (a and b
    linear for each c); None with fewer than three distinct fractions."""
    f, v = np.asarray(fractions, dtype=float), np.asarray(values, dtype=float)
    if len(np.unique(f)) < 3:
        return None
    best = None
    for c in np.linspace(0.05, 4.0, 791):
        X = np.column_stack([np.ones_like(f), f ** -c])
        coef, *_ = np.linalg.lstsq(X, v, rcond=None)
        sse = float(np.sum((X @ coef - v) ** 2))
        if best is None or sse < best[0]:
            best = (sse, float(coef[0]), float(coef[1]), float(c))
    return best[1:]


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--gpu", default="h100-sxm5-80gb")
    p.add_argument("--dtype", default="bf16")
    p.add_argument("--jobs", type=int, default=0, help="worker processes (0: every core)")
    p.add_argument("--fractions", default="0.25,0.5,0.75", help="shares of each fold's training rows (and 1)")
    p.add_argument("--seeds", type=int, default=2, help="draws per share")
    p.add_argument("--by", default=",".join(DRAWS), help=f"of {', '.join(DRAWS)}")
    p.add_argument("--refit", action="store_true", help="fit the constants on the share too")
    args = p.parse_args(argv)
    draws = args.by.split(",")
    try:
        fractions = sorted({float(f) for f in args.fractions.split(",")})
    except ValueError:
        fractions = []
    if not fractions or not all(0.0 < f < 1.0 for f in fractions) or args.seeds < 1:
        print(f"--fractions: shares in (0, 1), got {args.fractions!r}; --seeds at least 1, got {args.seeds}",
              file=sys.stderr)
        return 2
    if any(d not in DRAWS for d in draws):
        print(f"--by: {args.by!r}; known: {', '.join(DRAWS)}", file=sys.stderr)
        return 2
    use_src()
    import polars as pl

    from gemmperf.fit import protocol as P

    start = time.monotonic()
    dev, pset = development(args.gpu, args.dtype)
    if args.refit:
        folds = [(fold, dev[train], dev[test]) for fold, train, test in P.folds(dev, "testlist")]
    else:
        folds = fitted_folds(dev, pset)
        print(f"{dev.height} development rows, constants fitted per left-out list in "
              f"{time.monotonic() - start:.0f} s")
    keys = [("shape", 1.0, 0)] + [(by, f, s) for by in draws for f in fractions for s in range(args.seeds)]
    tasks = [(key, folds, pset.gpu.sms, pset if args.refit else None) for key in keys]
    results = run_tasks(_score, tasks, args.jobs)
    scored = []
    for (by, fraction, seed), rows, preds in results:
        s = P.summary(preds, columns={"fitted": "fitted_us", "corrected": "corrected_us"}).filter(
            pl.col("class") == "all")
        fig = {r["model"]: r for r in s.iter_rows(named=True)}
        scored.append({"by": by, "fraction": fraction, "seed": seed, "rows": rows,
                       "fitted": fig["fitted"]["mape_pct"], "mape": fig["corrected"]["mape_pct"],
                       "p95": fig["corrected"]["p95_ape_pct"], "spearman": fig["corrected"]["spearman_mean"],
                       "regret": fig["corrected"]["regret_mean_pct"]})
    table = pl.DataFrame(scored)
    print(f"\n{args.gpu} {args.dtype}, constants fitted on {'the share' if args.refit else 'all training rows'}; "
          f"{time.monotonic() - start:.0f} s\n")
    print("| draw | share | training rows a fold | fitted MAPE % | corrected MAPE % | p95 % | Spearman | regret % |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    agg = table.group_by("by", "fraction").agg(
        pl.len().alias("seeds"), pl.col("rows").mean(), pl.col("fitted").mean(), pl.col("mape").mean(),
        pl.col("mape").min().alias("lo"), pl.col("mape").max().alias("hi"), pl.col("p95").mean(),
        pl.col("spearman").mean(), pl.col("regret").mean()).sort("by", "fraction", descending=[True, False])
    for r in agg.iter_rows(named=True):
        spread = f" [{r['lo']:.2f}-{r['hi']:.2f}]" if r["seeds"] > 1 else ""
        print(f"| {'all' if r['fraction'] == 1.0 else r['by']} | {r['fraction']:.2f} | {r['rows']:.0f} | "
              f"{r['fitted']:.2f} | {r['mape']:.2f}{spread} | {r['p95']:.1f} | {r['spearman']:.3f} | "
              f"{r['regret']:.2f} |")
    by_shape = table.filter(pl.col("by") == "shape")
    law = power_law(by_shape["fraction"].to_list(), by_shape["mape"].to_list())
    if law is None:
        print("\npower law: fewer than three shares drawn by shape")
    else:
        a, b, c = law
        print(f"\ncorrected MAPE by shape ~ {a:.2f} + {b:.3f} x share^-{c:.2f}: "
              f"{a + b * 2.0 ** -c:.2f}% with twice the shapes, {a:.2f}% the limit (an extrapolation)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
