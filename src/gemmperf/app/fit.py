"""``gemmperf fit`` and ``gemmperf accuracy``.

fit:      microbench CSV (+ measurement CSVs) -> params.json (+ correction.json), both
          from one fit on every development row
accuracy: microbench CSV + measurement CSVs -> accuracy.json, accuracy table, out-of-sample
          predictions (scores only; writes no parameters); with --ablations-only the
          ablations alone (results/<gpu>/ablations.json in the workflow)

A measurement CSV's testlist is its file stem (results/<gpu>/measurements/llm.csv -> llm).
The held-out testlist (--heldout) never enters any fit, in either command. ``--set``
overrides hold a parameter at a value in every fit and prediction (params.json keeps
the fitted entries; the overrides are applied again by every later stage).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import polars as pl

from .. import tables
from ..errors import UserError
from ..fit.accuracy import available_cores, evaluate_ablations, evaluate_accuracy, fit_shipped, table
from ..fit.microbench import default_paramset, fit_paramset
from ..params import ParamSet
from .modelparams import add_set_flag, parse_overrides
from .resolve import parse_families, resolve_gpu, write_text

FAMILIES_DEFAULT = "ws-hopper,ws-ampere,simt"


def read_measurements(paths) -> dict[str, pl.DataFrame]:
    """Measurement CSVs by testlist (the file stem), read by the one strict reader."""
    return {Path(p).stem: tables.read_measurements(p) for p in paths or []}


def base_params(a) -> ParamSet:
    """Microbenchmark-fitted parameters (descriptor defaults where there are none), with
    the ``--set`` overrides."""
    gpu = resolve_gpu(a.gpu)
    families = parse_families(a.families)
    if a.microbench:
        if not Path(a.microbench).is_file():
            raise UserError(f"{a.microbench}: microbenchmark file not found")
        pset = fit_paramset(gpu, a.microbench, families, a.dtype)
    else:
        print("no --microbench: starting from descriptor defaults", file=sys.stderr)
        pset = default_paramset(gpu, families, a.dtype)
    pset.overrides.update(parse_overrides(a.set))
    return pset


def cmd_fit(a) -> int:
    pset = base_params(a)
    meas = read_measurements(a.measurements)
    if a.correction_out and not meas:
        raise UserError("fit --correction-out: the correction needs --measurements")
    if meas:
        pset, corr, report = fit_shipped(meas, pset, a.heldout, residual=bool(a.correction_out))
        for key, r in report.items():
            print(f"fitted ws-pipelined constants of {key} on {int(r['kernel_fit_points'])} rows "
                  f"(rms log error {r['kernel_fit_rmse_log']:.3f}); held out: {a.heldout}", file=sys.stderr)
        if corr is not None:
            corr.save(a.correction_out)
            print(f"wrote {a.correction_out}", file=sys.stderr)
    pset.save(a.out)
    print(f"wrote {a.out}", file=sys.stderr)
    return 0


def _progress(line: str) -> None:
    print(line, file=sys.stderr)


def cmd_accuracy(a) -> int:
    if a.ablations_only and (a.no_ablations or a.models):
        raise UserError("--ablations-only scores ws-pipelined+fit and its ablations: "
                        "not with --no-ablations or --models")
    pset = base_params(a)
    meas = read_measurements(a.measurements)
    if not meas:
        raise UserError("accuracy: give --measurements CSV files")
    models = [m.strip() for m in a.models.split(",")] if a.models else None
    jobs = a.jobs if a.jobs > 0 else available_cores()
    if a.ablations_only:
        acc, preds = evaluate_ablations(meas, pset, heldout=a.heldout, n_splits=a.folds, progress=_progress,
                                        jobs=jobs)
    else:
        acc, preds = evaluate_accuracy(meas, pset, heldout=a.heldout, models=models, n_splits=a.folds,
                                       residual=not a.no_residual, ablations=not a.no_ablations,
                                       progress=_progress, jobs=jobs)
    write_text(a.out, json.dumps(acc, indent=2) + "\n")
    print(f"wrote {a.out}", file=sys.stderr)
    if a.table:
        Path(a.table).parent.mkdir(parents=True, exist_ok=True)
        table(acc).write_csv(a.table)
    if a.predictions:
        Path(a.predictions).parent.mkdir(parents=True, exist_ok=True)
        preds.write_parquet(a.predictions)
    return 0


def _common(p) -> None:
    p.add_argument("--gpu", default="auto", help="catalog slug, hardware.json, or auto (probe)")
    p.add_argument("--microbench", nargs="?",
                   help="microbenchmark CSV (results/<gpu>/microbench.csv); absent or the flag alone: none")
    p.add_argument("--measurements", nargs="*", default=[], help="measurement CSVs; testlist = file stem")
    p.add_argument("--heldout", default=None, help="testlist never used in any fit (e.g. llm)")
    p.add_argument("--families", default=FAMILIES_DEFAULT)
    p.add_argument("--dtype", default="bf16")
    add_set_flag(p)


def add_parsers(sub) -> None:
    p = sub.add_parser("fit", help="fit model parameters: microbenchmarks (+ ws-pipelined constants "
                       "and the residual correction on measurements)")
    _common(p)
    p.add_argument("--out", required=True, help="params.json to write")
    p.add_argument("--correction-out", help="also fit the residual correction (same fit) and write it here")
    p.set_defaults(func=cmd_fit)

    p = sub.add_parser("accuracy", help="out-of-sample accuracy: grouped CV by shape + held-out testlist")
    _common(p)
    p.add_argument("--out", required=True, help="accuracy.json to write")
    p.add_argument("--table", help="CSV of the accuracy table (split, model, family, metrics)")
    p.add_argument("--predictions", help="Parquet of every out-of-sample prediction")
    p.add_argument("--models", help="comma-separated analytical models (default: all)")
    p.add_argument("--folds", type=int, default=5)
    p.add_argument("--no-residual", action="store_true", help="skip the residual correction")
    p.add_argument("--no-ablations", action="store_true",
                   help="skip refitting ws-pipelined with each effect off (eleven refits per fold: ~10 min on 2 cores)")
    p.add_argument("--ablations-only", action="store_true",
                   help="score only ws-pipelined+fit (no correction) and its refits with each effect off; "
                   "the workflow's results/<gpu>/ablations.json")
    p.add_argument("--jobs", type=int, default=0,
                   help="worker processes for the per-fold fits (default 0: every available core)")
    p.set_defaults(func=cmd_accuracy)
