"""``gemmperf answer-band``: how long the optimizer's answers ran against their predicted
time, on shapes no fit saw (``optimize.band``), written for ``gemmperf optimize`` to give
with its answer; and the sentence optimize prints from it."""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from pathlib import Path

import polars as pl

from ..errors import UserError
from ..fit.accuracy import Shipped, fit_record, fold_corrections, outside, split_rows
from ..fit.residual import Correction
from ..intervals import LEVEL, is_band
from ..optimize.band import answer_times, bands
from ..problem import check_dtype
from ..tables import answer_rows, answer_set, read_answer_runs
from .explain import us
from .fit import read_measurements, worker_count
from .modelparams import add_set_flag, resolve_params
from .resolve import RESULTS, output_path, resolve_gpu, run_name, write_text

FAMILY = "ws-hopper"  # the family whose answers were timed (the only one optimizer_picks times)


def digest(path: str | Path) -> str:
    """The sha256 of a file's bytes: the band belongs to the params.json (and correction)
    it was computed with."""
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def band_path(gpu_slug: str, dtype: str) -> Path:
    """Where the workflow writes a run's band: results/<run>/answer_band.json."""
    return RESULTS / run_name(gpu_slug, dtype) / "answer_band.json"


def cmd_answer_band(a) -> int:
    check_dtype(a.dtype, "--dtype")
    jobs = worker_count(a.jobs)
    if not 0 < a.level < 1:
        raise UserError(f"--level {a.level}: a coverage between 0 and 1, e.g. --level 0.9")
    gpu = resolve_gpu(a.gpu)
    if not Path(a.params).is_file():
        raise UserError(f"{a.params}: parameters file not found")
    pset = resolve_params(gpu, a.params, a.set, dtype=a.dtype)
    correction = Correction.load(a.correction) if a.correction else None
    runs = pl.concat([read_answer_runs(p).select("shape", "config", "status", "time_us")
                      .with_columns(set=pl.lit(answer_set(p))) for p in a.runs])
    folds = None  # the sets of each fold where the corrected band is cross-fitted
    if correction is not None and correction.meta.get("also_trained_on_rows"):
        taught = taught_folds(a, pset, jobs)
        folds = [fold for fold, _ in taught]
        times = pl.concat([answer_times(runs.filter(pl.col("set").is_in(fold)), pset, corr, FAMILY, a.dtype)
                           for fold, corr in taught])
    else:
        times = answer_times(runs, pset, correction, FAMILY, a.dtype)
    found = bands(times, a.level)
    out = {"gpu": gpu.slug, "dtype": a.dtype, "family": FAMILY, "level": a.level, "shapes": times.height,
           "runs": [str(p) for p in a.runs], "params": str(a.params), "params_sha256": digest(a.params),
           "correction": a.correction, "correction_sha256": digest(a.correction) if a.correction else None,
           "overrides": list(a.set or []), "corrected_folds": folds, **found,
           "note": "measured time / predicted time of the optimizer's answer (and of --corrected's pick, "
                   "against its corrected time), on shapes no testlist holds; median and split-conformal "
                   "interval (gemmperf.optimize.band)"}
    write_text(str(output_path(a.out, (".json",))), json.dumps(out, indent=2) + "\n")
    if a.table:
        times.write_csv(output_path(a.table, (".csv",)))
    for name, b in found.items():
        print(f"{gpu.slug} {name}: " + (f"{b['n']} timed, median {b['median']:.3f}x, {b['level']:.0%} within "
                                        f"{b['low']:.3f}-{b['high']:.3f}x" if b else "too few timed for a band"))
    print(f"wrote {a.out}", file=sys.stderr)
    return 0


def taught_folds(a, pset, jobs: int) -> list:
    """A correction that learned from the timed answers would read its own answers back:
    its band is cross-fitted instead (``fit.accuracy.fold_corrections``): each fold of the
    answers' sets is asked of a correction of the same constants (--params) learned on the
    development rows of --measurements (less --heldout) and the other folds' answers, on
    ``jobs`` worker processes. UserError where the inputs are not those the correction was fitted on."""
    if not a.measurements:
        raise UserError(f"{a.correction}: this correction learned from timed answers, so its band is cross-fitted: "
                        "give the --measurements (and --heldout) it was fitted with")
    meas = read_measurements(a.measurements)
    dev, held = split_rows(meas, a.heldout)
    answers = answer_rows(a.runs)
    record = json.loads(Path(a.params).read_text()).get("fit") or {}
    Shipped(pset, None, record, origin=str(a.params)).check(fit_record(meas, a.heldout, dev, answers), residual=False)
    return fold_corrections(dev, pset, pset.gpu.sms, outside(answers, held), jobs=jobs)  # as gemmperf fit learned them


