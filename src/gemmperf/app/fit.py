"""``gemmperf fit`` and ``gemmperf accuracy``.

fit:      microbench CSV (+ measurement CSVs) -> params.json (+ correction.json), both
          from one fit on every development row
accuracy: microbench CSV + measurement CSVs -> accuracy.json, accuracy table, out-of-sample
          predictions (scores only; writes no parameters); given fit's params.json and
          correction.json (--params, --correction) it scores the held-out testlist with
          them instead of refitting the same fit; with --ablations the ablations too, with
          --ablations-only those alone (results/<gpu>/ablations.json in the workflow)

A measurement CSV's testlist is its file stem (results/<gpu>/measurements/llm.csv -> llm).
The held-out testlist (--heldout) never enters any fit, in either command. ``--set``
overrides hold a parameter at a value in every fit and prediction (params.json keeps
the fitted entries; the overrides are applied again by every later stage).
params.json's "fit" block says when and from what it was fitted (``fit_block``).
"""

from __future__ import annotations

import argparse
import json
import sys
from datetime import datetime, timezone
from pathlib import Path

import polars as pl

from .. import tables
from ..errors import UserError
from ..fit.accuracy import (Shipped, available_cores, evaluate_ablations, evaluate_accuracy, fit_record, fit_shipped,
                            split_rows, table)
from ..fit import protocol
from ..fit.microbench import default_paramset, fit_paramset, with_dtypes
from ..fit.residual import Correction
from ..kernels import get_family
from ..models import MODELS
from ..params import ParamSet
from ..problem import DTYPE_BYTES
from .modelparams import add_set_flag, parse_overrides
from .resolve import parse_families, resolve_gpu, write_text

FAMILIES_DEFAULT = "ws-hopper,ws-ampere,simt"


def read_measurements(paths) -> dict[str, pl.DataFrame]:
    """Measurement CSVs by testlist (the file stem), read by the one strict reader."""
    return {Path(p).stem: tables.read_measurements(p) for p in paths or []}


def read_answers(a, teacher: pl.DataFrame | None = None) -> pl.DataFrame | None:
    """``--answers``: the verified runs of the timed answers files (``tables.answer_rows``),
    each file's configurations of this run's dtype (or of the ``teacher`` rows',
    ``read_teacher``) and families; None without the flag."""
    if not a.answers:
        return None
    families = parse_families(a.families)
    dtypes = [a.dtype, *([] if teacher is None else teacher.get_column("dtype").unique().to_list())]
    frames = []
    for path in a.answers:
        rows = tables.answer_rows([path])
        for column, allowed, flag in (("dtype", dtypes, "--dtype"), ("family", families, "--families")):
            odd = rows.filter(~pl.col(column).is_in(allowed)).get_column(column).unique().sort().to_list()
            if odd:
                raise UserError(f"{path}: configurations of {column} {', '.join(odd)}; this fit's {flag} is "
                                f"{', '.join(allowed)}")
        frames.append(rows)
    return pl.concat(frames)


def read_teacher(a, pset: ParamSet) -> tuple[pl.DataFrame | None, ParamSet]:
    """``--teacher-measurements``: (their development rows of the families this run fits,
    ``pset`` with their dtypes' microbenchmark parameters added), or (None, ``pset``).
    Rows of another input dtype on the same GPU that the residual correction also learns
    from, each with its own dtype's constants (``fit.accuracy``: teacher rows)."""
    if not a.teacher_measurements:
        return None, pset
    if not a.measurements:
        raise UserError("--teacher-measurements: the run's own --measurements are needed too")
    families = sorted({family for family, _ in pset.entries})
    teacher, _ = split_rows(read_measurements(a.teacher_measurements), a.heldout)
    teacher = teacher.filter(pl.col("family").is_in(families))
    dtypes = sorted(teacher.get_column("dtype").unique().to_list())
    if not dtypes or a.dtype in dtypes:
        raise UserError(f"--teacher-measurements {' '.join(a.teacher_measurements)}: "
                        + (f"rows of this run's own dtype {a.dtype}; a teacher's are of another" if dtypes
                           else f"no valid rows of {', '.join(families)}"))
    return teacher, with_dtypes(pset, a.microbench, families, dtypes)


