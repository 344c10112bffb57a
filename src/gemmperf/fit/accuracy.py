"""Out-of-sample accuracy of the models, and the shipped fit of constants and correction.

Every figure is out of sample:
- cross-validation grouped by problem shape (m, n, k, dtype): GroupKFold over the
  development rows (every testlist except the held-out one); a shape's rows are all in
  one test fold, and every fit (ws-pipelined's constants, the residual correction)
  sees only the training folds;
- the held-out testlist: never in any fit. Rows of development testlists whose shape
  also appears in the held-out list are dropped from development, so no held-out shape
  is ever fitted through another list.

Models scored: every analytical model with the microbenchmark parameters as given (no
kernel fit, so out of sample by construction), "ws-pipelined+fit" (constants fitted per
fold), "ws-pipelined+fit+residual" (plus the correction fitted per fold), and with
``ablations`` each effect of ws-pipelined switched off ("ws-pipelined+fit-no-<effect>",
refitted per fold). ``evaluate_ablations`` scores only "ws-pipelined+fit" and its
ablations: twelve refits per fold, ~10 min on 2 cores against ~3 min for the rest, so
the workflow runs them on request (results/<gpu>/ablations.json).

Metrics (``metrics``), per model and per family (and "all"), on absolute percentage
error APE = |pred/meas - 1| x 100: mape_pct, median_ape_pct, p90_ape_pct,
p95_ape_pct, max_ape_pct, within_10pct (share of rows, 0..1), geomean_ratio (geometric
mean of pred/meas), spearman_mean (mean over shapes with >= 3 configurations of the
Spearman rank correlation between predicted and measured times), regret_mean_pct,
regret_p90_pct, regret_max_pct (per shape: measured time of the configuration the
model ranks first over the measured best, minus 1; configurations it predicts equally
fast count at their mean measured time), n (rows), shapes, folds.

Besides the two splits, "all" pools them: every row of every testlist, each predicted
by a fit that did not see it (development rows by their CV fold's fit, held-out rows by
the fit on all development rows), for the models scored on both.

Teacher rows (``teacher``): measurements of another input dtype on the same GPU (an fp8
run's bf16 rows) that the residual correction also learns from, never scored. Each is
predicted with its own dtype's constants, fitted on those rows in the same fit (the
constants are fitted per (family, dtype), so the run's own are as without them), and a
fold's teacher rows share no shape, weight matrix or testlist with its test rows where the
split groups by them (``outside``): the correction learns how the model errs on the
GPU from three times the rows, not the tested shapes in another dtype.

accuracy.json: {model: {family: metrics}, "heldout": {model: {family: metrics}},
"all": {model: {family: metrics}}, "meta": {...}}.

Runtime: every fit here runs with BLAS limited to one thread (``single_thread_blas``).
The fits' linear algebra is on 13-column Jacobians, where OpenBLAS's thread start-up
and spinning cost ~100x the work (an SVD of 3000 x 13: 16 ms on 2 threads, 0.5 ms on
one); limiting it cut `gemmperf accuracy` from ~5.5 min to ~1.5 min on 2 cores. The
(variant, fold) fits are independent tasks; with ``jobs`` > 1 (the CLI's default: every
available core) they run on spawned worker processes (figures equal to 1e-9).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
import polars as pl

from ..errors import UserError
from ..models import MODELS
from ..models import ws_pipelined as W
from ..params import ParamSet
from ..progress import bar
from ..tables import (ABLATION_MARK, FITTED_CORRECTED_MODEL, FITTED_MODEL, OUT_OF_SAMPLE_COLUMNS, canonical_order,
                      valid_rows)
from . import constants as C
from .residual import Correction

SHAPE_COLS = ("m", "n", "k", "dtype")
BASE = W.NAME
FIT = FITTED_MODEL
RESID = FITTED_CORRECTED_MODEL
SPLIT_KEYS = ("heldout", "all", "meta")
# predictions within this relative distance of a shape's fastest one tie for the pick
TIE_REL = 1e-6


# ------------------------------------------------------------------ metrics


def metrics(df: pl.DataFrame, pred: str = "predicted_us", meas: str = "time_us") -> dict:
    """All accuracy figures of one table (rows: configurations with a shape key)."""
    if df.height == 0:
        return {"n": 0}
    p = df.get_column(pred).to_numpy().astype(float)
    y = df.get_column(meas).to_numpy().astype(float)
    ratio = p / y
    ape = np.abs(ratio - 1.0) * 100.0
    shape = [c for c in SHAPE_COLS if c in df.columns] + (["family"] if "family" in df.columns else [])
    # shapes in order of first appearance, so the means sum in the same order on every run
    per = df.group_by(shape, maintain_order=True).agg(
        pl.len().alias("configs"),
        pl.corr(pred, meas, method="spearman").alias("rho"),
        # the measured time of the model's pick; configurations it predicts equally fast
        # (within TIE_REL) are tied picks, counted at their mean, never by row order
        (pl.col(meas).filter(pl.col(pred) <= pl.col(pred).min() * (1.0 + TIE_REL)).mean()
         / pl.col(meas).min() - 1.0).alias("regret"),
    )
    rho = per.filter(pl.col("configs") >= 3).get_column("rho").drop_nans().drop_nulls().to_numpy()
    regret = per.get_column("regret").to_numpy() * 100.0
    multi = per.filter(pl.col("configs") >= 2).get_column("regret").to_numpy() * 100.0
    return {
        "n": int(df.height),
        "shapes": int(per.height),
        "mape_pct": float(ape.mean()),
        "median_ape_pct": float(np.median(ape)),
        "p90_ape_pct": float(np.percentile(ape, 90)),
        "p95_ape_pct": float(np.percentile(ape, 95)),
        "max_ape_pct": float(ape.max()),
        "within_10pct": float((ape <= 10.0 + 1e-9).mean()),
        "geomean_ratio": float(np.exp(np.mean(np.log(ratio)))),
        "spearman_mean": float(rho.mean()) if rho.size else None,
        "regret_mean_pct": float(multi.mean()) if multi.size else float(regret.mean()),
        "regret_p90_pct": float(np.percentile(multi, 90)) if multi.size else None,
        "regret_max_pct": float(multi.max()) if multi.size else None,
    }


def by_family(df: pl.DataFrame, pred: str = "predicted_us", folds: int | None = None) -> dict:
    out = {"all": metrics(df, pred)}
    for fam in sorted(df.get_column("family").unique().to_list()):
        out[fam] = metrics(df.filter(pl.col("family") == fam), pred)
    for v in out.values():
        v["folds"] = folds
    return out


def table(acc: dict) -> pl.DataFrame:
    """accuracy.json as rows: split (cv / heldout / all), model, family, metrics."""
    rows = []
    for split, block in (("cv", {k: v for k, v in acc.items() if k not in SPLIT_KEYS}),
                         ("heldout", acc.get("heldout", {})), ("all", acc.get("all", {}))):
        for model, fams in block.items():
            for fam, m in fams.items():
                rows.append({"split": split, "model": model, "family": fam, **m})
    return pl.DataFrame(rows, infer_schema_length=None) if rows else pl.DataFrame()


# ------------------------------------------------------------------ data


def shape_id(df: pl.DataFrame) -> pl.Series:
    return df.select(pl.concat_str([pl.col(c).cast(pl.Utf8) for c in SHAPE_COLS], separator="x")).to_series()


def split_rows(measurements: dict[str, pl.DataFrame], heldout: str | None) -> tuple[pl.DataFrame, pl.DataFrame]:
    """(development rows, held-out rows), valid measurements only, with a ``testlist`` column.

    Development rows whose shape occurs in the held-out testlist are dropped."""
    frames = []
    for name, df in measurements.items():
        if "dtype" not in df.columns:
            raise UserError(f"measurements of {name}: no dtype column")
        frames.append(canonical_order(valid_rows(df)).with_columns(pl.lit(name).alias("testlist")))
    if not frames:
        raise UserError("no measurements")
    rows = pl.concat(frames, how="diagonal_relaxed")
    rows = rows.with_columns(shape_id(rows).alias("shape"))
    if heldout is None or heldout not in measurements:
        return rows, rows.clear()
    held = rows.filter(pl.col("testlist") == heldout)
    dev = rows.filter((pl.col("testlist") != heldout) & ~pl.col("shape").is_in(held.get_column("shape").implode()))
    return dev, held


def group_folds(shapes: pl.Series, n_splits: int = 5):
    """GroupKFold splits over rows by shape: (train index, test index) pairs."""
    from sklearn.model_selection import GroupKFold

    n_groups = shapes.n_unique()
    k = min(n_splits, n_groups)
    if k < 2:
        raise UserError(f"cross-validation needs >= 2 shapes, got {n_groups}")
    idx = np.arange(len(shapes))
    return list(GroupKFold(n_splits=k).split(idx, groups=shapes.to_numpy())), k


# ------------------------------------------------------------------ fitting


def single_thread_blas():
    """Context manager: BLAS/OpenMP pools at one thread (the fits' matrices are tiny)."""
    from threadpoolctl import threadpool_limits

    return threadpool_limits(limits=1)


def fit_correction(train: pl.DataFrame, fitted: ParamSet, sms: int, correction_rows: pl.DataFrame | None = None,
                   model_options: dict | None = None, progress: bool = False) -> Correction:
    """The residual correction of ``fitted``'s predictions: learned on ``train``'s rows and
    ``correction_rows``' (more timed configurations, a configuration's columns and
    ``time_us``; the columns both share are kept, ``train``'s rows first)."""
    pred = W.predict(train, fitted, model_options=model_options)
    meta = {"trained_on_rows": train.height}
    if correction_rows is not None and correction_rows.height:
        more = W.predict(correction_rows, fitted, model_options=model_options)
        both = [c for c in pred.columns if c in more.columns]
        pred = pl.concat([pred.select(both), more.select(both)], how="vertical_relaxed")
        meta["also_trained_on_rows"] = correction_rows.height
    return Correction.fit(pred, sms, meta=meta, progress=progress)


SHAPE_KEYS = (("m", "n", "k"),)  # a row a fold learns from shares no problem size with the rows tested
HELD_KEYS = (("testlist",), ("m", "n", "k"))  # nor, for teacher rows beside a left-out list, its name


def outside(rows: pl.DataFrame | None, tested: pl.DataFrame, by=SHAPE_KEYS) -> pl.DataFrame | None:
    """``rows`` (timed configurations with m, n, k) less those sharing a value of any key
    group in ``by`` with ``tested`` (``SHAPE_KEYS``: a shape it holds; protocol's splits
    add the testlist or the weight matrix for teacher rows): what a fold's correction may
    learn from beside its training rows."""
    if rows is None:
        return None
    for keys in by:
        cols = [pl.col(c).cast(pl.Int64) if c in ("m", "n", "k") else pl.col(c) for c in keys]
        rows = rows.with_columns(cols).join(tested.select(cols).unique(), on=list(keys), how="anti")
    return rows


def with_teacher(train: pl.DataFrame, teacher: pl.DataFrame | None, tested: pl.DataFrame,
                 by=SHAPE_KEYS) -> pl.DataFrame:
    """``train`` and then the teacher rows ``outside`` ``tested`` by ``by`` (None: ``train``)."""
    teacher = outside(teacher, tested, by)
    if teacher is None or teacher.height == 0:
        return train
    return pl.concat([train, teacher], how="diagonal_relaxed")


def own_entries(pset: ParamSet, dtypes) -> ParamSet:
    """``pset`` with the entries of ``dtypes`` only: a fit with teacher rows fitted their
    dtype's constants too, which its run does not ship (the teacher's own run does)."""
    return replace(pset, entries={key: p for key, p in pset.entries.items() if key[1] in set(dtypes)})


ANSWER_FOLDS = 5  # the timed answers' sets cross-fitted in this many folds (fewer sets: one each)


def answer_folds(answers: pl.DataFrame, n_folds: int = ANSWER_FOLDS) -> list[list[str]]:
    """The timed answers' sets (their ``set`` column) dealt in sorted order into
    min(n_folds, sets) folds: a fold's sets are scored by a correction that learned from
    the others'. A set's shapes are all in one fold."""
    sets = sorted(answers.get_column("set").unique().to_list())
    k = min(n_folds, len(sets))
    return [sets[i::k] for i in range(k)]


def fold_corrections(train: pl.DataFrame, fitted: ParamSet, sms: int, answers: pl.DataFrame,
                     n_folds: int = ANSWER_FOLDS, progress: bool = False,
                     jobs: int = 1) -> list[tuple[list[str], Correction]]:
    """(a fold's sets, the correction of ``fitted`` learned on ``train`` and every other
    fold's answers) for each of ``answer_folds``: how a correction taught the answers
    predicts a set it never saw (the answer band is read off these, never off the
    correction that saw them). ``jobs`` > 1: the folds on that many spawned worker
    processes (each fit single-threaded, so the trees are the same either way)."""
    folds = answer_folds(answers, n_folds)
    tasks = [(train, fitted, sms, answers.filter(~pl.col("set").is_in(fold))) for fold in folds]
    jobs = min(int(jobs or 1), len(tasks))
    if jobs <= 1:
        return [(fold, fit_correction(*task, progress=progress)) for fold, task in zip(folds, tasks)]
    import multiprocessing as mp
    from concurrent.futures import ProcessPoolExecutor

    with ProcessPoolExecutor(jobs, mp_context=mp.get_context("spawn")) as ex:
        return list(zip(folds, ex.map(_fold_correction, tasks)))


def _fold_correction(task) -> Correction:
    """One fold's correction in a worker process (``fold_corrections``)."""
    with single_thread_blas():
        return fit_correction(*task)


def fit_all(train: pl.DataFrame, pset: ParamSet, model_options: dict | None = None,
            residual: bool = True, names=C.FIT_NAMES, progress: bool = False,
            correction_rows: pl.DataFrame | None = None) -> tuple[ParamSet, Correction | None, dict]:
    """Constants then correction, on training rows only; ``progress``: bars for both.
    ``correction_rows``: more timed configurations (a configuration's columns and
    ``time_us``) the correction learns from beside ``train``'s, predicted by the constants
    fitted on ``train`` alone: the optimizer's answers timed on shapes no testlist holds,
    the region of the space its ranking lives in (benchmarks/optimizer_picks.py)."""
    fitted, report = C.fit_constants(train, pset, names=names, model_options=model_options, progress=progress)
    corr = fit_correction(train, fitted, pset.gpu.sms, correction_rows, model_options, progress) if residual else None
    return fitted, corr, report


def _predict_fit(test, fitted, corr, model_options=None):
    pred = W.predict(test, fitted, model_options=model_options)
    if corr is not None:
        pred = corr(pred)
    return pred


def _fit_task(task):
    """One (variant, fold): fit on train, predict test -> (predictions, params, correction,
    report); a sixth element: timed answers the correction also learns from, less those of
    the shapes tested."""
    train, test, pset, opts, with_resid, *more = task  # more: [answers] or []
    with single_thread_blas():
        fitted, corr, report = fit_all(train, pset, opts, residual=with_resid,
                                       correction_rows=outside(more[0], test) if more else None)
        return _predict_fit(test, fitted, corr, opts), fitted, corr, report


def available_cores() -> int:
    import os

    try:
        return max(len(os.sched_getaffinity(0)), 1)
    except AttributeError:
        return max(os.cpu_count() or 1, 1)


def _run_tasks(tasks, jobs: int):
    """Results of ``_fit_task`` in task order; jobs <= 1: in this process, else on
    ``jobs`` spawned worker processes (fits are single-threaded; BLAS pools at 1)."""
    jobs = min(int(jobs or 1), len(tasks))
    done = bar(total=len(tasks), desc="accuracy fits", unit="fit")
    if jobs <= 1:
        with done:
            return [_fit_task(t) for t in done_as(tasks, done)]
    import multiprocessing as mp
    from concurrent.futures import ProcessPoolExecutor, as_completed

    with done, ProcessPoolExecutor(jobs, mp_context=mp.get_context("spawn")) as ex:
        # the longest tasks (constants + residual trees) first, so the pool ends together
        order = sorted(range(len(tasks)), key=lambda i: not tasks[i][4])
        futures = {i: ex.submit(_fit_task, tasks[i]) for i in order}
        for _ in as_completed(futures.values()):
            done.update()
        return [futures[i].result() for i in range(len(tasks))]


def done_as(items, progress):
    """``items``, counting each one on ``progress`` once it has been used."""
    for item in items:
        yield item
        progress.update()


def evaluate_accuracy(measurements: dict[str, pl.DataFrame], pset: ParamSet, heldout: str | None = None,
                      models=None, n_splits: int = 5, residual: bool = True, ablations: bool = False,
                      progress=print, jobs: int = 1, shipped: Shipped | None = None,
                      answers: pl.DataFrame | None = None,
                      teacher: pl.DataFrame | None = None) -> tuple[dict, pl.DataFrame]:
    """(accuracy dict, out-of-sample predictions of every row by every model).

    ``jobs``: worker processes for the (variant, fold) fits (1: all in this process; the
    figures do not depend on it). The parameters and correction the later stages use
    come from ``fit_shipped`` (the fit step), never from here. ``shipped``: that fit,
    made on these same measurements, held-out list and parameters (gemmperf fit's
    params.json and correction.json): the held-out split of ws-pipelined+fit is predicted
    with it instead of refitting it (the held-out fit is the shipped fit: every
    development row), with the same figures. ``answers`` (``tables.answer_rows``): timed
    answers every corrected fit also learns from, as ``fit_shipped``'s does; ``teacher``:
    teacher rows (module docstring) every corrected fit also learns from."""
    variants = [(FIT, None, residual)] + (ablation_variants() if ablations else [])
    with single_thread_blas():
        return _evaluate(measurements, pset, heldout, list(models or MODELS), n_splits, variants, progress, jobs,
                         shipped, answers, teacher)


def ablation_variants() -> list[tuple[str, dict, bool]]:
    """(model name, switches, residual) of each effect of ws-pipelined switched off."""
    return [(f"{FIT}{ABLATION_MARK}{e}", {e: False}, False) for e in W.EFFECTS]


def evaluate_ablations(measurements: dict[str, pl.DataFrame], pset: ParamSet, heldout: str | None = None,
                       n_splits: int = 5, progress=print, jobs: int = 1) -> tuple[dict, pl.DataFrame]:
    """The ablations alone, in ``evaluate_accuracy``'s format and splits: "ws-pipelined+fit"
    (the baseline, no correction) and "ws-pipelined+fit-no-<effect>" for each effect,
    each refitted per fold. Their figures equal those of ``evaluate_accuracy(...,
    ablations=True)``."""
    variants = [(FIT, None, False)] + ablation_variants()
    with single_thread_blas():
        return _evaluate(measurements, pset, heldout, [], n_splits, variants, progress, jobs)


def _fit_tasks(dev, held, folds, variants, pset, answers, teacher, reuse) -> list[tuple]:
    """Every (variant, fold) fit of ``_evaluate`` as an independent (train, test, pset,
    options, residual, answers) task, run here or on worker processes (``_run_tasks``):
    per variant one per fold, whose training rows share no shape with its test rows (a
    corrected variant's also take the ``teacher`` rows outside its test rows,
    ``with_teacher``), then the fit on every development row for the held-out rows, unless
    ``reuse(name, options)`` says the shipped fit is that one."""
    tasks = []
    for name, opts, with_resid in variants:
        for train_idx, test_idx in folds:
            train, test = dev[train_idx], dev[test_idx]
            assert not set(train.get_column("shape")) & set(test.get_column("shape"))
            if with_resid:
                train = with_teacher(train, teacher, test)
            tasks.append((train, test, pset, opts, with_resid, answers))
        if held.height and not reuse(name, opts):
            train = with_teacher(dev, teacher, held, HELD_KEYS) if with_resid else dev
            tasks.append((train, held, pset, opts, with_resid, answers))
    return tasks


def _evaluate(measurements, pset, heldout, models, n_splits, variants, progress, jobs, shipped=None, answers=None,
              teacher=None):
    """Score the analytical ``models`` (microbenchmark parameters) and the fitted
    ``variants`` (name, ws-pipelined switches, with residual) on the same splits."""
    dev, held = split_rows(measurements, heldout)
    if dev.height == 0:
        raise UserError("no development measurements (all rows are held out or invalid)")
    if shipped is not None:
        shipped.check(fit_record(measurements, heldout, dev, answers, teacher), residual=variants[0][2])
    keep = [c for c in dev.columns if c in OUT_OF_SAMPLE_COLUMNS]
    acc: dict = {"heldout": {}}
    preds = []

    def record(name, split, df, col="predicted_us", folds=None):
        out = df.select(*keep, pl.col(col).alias("predicted_us")).with_columns(
            pl.lit(name).alias("model"), pl.lit(split).alias("split"))
        preds.append(out)
        block = acc if split == "cv" else acc["heldout"]
        block[name] = by_family(out, folds=folds)

    for name in models:
        for split, rows in (("cv", dev), ("heldout", held)):
            if rows.height:
                record(name, split, MODELS[name].predict(rows, pset), folds=0)
        progress(f"accuracy: {name} (microbenchmark parameters) done")

    folds, k = group_folds(dev.get_column("shape"), n_splits)
    # the held-out fit of ws-pipelined+fit is the shipped fit: taken from ``shipped`` if given
    reuse = lambda name, opts: shipped is not None and name == FIT and opts is None  # noqa: E731
    tasks = _fit_tasks(dev, held, folds, variants, pset, answers, teacher, reuse)
    results = iter(_run_tasks(tasks, jobs))
    for name, opts, with_resid in variants:
        oof = pl.concat([next(results)[0] for _ in folds], how="diagonal_relaxed")
        record(name, "cv", oof, folds=k)
        if with_resid:
            record(RESID, "cv", oof, col="corrected_us", folds=k)
        if held.height:
            p = (_predict_fit(held, shipped.params, shipped.correction if with_resid else None)
                 if reuse(name, opts) else next(results)[0])
            record(name, "heldout", p, folds=0)
            if with_resid:
                record(RESID, "heldout", p, col="corrected_us", folds=0)
        progress(f"accuracy: {name} ({k} grouped folds{', + held-out' if held.height else ''}) done")

    # "all": both splits pooled, for the models scored on both
    out = pl.concat(preds, how="diagonal_relaxed")
    acc["all"] = {}
    if held.height:
        for name in acc["heldout"]:
            both = out.filter(pl.col("model") == name)
            acc["all"][name] = by_family(both, folds=k)
    acc["meta"] = {"dev_rows": dev.height, "dev_shapes": dev.get_column("shape").n_unique(),
                   "heldout_testlist": heldout, "heldout_rows": held.height,
                   "testlists": sorted(measurements), "folds": k, "grouping": list(SHAPE_COLS),
                   "note": "every figure out of sample: grouped CV by shape; held-out testlist never fitted"}
    return acc, out


def fit_shipped(measurements: dict[str, pl.DataFrame], pset: ParamSet, heldout: str | None,
                residual: bool = True, progress: bool = False,
                answers: pl.DataFrame | None = None,
                teacher: pl.DataFrame | None = None) -> tuple[ParamSet, Correction | None, dict]:
    """Constants and correction for results/<gpu>/: every development row, never the
    held-out list; the correction also learns from ``answers`` (the timed answers, less
    any of a held-out shape) and ``teacher``'s rows (module docstring; less those of the
    held-out list and its shapes). The parameters returned are the development rows'
    dtypes' only."""
    dev, held = split_rows(measurements, heldout)
    train = with_teacher(dev, teacher, held, HELD_KEYS) if residual else dev
    with single_thread_blas():
        fitted, corr, report = fit_all(train, pset, residual=residual, progress=progress,
                                       correction_rows=outside(answers, held))
    return own_entries(fitted, dev.get_column("dtype").unique()), corr, report


def fit_record(measurements: dict[str, pl.DataFrame], heldout: str | None, dev: pl.DataFrame | None = None,
               answers: pl.DataFrame | None = None, teacher: pl.DataFrame | None = None) -> dict:
    """What a shipped fit was made on (params.json's "fit" block): the testlists, the
    held-out one, the development rows and the timed answers' and teacher rows its
    correction also learned from (``teacher``: every teacher row given; those of the
    held-out list and its shapes are not counted, as ``fit_shipped`` drops them);
    ``Shipped.check`` compares it."""
    if dev is None or teacher is not None:
        dev_rows, held = split_rows(measurements, heldout)
        dev = dev_rows if dev is None else dev
    return {"testlists": sorted(measurements), "heldout": heldout if heldout in measurements else None,
            "dev_rows": dev.height, "answer_rows": 0 if answers is None else answers.height,
            "teacher_rows": 0 if teacher is None else outside(teacher, held, HELD_KEYS).height}


@dataclass(frozen=True)
class Shipped:
    """The shipped fit (``fit_shipped``'s parameters and correction, read back from
    params.json and correction.json) and the record of what it was fitted on."""

    params: ParamSet
    correction: Correction | None
    record: dict
    origin: str = "params.json"

    def check(self, expected: dict, residual: bool) -> None:
        """UserError unless this fit was made on ``expected`` (``fit_record``) and has a
        correction where ``residual`` asks for one."""
        for key, want in expected.items():
            # a record older than teacher rows learned from none
            got = self.record.get(key, 0 if key == "teacher_rows" else None)
            if got != want:
                raise UserError(f"{self.origin}: fitted with {key} = {got!r}, this run has {want!r}; "
                                "refit it with gemmperf fit on the same measurements, --heldout and flags")
        if residual and self.correction is None:
            raise UserError(f"{self.origin}: the held-out split needs the shipped correction too (--correction)")


# ------------------------------------------------------------------ synthetic data


def synthetic_measurements(pset: ParamSet, shapes, configs: pl.DataFrame, noise: float = 0.02, seed: int = 0,
                           model_options: dict | None = None) -> pl.DataFrame:
    """ws-pipelined's own predictions x lognormal noise, in the measurement schema (tests, dry runs)."""
    shapes_df = pl.DataFrame([{"m": m, "n": n, "k": k} for m, n, k in shapes])
    rows = shapes_df.join(configs, how="cross")
    pred = W.predict(rows, pset, model_options=model_options)
    rng = np.random.default_rng(seed)
    t = pred.get_column("predicted_us").to_numpy() * np.exp(rng.normal(0.0, noise, pred.height))
    return pred.select(*rows.columns, "family", "dtype").with_columns(
        pl.Series("time_us", t), pl.lit("ok").alias("status"), pl.lit("full").alias("mode"))
