"""Accuracy on what was never measured: leave-one-testlist-out, grouped by weight matrix.

Two splits of the development measurements, each fitted fold by fold on training rows
only (ws-pipelined's constants, then the residual correction):

- ``testlist``: leave one testlist out (the headline). Each testlist is predicted by a
  fit that saw none of its rows; rows of other testlists with one of its shapes are
  dropped from that fit's training rows too.
- ``nk``: GroupKFold by weight matrix (n, k, dtype). A test row's B matrix was never in
  training, so the figure is not interpolation across M.

Figures per model ("ws-pipelined" with microbenchmark parameters, "+fit", "+fit+residual")
and per shape class (``CLASSES``): ``accuracy.metrics`` (regret counts tied picks at their
mean). ``score_heldout`` fits on every development row and predicts one held-out table,
once, for a sealed held-out list.
"""

from __future__ import annotations

import numpy as np
import polars as pl

from ..errors import UserError
from ..intervals import LEVEL, conformal_band
from ..models import nvmmh
from ..models import ws_pipelined as W
from ..params import ParamSet
from ..tables import FITTED_CORRECTED_MODEL, FITTED_MODEL, OUT_OF_SAMPLE_COLUMNS
from .accuracy import HELD_KEYS, TIE_REL, _run_tasks, metrics, single_thread_blas, split_rows, with_teacher

GROUPINGS = ("testlist", "nk")
# shape classes where a model generalizes worst (issue 17); a row may be in several
CLASSES: dict[str, pl.Expr] = {
    "decode (M <= 64)": pl.col("m") <= 64,
    "small K (K <= 256)": pl.col("k") <= 256,
    "odd N (N % 8 != 0)": pl.col("n") % 8 != 0,
    "huge (M N K >= 2^36)": pl.col("m").cast(pl.Float64) * pl.col("n") * pl.col("k") >= 2.0**36,
    "non-persistent": ~pl.col("persistent"),
}
COLUMNS = {W.NAME: "base_us", FITTED_MODEL: "fitted_us", FITTED_CORRECTED_MODEL: "corrected_us"}
# what a fold's teacher rows (``accuracy.with_teacher``) share none of with its test rows:
# leaving a testlist out leaves its list and its shapes out in the other dtype too
TEACHER_KEYS = {"testlist": HELD_KEYS, "nk": (("n", "k"),)}
NVMMH = "nvMatmulHeuristics"  # its runtime estimate on the same rows (the ``nvmmh`` extra)


def development(measurements: dict[str, pl.DataFrame], families=("ws-hopper",),
                heldout: str | None = None) -> pl.DataFrame:
    """Valid rows of every testlist but ``heldout``, of ``families``, with ``testlist``,
    ``shape`` and ``nk``."""
    dev, _ = split_rows(measurements, heldout)
    dev = dev.filter(pl.col("family").is_in(list(families)))
    if dev.height == 0:
        raise UserError(f"no valid measurements of {', '.join(families)}")
    return with_nk(dev)


def with_nk(rows: pl.DataFrame) -> pl.DataFrame:
    """``rows`` with ``nk``: the weight matrix (n, k, dtype) the "nk" split groups by."""
    return rows.with_columns(pl.concat_str([pl.col(c).cast(pl.Utf8) for c in ("n", "k", "dtype")],
                                           separator="x").alias("nk"))


def folds(dev: pl.DataFrame, grouping: str, n_splits: int = 5) -> list[tuple[str, np.ndarray, np.ndarray]]:
    """(fold name, train index, test index); no test shape is ever in its training rows."""
    if grouping == "testlist":
        names = sorted(dev.get_column("testlist").unique().to_list())
        if len(names) < 2:
            raise UserError(f"leave-one-testlist-out needs >= 2 testlists, got {names}")
        out = []
        for name in names:
            test = (dev.get_column("testlist") == name).to_numpy()
            held = dev.filter(pl.Series(test)).get_column("shape").unique()
            train = ~test & ~dev.get_column("shape").is_in(held.implode()).to_numpy()
            out.append((name, np.flatnonzero(train), np.flatnonzero(test)))
        return out
    if grouping == "nk":
        from sklearn.model_selection import GroupKFold

        groups = dev.get_column("nk").to_numpy()
        k = min(n_splits, len(set(groups)))
        if k < 2:
            raise UserError("grouping by (n, k) needs >= 2 weight matrices")
        return [(f"nk fold {i}", tr, te)
                for i, (tr, te) in enumerate(GroupKFold(n_splits=k).split(np.arange(dev.height), groups=groups))]
    raise UserError(f"grouping {grouping!r}: one of {', '.join(GROUPINGS)}")