def load_band(path: Path, params_path: Path, overrides: list[str] | None,
              correction_path: Path | None = None) -> dict | None:
    """The band at ``path`` if it was computed with these very parameters (the file's
    sha256 and the ``--set`` overrides), else None: a band of another fit says nothing of
    this one's answers. Its "corrected" band is kept only for the same correction file."""
    if not (path.is_file() and params_path.is_file()):
        return None
    try:
        found = json.loads(path.read_text())
    except (OSError, ValueError) as err:
        raise UserError(f"{path}: cannot read the answer band ({err}); run `gemmperf answer-band` again") from None
    if not isinstance(found, dict):
        raise UserError(f"{path}: not an answer band (a JSON object); run `gemmperf answer-band` again")
    for name in ("answer", "corrected"):
        b = found.get(name)
        if b is not None and not is_band(b):
            raise UserError(f"{path}: {name} = {b!r}: not a band (n, median, low, high, level); "
                            "run `gemmperf answer-band` again")
    if found.get("params_sha256") != digest(params_path) or found.get("overrides", []) != list(overrides or []):
        return None
    if not (correction_path is not None and correction_path.is_file()
            and found.get("correction_sha256") == digest(correction_path)):
        found["corrected"] = None
    return found


def band_sentence(b: dict, corrected: bool = False) -> str:
    """'how long: ...' spelt out for an answer (``corrected``: --corrected's pick), from its
    band entry (the band with ``expect_us``, ``low_us``, ``high_us``)."""
    what = ("--corrected's picks", "corrected time") if corrected else ("the answers", "predicted time")
    return (f"how long{' (corrected)' if corrected else ''}: expect {us(b['expect_us'])} "
            f"({us(b['low_us'])} to {us(b['high_us'])}): {what[0]} timed on {b['n']} shapes "
            f"no fit saw ran {b['low']:.2f}-{b['high']:.2f}x their {what[1]} ({b['level']:.0%}), median "
            f"{b['median']:.2f}x")


def band_clause(entry: dict | None) -> str:
    """'; how long: ...' after an answer's line, from its band entry (with ``expect_us``,
    ``low_us``, ``high_us``); '' without one."""
    if not entry:
        return ""
    return (f"; how long: expect {us(entry['expect_us'])} ({us(entry['low_us'])} to {us(entry['high_us'])}: "
            f"the answer band, {entry['level']:.0%} of {entry['n']} answers timed on fresh shapes)")


EXAMPLE = """example (what the workflow's rule answer_band runs for a GPU with shipped timed answers):
  gemmperf answer-band --gpu results/h100-sxm5-80gb/hardware.json \\
      --params results/h100-sxm5-80gb/params.json --correction results/h100-sxm5-80gb/correction.json \\
      --runs results/h100-sxm5-80gb/shipped/answers/*.csv --out results/h100-sxm5-80gb/answer_band.json \\
      --measurements results/h100-sxm5-80gb/shipped/measurements/*.csv

The runs are configurations timed on shapes no testlist holds (benchmarks/optimizer_picks.py);
each shape's answer is asked of this fit again, and counts where a run timed it. A
correction that learned from these runs (gemmperf fit --answers) is refitted without each
fold of their sets from the measurements it was fitted on, so --corrected's band is never
read off runs its correction saw.
`gemmperf optimize --shape` then gives the band with its answer (and --corrected's pick)
while results/<gpu>/params.json is the file the band was computed with.
"""


def add_parsers(sub) -> None:
    p = sub.add_parser("answer-band", help="how long the optimizer's answers ran against their prediction",
                       description="The optimizer's answer (and --corrected's pick) for each shape of timed runs on "
                       "shapes no fit saw, under this fit: measured / predicted, their median and a split-conformal "
                       "interval, for `gemmperf optimize` to give with its answer.",
                       epilog=EXAMPLE, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--gpu", required=True, help="catalog slug or hardware.json of the GPU the runs were timed on")
    p.add_argument("--params", required=True, help="params.json (gemmperf fit) the answers are asked of")
    p.add_argument("--correction", help="correction.json: also the band of --corrected's pick")
    p.add_argument("--runs", nargs="+", required=True, metavar="CSV",
                   help="timed answers files (shape, config, status, time_us), e.g. "
                   "results/h100-sxm5-80gb/shipped/answers/dev.csv")
    p.add_argument("--measurements", nargs="*", default=[], metavar="CSV",
                   help="the measurement CSVs --params was fitted on: needed where --correction also learned from "
                   "these runs (gemmperf fit --answers), whose band is then cross-fitted by set")
    p.add_argument("--heldout", default=None, help="the testlist that fit held out (with --measurements)")
    p.add_argument("--dtype", default="bf16", help="the input dtype the runs were timed in (default bf16)")
    p.add_argument("--level", type=float, default=LEVEL, help=f"the band's coverage (default {LEVEL})")
    p.add_argument("--out", required=True, help="the band, JSON")
    p.add_argument("--table", help="also each shape's answer, predicted and measured times, CSV")
    p.add_argument("--jobs", type=int, default=0,
                   help="worker processes for a cross-fitted band's fold corrections (default 0: every available "
                   "core; the band is the same for any number)")
    add_set_flag(p)
    p.set_defaults(func=cmd_answer_band)