def worker_count(jobs: int) -> int:
    """--jobs as worker processes: 0 every available core; UserError below 0."""
    if jobs < 0:
        raise UserError(f"--jobs {jobs}: 0 (every available core) or more")
    return jobs or available_cores()


def check_flags(a) -> None:
    """UserError (one line naming the flag and its value) for values no fit can use."""
    parse_families(a.families)
    if a.dtype not in DTYPE_BYTES:
        raise UserError(f"--dtype {a.dtype!r}: unknown; known: {', '.join(DTYPE_BYTES)}")
    if a.heldout is not None and a.measurements and a.heldout not in {Path(p).stem for p in a.measurements}:
        raise UserError(f"--heldout {a.heldout!r}: no measurement file of that testlist among --measurements "
                        f"({', '.join(Path(p).stem for p in a.measurements)})")
    if getattr(a, "command", None) != "accuracy":
        if a.answers and not a.correction_out:
            raise UserError("fit --answers: the timed answers teach the residual correction; give --correction-out")
        return
    unknown = [m for m in parse_models(a.models) or [] if m not in MODELS]
    if unknown:
        raise UserError(f"--models {a.models!r}: unknown {', '.join(unknown)}; known: {', '.join(MODELS)}")
    if a.folds < 2:
        raise UserError(f"--folds {a.folds}: at least 2 (each fold is tested on a fit of the others)")
    worker_count(a.jobs)  # a bad --jobs is refused with the other flags, before any file is read
    if a.correction and not a.params:
        raise UserError(f"--correction {a.correction}: needs --params (the fit it was made with)")
    splits = a.splits.split(",") if a.splits else []
    if any(s not in protocol.GROUPINGS for s in splits):
        raise UserError(f"--splits {a.splits!r}: comma-separated, each one of {', '.join(protocol.GROUPINGS)}")
    if a.picks and not splits:
        raise UserError(f"--picks {a.picks}: needs --splits (the picks are the headline protocol's)")
    if splits and (a.ablations or a.ablations_only or a.models or a.params):
        raise UserError(f"--splits {a.splits!r}: scores ws-pipelined, +fit and +fit+residual by split and shape "
                        "class; not with --ablations, --ablations-only, --models or --params")
    if not a.measurements:
        raise UserError("--measurements: give the measurement CSVs to score")


def parse_models(text: str | None) -> list[str] | None:
    """--models 'sol,sync' -> ['sol', 'sync']; None: every model."""
    if text is None:
        return None
    return [m.strip() for m in text.split(",")]


def base_params(a) -> ParamSet:
    """Microbenchmark-fitted parameters (descriptor defaults where there are none), with
    the ``--set`` overrides."""
    check_flags(a)
    gpu = resolve_gpu(a.gpu)
    families = parse_families(a.families)
    # a family without a kernel for the dtype (ws-ampere and fp8) has no parameters to fit
    families = [f for f in families if get_family(f).dtype_for(a.dtype) in get_family(f).dtypes] or families
    if a.microbench:
        if not Path(a.microbench).is_file():
            raise UserError(f"{a.microbench}: microbenchmark file not found")
        pset = fit_paramset(gpu, a.microbench, families, a.dtype)
    else:
        print("no --microbench: starting from descriptor defaults", file=sys.stderr)
        pset = default_paramset(gpu, families, a.dtype)
    pset.overrides.update(parse_overrides(a.set))
    return pset


