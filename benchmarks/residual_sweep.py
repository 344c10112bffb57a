"""The residual correction's tree settings and features, leave-one-testlist-out on the
development data.

The constants are fitted once per left-out testlist (on the other lists, as the protocol
does); only the correction varies: each variant is trained on the fold's training
predictions and scored on the left-out list. A variant is either tree settings
(``VARIANTS``) or the shipped trees on other features (``FEATURE_VARIANTS``: features
dropped from and added to ``fit.residual.FEATURES``). Prints, per variant, the corrected MAPE,
p95, per-shape Spearman and regret (ties at their mean) of every development row, with
the fitted model's figures for reference. The held-out list is never read.

With ``--random-states 0,1,2`` each variant is trained once per state (the trees'
feature order at tied splits) and printed as the mean over the states with the range of
its MAPE. With every row and feature (the shipped trees) the state moves the H100's
corrected MAPE by 0.002 of a point (2026-12-04): the trees' noise is not their state but
how a change of their inputs (a step's refitted constants) reshuffles their splits.

    python benchmarks/residual_sweep.py [--gpu h100-sxm5-80gb] [--dtype bf16] [--jobs 2]
        [--variants leaf8,leaf32,without-period,...] [--random-states 0]
"""

from __future__ import annotations

import argparse
import contextlib
import multiprocessing as mp
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# The settings shipped from issue 17 step 16 to step 21 (1200 trees of depth 4, learning
# rate 0.05, Huber loss, leaves of 32 rows, every row and feature); the variants named
# until step 21 are changes of these, so each name keeps the figures recorded for it.
# Until step 43 the trees were grown on every split point with Huber loss (EXACT).
EXACT = {"splits": "exact", "loss": "huber", "learning_rate": 0.05}
STEP16 = {"n_estimators": 1200, "max_depth": 4, "max_leaf_nodes": None, **EXACT}
# name -> ResidualRegressor settings (those not named: its defaults')
VARIANTS = {
    "leaf8": {**STEP16, "min_samples_leaf": 8},
    "leaf16": {**STEP16, "min_samples_leaf": 16},
    "leaf32": {**STEP16, "min_samples_leaf": 32},
    "leaf64": {**STEP16, "min_samples_leaf": 64},
    "leaf128": {**STEP16, "min_samples_leaf": 128},
    "leaf8-600trees": {**STEP16, "min_samples_leaf": 8, "n_estimators": 600},
    "leaf8-300trees": {**STEP16, "min_samples_leaf": 8, "n_estimators": 300},
    "leaf8-depth3": {**STEP16, "min_samples_leaf": 8, "max_depth": 3},
    "leaf32-depth3": {**STEP16, "min_samples_leaf": 32, "max_depth": 3},
    "leaf8-rate0.02": {**STEP16, "min_samples_leaf": 8, "learning_rate": 0.02},
    "leaf8-absolute": {**STEP16, "min_samples_leaf": 8, "loss": "absolute_error"},
    # stochastic boosting on step 16's trees (each tree on a share of the rows or each
    # split on a share of the features, random_state 0)
    "subsample0.5": {**STEP16, "subsample": 0.5},
    "subsample0.8": {**STEP16, "subsample": 0.8},
    "max-features0.5": {**STEP16, "max_features": 0.5},
    "subsample0.5-max-features0.5": {**STEP16, "subsample": 0.5, "max_features": 0.5},
    # trees grown best split first to a number of leaves, no depth limit (step 22 kept 31)
    "leaves15": {"max_depth": None, "max_leaf_nodes": 15, "n_estimators": 1200, **EXACT},
    "leaves31": {"max_depth": None, "max_leaf_nodes": 31, "n_estimators": 600, **EXACT},  # steps 22-42
    "leaves63": {"max_depth": None, "max_leaf_nodes": 63, "n_estimators": 300, **EXACT},
    # split points among quantile bins, squared loss (step 43 shipped binned-2400trees); 31
    # leaves named, the default until step 53
    "binned-600trees": {"n_estimators": 600, "learning_rate": 0.05, "max_leaf_nodes": 31},
    "binned-1200trees": {"n_estimators": 1200, "learning_rate": 0.05, "max_leaf_nodes": 31},
    "binned-2400trees": {"n_estimators": 2400, "learning_rate": 0.025, "max_leaf_nodes": 31},
    "binned-3600trees": {"n_estimators": 3600, "learning_rate": 0.025, "max_leaf_nodes": 31},  # steps 46-51
    "binned-5400trees": {"n_estimators": 5400, "learning_rate": 0.025, "max_leaf_nodes": 31},  # step 52
    "binned-63leaves-2700trees": {"n_estimators": 2700, "learning_rate": 0.025, "max_leaf_nodes": 63},  # step 53
    "binned-leaf16-5400trees": {"n_estimators": 5400, "learning_rate": 0.025, "max_leaf_nodes": 31,
                                "min_samples_leaf": 16},  # tried at step 53
    "binned-127leaves-1350trees": {"n_estimators": 1350, "learning_rate": 0.025,
                                   "max_leaf_nodes": 127},  # tried at step 53
    "binned-1200trees-absolute": {"n_estimators": 1200, "learning_rate": 0.05, "loss": "absolute_error",
                                  "max_leaf_nodes": 31},
}
# name -> (FEATURES dropped, features added: name -> function of no argument giving a polars
# expression over a ws-pipelined prediction table); the shipped tree settings (step 16's
# until step 21: the figures recorded for these before step 22 are those trees'). Issue 17
# step 21 added period_over_math and period_over_load (benchmarks/MODEL_ACCURACY.md)
RING_TERMS = ("period_over_math", "period_over_load")
ROW_SHARES = ("ab_line_off", "ab_sector_off", "c_sector_off")  # fit.residual.ROW_SHARES (step 37)