def _predictions(test: pl.DataFrame, pset: ParamSet, fitted: pl.DataFrame) -> pl.DataFrame:
    keep = [c for c in test.columns if c in OUT_OF_SAMPLE_COLUMNS or c in ("testlist", "nk")]
    base = W.predict(test, pset).get_column("predicted_us")
    cols = [pl.col("predicted_us").alias("fitted_us")] + [pl.col(c) for c in ("corrected_us",) if c in fitted.columns]
    return pl.concat([test.select(keep).with_columns(base.alias("base_us")), fitted.select(cols)], how="horizontal")


def evaluate(dev: pl.DataFrame, pset: ParamSet, grouping: str = "testlist", residual: bool = True,
             jobs: int = 1, model_options: dict | None = None,
             correction_rows: pl.DataFrame | None = None, teacher: pl.DataFrame | None = None) -> pl.DataFrame:
    """Every development row predicted out of sample under ``grouping``: the rows with
    ``fold``, ``base_us`` (microbenchmark parameters), ``fitted_us`` and, with
    ``residual``, ``corrected_us``. ``correction_rows`` (timed configurations with m, n,
    k): more rows each fold's correction learns from (``accuracy.fit_all``), those of a
    shape the fold tests dropped. ``teacher``: rows of another dtype (``development``'s
    columns) each fold's correction also learns from, less those sharing the fold's
    TEACHER_KEYS; never scored."""
    splits = folds(dev, grouping)
    teacher = teacher if residual else None  # no correction: nothing to teach
    tasks = [(with_teacher(dev[tr], teacher, dev[te], TEACHER_KEYS[grouping]), dev[te], pset, model_options, residual,
              correction_rows) for _, tr, te in splits]
    with single_thread_blas():
        results = _run_tasks(tasks, jobs)
    out = [_predictions(dev[te], pset, res[0]).with_columns(pl.lit(name).alias("fold"))
           for (name, _, te), res in zip(splits, results)]
    return pl.concat(out, how="diagonal_relaxed")


def score_heldout(dev: pl.DataFrame, held: pl.DataFrame, pset: ParamSet, residual: bool = True,
                  model_options: dict | None = None, teacher: pl.DataFrame | None = None) -> pl.DataFrame:
    """``held`` predicted by one fit on every row of ``dev`` (rows of held-out shapes
    dropped); ``teacher``: as ``evaluate``'s, less the held-out list's and its shapes."""
    train = dev.filter(~pl.col("shape").is_in(held.get_column("shape").unique().implode()))
    if residual:
        train = with_teacher(train, teacher, held, HELD_KEYS)
    with single_thread_blas():
        (pred, *_), = _run_tasks([(train, held, pset, model_options, residual)], 1)
    return _predictions(held, pset, pred).with_columns(pl.lit("held-out").alias("fold"))


def with_nvmmh(preds: pl.DataFrame, gpu) -> tuple[pl.DataFrame, str | None]:
    """``preds`` with nvMatmulHeuristics' estimate ``nvmmh_us`` (NaN where it cannot say),
    or unchanged and the reason it cannot answer here."""
    est = nvmmh.estimate_seconds(preds, gpu)
    if isinstance(est, nvmmh.Unavailable):
        return preds, est.reason
    return preds.with_columns(pl.Series("nvmmh_us", est * 1e6)), None