def fit_block(a, pset: ParamSet, meas: dict[str, pl.DataFrame], answers: pl.DataFrame | None = None,
              teacher: pl.DataFrame | None = None) -> dict:
    """params.json's "fit": when (fitted_at, UTC, ISO 8601), on which GPU and from which
    files and flags it was fitted; ``accuracy --params`` checks the record part."""
    return {"fitted_at": datetime.now(timezone.utc).replace(microsecond=0).isoformat(),
            "gpu": pset.gpu.slug, "microbench": a.microbench or None, "measurements": list(a.measurements or []),
            "answers": list(a.answers or []), "families": parse_families(a.families), "dtype": a.dtype,
            "overrides": parse_overrides(a.set),
            **({"teacher_measurements": list(a.teacher_measurements)} if a.teacher_measurements else {}),
            **(fit_record(meas, a.heldout, answers=answers, teacher=teacher) if meas
               else {"testlists": [], "heldout": None, "dev_rows": 0, "answer_rows": 0})}


def cmd_fit(a) -> int:
    pset = base_params(a)
    meas = read_measurements(a.measurements)
    teacher, taught = read_teacher(a, pset)
    answers = read_answers(a, teacher)
    if a.correction_out and not meas:
        raise UserError("fit --correction-out: the correction needs --measurements")
    if teacher is not None and not a.correction_out:
        raise UserError("fit --teacher-measurements: the teacher rows teach the residual correction; "
                        "give --correction-out")
    if meas:
        pset, corr, report = fit_shipped(meas, taught, a.heldout, residual=bool(a.correction_out), progress=True,
                                         answers=answers, teacher=teacher)
        for key, r in report.items():
            print(f"fitted ws-pipelined constants of {key} on {int(r['kernel_fit_points'])} rows "
                  f"(rms log error {r['kernel_fit_rmse_log']:.3f}); held out: {a.heldout}", file=sys.stderr)
        if corr is not None:
            corr.save(a.correction_out)
            print(f"wrote {a.correction_out}", file=sys.stderr)
    write_text(a.out, json.dumps({**pset.to_dict(), "fit": fit_block(a, pset, meas, answers, teacher)}, indent=2)
               + "\n")
    print(f"wrote {a.out}", file=sys.stderr)
    return 0


def _progress(line: str) -> None:
    print(line, file=sys.stderr)


def read_shipped(a, pset: ParamSet) -> Shipped | None:
    """``--params`` (+ ``--correction``): gemmperf fit's outputs on the same inputs, with
    this run's ``--set`` overrides; None without --params."""
    if not a.params:
        return None
    try:
        record = json.loads(Path(a.params).read_text()).get("fit")
    except (OSError, ValueError, AttributeError) as err:
        raise UserError(f"{a.params}: cannot read parameters ({err})") from None
    if not isinstance(record, dict):
        raise UserError(f"{a.params}: no \"fit\" record (written by an older gemmperf fit?); refit it")
    flags = {"gpu": pset.gpu.slug, "families": parse_families(a.families), "dtype": a.dtype,
             "overrides": parse_overrides(a.set)}
    for key, want in flags.items():
        if record.get(key) != want:
            raise UserError(f"{a.params}: fitted with {key} = {record.get(key)!r}, this run has {want!r}; "
                            "refit it with the same flags")
    params = ParamSet.load(a.params, pset.gpu)
    params.overrides.update(pset.overrides)
    corr = Correction.load(a.correction) if a.correction else None
    return Shipped(params, corr, record, origin=a.params)


def cmd_accuracy(a) -> int:
    if a.ablations_only and (a.ablations or a.models or a.params):
        raise UserError("--ablations-only scores ws-pipelined+fit and its ablations: "
                        "not with --ablations, --models or --params")
    pset = base_params(a)
    shipped = read_shipped(a, pset)
    meas = read_measurements(a.measurements)
    teacher, taught = read_teacher(a, pset)
    answers = read_answers(a, teacher)
    jobs = worker_count(a.jobs)
    if a.splits:
        return _headline(a, taught, meas, jobs, answers, teacher)
    if a.ablations_only:
        acc, preds = evaluate_ablations(meas, pset, heldout=a.heldout, n_splits=a.folds, progress=_progress,
                                        jobs=jobs)
    else:
        acc, preds = evaluate_accuracy(meas, taught, heldout=a.heldout, models=parse_models(a.models),
                                       n_splits=a.folds, residual=not a.no_residual, ablations=a.ablations,
                                       progress=_progress, jobs=jobs, shipped=shipped, answers=answers,
                                       teacher=teacher)
    _save(a.out, acc)
    _save_frame(a.table, table(acc))
    _save_frame(a.predictions, preds, parquet=True)
    return 0