def _col(name):
    import polars as pl

    return pl.col(name).cast(pl.Float64)


def period_over_max():
    """log2 of the ring's steady period over the larger of the k-block's multiply and its
    transfer: one feature where step 21 keeps two."""
    import polars as pl

    return (_col("stage_period_us") / pl.max_horizontal(_col("stage_math_us"), _col("stage_load_us"))).log(2)


def far_panel_kb():
    """log2 of the KB of distinct panels a wave reads a k-block of the operand whose readers
    sit apart in launch order (benchmarks/footprint_probe.py: the reads merge below 224-256
    KB): B's in row raster, A's in column and grouped raster (at most the wave's units or
    the group's rows)."""
    import polars as pl

    units_m = (_col("m") / _col("tile_m")).ceil() / _col("cluster_m")
    units_n = (_col("n") / _col("tile_n")).ceil() / _col("cluster_n")
    wave = _col("wave_ctas") / (_col("cluster_m") * _col("cluster_n"))
    kb = _col("tile_k") * 2 / 1024
    row = pl.min_horizontal(units_n, wave) * _col("tile_n") * _col("cluster_n") * kb
    column = pl.min_horizontal(units_m, wave) * _col("tile_m") * _col("cluster_m") * kb
    grouped = pl.min_horizontal(_col("group_m"), units_m, wave) * _col("tile_m") * _col("cluster_m") * kb
    raster = pl.col("raster")
    return pl.when(raster == "row").then(row).when(raster == "column").then(column).otherwise(grouped).log(2)


def _row_alignment_flags():
    """Step 37's ``ROW_SHARES`` as flags (1 where any row is off), from the columns
    ``fit.residual.row_shares`` gives the features: A's and B's rows off their 32-byte
    sector and 128-byte line (K's pitch), C's rows off their sector (N's pitch)."""
    import polars as pl

    flag = lambda share: (pl.col(f"_{share}") > 0).cast(pl.Float64)  # noqa: E731
    return {"ab_sector_flag": lambda: flag("ab_sector_off"), "ab_line_flag": lambda: flag("ab_line_off"),
            "c_sector_flag": lambda: flag("c_sector_off")}


FEATURE_VARIANTS = {
    "without-period": (RING_TERMS, {}),
    "period-over-max": (RING_TERMS, {"period_over_max": period_over_max}),
    "ring-share-wave-ctas": (RING_TERMS, {"ring_share": lambda: _col("ring_us") / _col("predicted_us"),
                                          "log_wave_ctas": lambda: _col("wave_ctas").log(2)}),
    "far-panel-kb": ((), {"far_panel_kb": far_panel_kb}),
    "six-ring-features": ((), {"ring_share": lambda: _col("ring_us") / _col("predicted_us"),
                               "log_wave_ctas": lambda: _col("wave_ctas").log(2),
                               "log_work_items": lambda: _col("work_items").log(2),
                               "slot_kb": lambda: (_col("tile_m") + _col("tile_n")) * _col("tile_k") * 2 / 1024}),
    # issue 17 step 37 added ROW_SHARES: without them, step 36's correction; row-alignment
    # has them as flags in their place (results/residual_sweep_*_2026-12-04.md)
    "without-row-shares": (ROW_SHARES, {}),
    "without-c-sector": (("c_sector_off",), {}),  # A's and B's shares only: step 35's try
    "row-alignment": (ROW_SHARES, _row_alignment_flags()),
}


@contextlib.contextmanager
def features_of(name: str):
    """Within it, the residual correction computes the features of variant ``name``
    (FEATURE_VARIANTS; any other name: FEATURES as shipped)."""
    from gemmperf.fit import residual

    if name not in FEATURE_VARIANTS:
        yield
        return
    drop, add = FEATURE_VARIANTS[name]
    shipped = residual.feature_exprs

    def exprs(sms):
        out = {k: e for k, e in shipped(sms).items() if k not in drop}
        return {**out, **{k: make() for k, make in add.items()}}

    residual.feature_exprs = exprs
    try:
        yield
    finally:
        residual.feature_exprs = shipped


def use_src():
    """gemmperf imported from this tree's src/ (in this process, or a spawned worker's)."""
    sys.path.insert(0, str(ROOT / "src"))