def headline(dev: pl.DataFrame, pset: ParamSet, splits=GROUPINGS, residual: bool = True, jobs: int = 1,
             progress=print, correction_rows: pl.DataFrame | None = None,
             teacher: pl.DataFrame | None = None) -> tuple[pl.DataFrame, pl.DataFrame, str | None]:
    """(summary with a ``split`` column, every out-of-sample prediction, why nvMatmulHeuristics
    is absent or None) of each grouping in ``splits``; ``correction_rows``, ``teacher``: as
    ``evaluate``."""
    sums, preds, why = [], [], None
    for grouping in splits:
        p, why = with_nvmmh(evaluate(dev, pset, grouping, residual=residual, jobs=jobs,
                                     correction_rows=correction_rows, teacher=teacher), pset.gpu)
        sums.append(summary(p, columns=headline_columns(p)).with_columns(pl.lit(grouping).alias("split")))
        preds.append(p.with_columns(pl.lit(grouping).alias("split")))
        progress(f"accuracy: {grouping} split done")
    return (pl.concat(sums, how="diagonal_relaxed").select("split", pl.exclude("split")),
            pl.concat(preds, how="diagonal_relaxed"), why)


def bands(preds: pl.DataFrame, split: str = "testlist", level: float = LEVEL) -> dict:
    """Model -> the band (``intervals.conformal_band``) of measured / predicted over the
    ``split`` rows of ``headline``'s predictions, for the fitted model and the corrected
    one: how far a prediction for a shape no fit saw falls from its measurement (what
    ``gemmperf predict`` gives with a prediction). A model without rows: absent."""
    rows = preds.filter(pl.col("split") == split) if "split" in preds.columns else preds
    out = {}
    for model, col in ((FITTED_MODEL, "fitted_us"), (FITTED_CORRECTED_MODEL, "corrected_us")):
        if col in rows.columns:
            band = conformal_band((rows.get_column("time_us") / rows.get_column(col)).to_list(), level)
            if band is not None:
                out[model] = band
    return out


def headline_columns(preds: pl.DataFrame) -> dict[str, str]:
    """model -> prediction column of ``headline``'s predictions (nvMatmulHeuristics where present)."""
    return {**COLUMNS, **({NVMMH: "nvmmh_us"} if "nvmmh_us" in preds.columns else {})}


def summary(preds: pl.DataFrame, by: str | None = None, columns: dict[str, str] | None = None) -> pl.DataFrame:
    """Metrics per model and class (and per value of ``by``, e.g. "testlist"): one row each.

    ``columns``: model -> prediction column (default ``COLUMNS``); a model is scored on
    the rows where it has a positive estimate (nvMatmulHeuristics has none for stream-K)."""
    rows = []
    for model, col in (columns or COLUMNS).items():
        if col not in preds.columns:
            continue
        scored = preds.filter(pl.col(col).is_not_null() & pl.col(col).is_not_nan() & (pl.col(col) > 0))
        parts = [("all", scored)] + [(name, scored.filter(expr)) for name, expr in CLASSES.items()]
        for cls, df in parts:
            groups = [(None, df)] if by is None else [(v, df.filter(pl.col(by) == v))
                                                       for v in sorted(df.get_column(by).unique().to_list())]
            for value, part in groups:
                if part.height:
                    m = metrics(part, pred=col)
                    rows.append({"model": model, "class": cls, **({by: value} if by else {}), **m})
    return pl.DataFrame(rows, infer_schema_length=None)


def picks(preds: pl.DataFrame, columns: dict[str, str] | None = None) -> pl.DataFrame:
    """Per shape (and split, where there is one): the measured best time, and per model
    the measured time of its pick (configurations it predicts equally fast, within
    TIE_REL, at their mean; only rows it estimates) as ``<model> pick us`` and its regret
    as ``<model> regret %``."""
    keys = [c for c in ("split", "testlist", "m", "n", "k", "dtype") if c in preds.columns]
    aggs = [pl.len().alias("configurations"), pl.col("time_us").min().alias("measured best us")]
    for model, col in (columns or COLUMNS).items():
        if col not in preds.columns:
            continue
        ok = pl.col(col).is_not_null() & pl.col(col).is_not_nan() & (pl.col(col) > 0)
        best = pl.col(col).filter(ok).min()
        aggs.append(pl.col("time_us").filter(ok & (pl.col(col) <= best * (1.0 + TIE_REL))).mean()
                    .alias(f"{model} pick us"))
    out = preds.group_by(keys, maintain_order=True).agg(aggs)
    return out.with_columns([(100.0 * (pl.col(c) / pl.col("measured best us") - 1.0)).alias(c.replace(" pick us",
                                                                                                     " regret %"))
                             for c in out.columns if c.endswith(" pick us")])