def _save(path: str, scores: dict) -> None:
    write_text(path, json.dumps(scores, indent=2) + "\n")
    print(f"wrote {path}", file=sys.stderr)


def _save_frame(path: str | None, frame: pl.DataFrame, parquet: bool = False) -> None:
    """``frame`` to ``path`` (CSV, or Parquet), its folder made; nothing when no path was asked for."""
    if not path:
        return
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    frame.write_parquet(path) if parquet else frame.write_csv(path)


def _headline(a, pset: ParamSet, meas: dict[str, pl.DataFrame], jobs: int, answers: pl.DataFrame | None,
              teacher: pl.DataFrame | None = None) -> int:
    """``--splits``: issue 17's protocol (leave one testlist out, grouped by (n, k)) on the
    development testlists, ws-hopper rows; summary to --table, predictions to --predictions;
    each fold's correction also learns from ``answers`` and ``teacher`` (as the shipped one
    does)."""
    splits = a.splits.split(",")
    dev = protocol.development(meas, heldout=a.heldout)
    if teacher is not None:
        teacher = protocol.with_nk(teacher.filter(pl.col("family") == "ws-hopper"))
    summary, preds, why = protocol.headline(dev, pset, splits, residual=not a.no_residual, jobs=jobs,
                                            progress=_progress, correction_rows=answers, teacher=teacher)
    meta = {"splits": splits, "dev_rows": dev.height, "dev_shapes": dev.get_column("shape").n_unique(),
            "answer_rows": 0 if answers is None else answers.height,
            "teacher_rows": 0 if teacher is None else teacher.height,
            "testlists": sorted(dev.get_column("testlist").unique().to_list()), "heldout_testlist": a.heldout,
            "families": ["ws-hopper"], "nvmmh": why or "available", "classes": list(protocol.CLASSES)}
    band_split = "testlist" if "testlist" in splits else splits[0]  # the headline's split, where it was run
    _save(a.out, {"meta": {**meta, "bands_split": band_split}, "summary": summary.to_dicts(),
                  "bands": protocol.bands(preds, band_split)})
    _save_frame(a.table, summary)
    _save_frame(a.predictions, preds, parquet=True)
    _save_frame(a.picks, protocol.picks(preds, protocol.headline_columns(preds)))
    return 0


def _common(p) -> None:
    p.add_argument("--gpu", default="auto", help="catalog slug, hardware.json, or auto (probe)")
    p.add_argument("--microbench", nargs="?",
                   help="microbenchmark CSV (results/<gpu>/microbench.csv); absent or the flag alone: none")
    p.add_argument("--measurements", nargs="*", default=[], help="measurement CSVs; testlist = file stem")
    p.add_argument("--heldout", default=None,
                   help="testlist never used in any fit (e.g. llm); one of the --measurements stems")
    p.add_argument("--families", default=FAMILIES_DEFAULT,
                   help=f"comma-separated kernel families to fit (default {FAMILIES_DEFAULT})")
    p.add_argument("--dtype", default="bf16", help="input dtype of the tensor-core families (default bf16)")
    p.add_argument("--answers", nargs="*", default=[], metavar="CSV",
                   help="timed answers files (results/<gpu>/shipped/answers/*.csv): the residual correction "
                   "also learns from their verified runs (a fold's, less the shapes it tests)")
    p.add_argument("--teacher-measurements", nargs="*", default=[], metavar="CSV",
                   help="measurement CSVs of another input dtype on the same GPU (an fp8 run's bf16 ones): the "
                   "residual correction also learns from their rows, each predicted with its own dtype's "
                   "constants fitted on them; never scored (a fold's, less its testlists and shapes)")
    add_set_flag(p)