def fitted_folds(dev, pset):
    """[(left-out list, training predictions, left-out predictions)]: the constants fitted
    on the other lists, once per list, as the protocol does."""
    from gemmperf.fit import constants as C
    from gemmperf.fit import protocol as P
    from gemmperf.fit.accuracy import single_thread_blas
    from gemmperf.models import ws_pipelined as W

    folds = []
    with single_thread_blas():
        for fold, train, test in P.folds(dev, "testlist"):
            fitted, _ = C.fit_constants(dev[train], pset)
            folds.append((fold, W.predict(dev[train], fitted), W.predict(dev[test], fitted)))
    return folds


def run_tasks(score, tasks, jobs: int = 0) -> list:
    """[score(task) for task in tasks], on ``jobs`` worker processes (0: every core)."""
    from gemmperf.fit.accuracy import available_cores

    jobs = min(jobs or available_cores(), len(tasks))
    if jobs <= 1:
        return [score(t) for t in tasks]
    # spawned workers (polars is not fork-safe); each imports gemmperf from src/
    with ProcessPoolExecutor(jobs, mp_context=mp.get_context("spawn"), initializer=use_src) as ex:
        return list(ex.map(score, tasks))


def _score(task):
    """(variant, corrected predictions of every left-out list) for one variant."""
    import polars as pl

    from gemmperf.fit.accuracy import single_thread_blas
    from gemmperf.fit.residual import Correction

    name, settings, folds, sms = task
    out = []
    with single_thread_blas(), features_of(name):
        for fold, train, test in folds:
            corr = Correction.fit(train, sms, **settings)
            out.append(corr(test).with_columns(pl.lit(fold).alias("fold"), pl.col("predicted_us").alias("fitted_us")))
    return name, pl.concat(out, how="diagonal_relaxed")


def _states(text: str) -> list[int] | None:
    """``--random-states``' list of non-negative integers, or None where it is not one."""
    try:
        states = [int(s) for s in text.split(",")]
    except ValueError:
        return None
    return states if min(states) >= 0 else None


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--gpu", default="h100-sxm5-80gb")
    p.add_argument("--dtype", default="bf16")
    p.add_argument("--jobs", type=int, default=0, help="worker processes (0: every core)")
    known = {**VARIANTS, **{name: {} for name in FEATURE_VARIANTS}}
    p.add_argument("--variants", default=",".join(VARIANTS), help=f"of {', '.join(known)}")
    p.add_argument("--random-states", default="0", metavar="0,1,2",
                   help="train each variant once per state; print the mean and the MAPE's range")
    args = p.parse_args(argv)
    unknown = [v for v in args.variants.split(",") if v not in known]
    if unknown:
        print(f"--variants: unknown {', '.join(unknown)}; known: {', '.join(known)}", file=sys.stderr)
        return 2
    states = _states(args.random_states)
    if states is None:
        print(f"--random-states: not a list of non-negative integers: {args.random_states!r} (for example 0,1,2)",
              file=sys.stderr)
        return 2
    use_src()
    sys.path.insert(0, str(ROOT / "benchmarks"))
    import polars as pl
    from model_ceiling import development

    from gemmperf.fit import protocol as P

    start = time.monotonic()
    dev, pset = development(args.gpu, args.dtype)
    folds = fitted_folds(dev, pset)
    sms = pset.gpu.sms
    print(f"{dev.height} development rows, constants fitted per left-out list in {time.monotonic() - start:.0f} s")
    variants = args.variants.split(",")
    tasks = [(v, {**known[v], "random_state": state}, folds, sms) for v in variants for state in states]
    results = run_tasks(_score, tasks, args.jobs)
    seeds = len(states)
    print(f"\n| correction | MAPE % | MAPE range over {seeds} state(s) | p95 % | Spearman | regret % |\n"
          "| --- | --- | --- | --- | --- | --- |")
    fitted = None
    for v in variants:
        rows = []
        for name, preds in results:
            if name != v:
                continue
            s = P.summary(preds, columns={"ws-pipelined+fit": "fitted_us", name: "corrected_us"})
            s = s.filter(pl.col("class") == "all")
            fitted = fitted or s.filter(pl.col("model") == "ws-pipelined+fit").row(0, named=True)
            rows.append(s.filter(pl.col("model") == name).row(0, named=True))
        if v == variants[0]:
            print(f"| {fitted['model']} | {fitted['mape_pct']:.2f} | | {fitted['p95_ape_pct']:.1f} | "
                  f"{fitted['spearman_mean']:.3f} | {fitted['regret_mean_pct']:.2f} |")
        mean = lambda key: sum(r[key] for r in rows) / len(rows)  # noqa: E731
        mapes = [r["mape_pct"] for r in rows]
        print(f"| {v} | {mean('mape_pct'):.3f} | {min(mapes):.3f}-{max(mapes):.3f} | {mean('p95_ape_pct'):.1f} | "
              f"{mean('spearman_mean'):.3f} | {mean('regret_mean_pct'):.2f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