SHIPPED = "results/h100-sxm5-80gb/shipped"
FIT_EXAMPLE = f"""example (what the workflow runs, results/<gpu>/ of a shipped GPU):
  gemmperf fit --gpu h100-sxm5-80gb --microbench {SHIPPED}/microbench.csv \\
      --measurements {SHIPPED}/measurements/*.csv --heldout llm \\
      --answers {SHIPPED}/answers/*.csv \\
      --out results/h100-sxm5-80gb/params.json --correction-out results/h100-sxm5-80gb/correction.json
params.json records when and from what it was fitted (its "fit" block); --answers: the
correction also learns from the optimizer's answers timed on shapes no testlist holds."""
ACCURACY_EXAMPLE = f"""example (after the fit example of gemmperf fit --help; the held-out split reuses that fit):
  gemmperf accuracy --gpu h100-sxm5-80gb --microbench {SHIPPED}/microbench.csv \\
      --measurements {SHIPPED}/measurements/*.csv --heldout llm --jobs 2 \\
      --answers {SHIPPED}/answers/*.csv \\
      --params results/h100-sxm5-80gb/params.json --correction results/h100-sxm5-80gb/correction.json \\
      --out accuracy.json --table accuracy.csv
without --params the held-out fit is made here too (same figures, one more fit)."""


def add_parsers(sub) -> None:
    fmt = argparse.RawDescriptionHelpFormatter
    p = sub.add_parser("fit", formatter_class=fmt, epilog=FIT_EXAMPLE,
                       help="fit model parameters and the residual correction (one fit)",
                       description="Fit the model parameters of one GPU: the microbenchmark parameters, then "
                       "ws-pipelined's constants on every measured row outside the held-out testlist, and from "
                       "the same fit the residual correction (--correction-out).")
    _common(p)
    p.add_argument("--out", required=True, help="params.json to write")
    p.add_argument("--correction-out", help="also fit the residual correction (same fit) and write it here")
    p.set_defaults(func=cmd_fit)

    p = sub.add_parser("accuracy", formatter_class=fmt, epilog=ACCURACY_EXAMPLE,
                       help="out-of-sample accuracy: grouped CV by shape + held-out testlist",
                       description="Score every model out of sample: cross-validation grouped by shape over the "
                       "development testlists (each fold tested on a fit of the others) and the held-out "
                       "testlist (tested on the fit of every development row). Writes scores, no parameters.")
    _common(p)
    p.add_argument("--out", required=True, help="accuracy.json to write")
    p.add_argument("--table", help="CSV of the accuracy table (split, model, family, metrics)")
    p.add_argument("--predictions", help="Parquet of every out-of-sample prediction")
    p.add_argument("--models", help=f"comma-separated analytical models (default: all: {', '.join(MODELS)})")
    p.add_argument("--folds", type=int, default=5, help="cross-validation folds, at least 2 (default 5)")
    p.add_argument("--params", help="gemmperf fit's params.json of these same inputs and flags: the held-out "
                   "split uses it instead of refitting (with --correction for the corrected model)")
    p.add_argument("--correction", help="gemmperf fit's correction.json (--correction-out) that goes with --params")
    p.add_argument("--no-residual", action="store_true", help="skip the residual correction")
    p.add_argument("--ablations", action="store_true",
                   help="also refit ws-pipelined with each effect off (eleven more refits per fold and "
                   "for the held-out split)")
    p.add_argument("--ablations-only", action="store_true",
                   help="score only ws-pipelined+fit (no correction) and its refits with each effect off; "
                   "the workflow's results/<gpu>/ablations.json")
    p.add_argument("--splits", default="",
                   help="instead: the headline protocol, comma-separated groupings (testlist: leave one "
                   "development testlist out; nk: 5 folds grouped by weight matrix (n, k)), ws-hopper rows, "
                   "per model and shape class, nvMatmulHeuristics beside them where the nvmmh extra is installed")
    p.add_argument("--picks", help="with --splits: CSV per split and shape of each model's pick (measured time, "
                   "tied picks at their mean) and regret against the measured best")
    p.add_argument("--jobs", type=int, default=0,
                   help="worker processes for the per-fold fits (default 0: every available core)")
    p.set_defaults(func=cmd_accuracy)
