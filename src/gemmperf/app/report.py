"""``gemmperf report`` (one GPU's linked offline pages and chart PNGs) and ``gemmperf
index`` (results/index.html across GPUs)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from ..errors import UserError
from ..report.basic import write_index
from ..report.compare import best_tilings, measured_configs, picks_of, time_ratios
from ..report.data import load
from ..report.pages import write_gpu_report
from .modelparams import add_set_flag, parse_overrides


def _by_testlist(testlists: list[str], paths: list[str], what: str) -> dict[str, str]:
    if len(testlists) != len(paths):
        raise UserError(f"report: {len(paths)} {what} files for {len(testlists)} testlists")
    return dict(zip(testlists, paths))


def cmd_report(a) -> int:
    testlists = [t for t in a.testlists.split(",") if t]
    try:
        skipped = json.loads(a.skipped)
    except ValueError as err:
        raise UserError(f"--skipped: not JSON ({err})") from None
    data = load(
        hardware=a.hardware, params=a.params, source=a.source, note=a.note, skipped=skipped,
        predictions=_by_testlist(testlists, a.predictions, "predictions"),
        tilings=_by_testlist(testlists, a.tilings, "tilings"),
        heldout=a.heldout, accuracy=a.accuracy, out_of_sample=a.out_of_sample, microbench=a.microbench,
        kernel_speed=a.kernel_speed, shipped_readme=a.shipped_readme, ablations=a.ablations, headline=a.headline,
        headline_picks=a.headline_picks, answer_band=a.answer_band,
        measurements={Path(m).stem: m for m in a.measurements} or None,
    )
    data.pset.overrides.update(parse_overrides(a.set))
    for path in write_gpu_report(data, Path(a.out_dir), Path(a.images_dir) if a.images_dir else None):
        print("wrote", path, file=sys.stderr)
    # what the cross-GPU index compares: the measured configurations and the picks
    measured_configs(list((data.measurements or {}).values())).write_parquet(Path(a.out_dir) / "measured.parquet")
    picks_of(list(data.tilings.values())).write_parquet(Path(a.out_dir) / "picks.parquet")
    return 0


def _parquet(path: str):
    import polars as pl

    try:
        return pl.read_parquet(path)
    except (OSError, pl.exceptions.PolarsError) as err:
        raise UserError(f"{path}: cannot read ({str(err).splitlines()[0]})") from None


def cmd_index(a) -> int:
    gpus = [g for g in a.gpus.split(",") if g]
    if len(gpus) != len(a.summaries):
        raise UserError(f"index: {len(a.summaries)} summaries for {len(gpus)} GPUs")
    compare = None
    if a.measured or a.picks:
        if not (len(a.measured) == len(a.picks) == len(gpus)):
            raise UserError(f"index: {len(a.measured)} --measured and {len(a.picks)} --picks files for "
                            f"{len(gpus)} GPUs")
        measured = {g: _parquet(p) for g, p in zip(gpus, a.measured)}
        picks = {g: _parquet(p) for g, p in zip(gpus, a.picks)}
        compare = (time_ratios(measured), best_tilings(picks))
    write_index(Path(a.out), dict(zip(gpus, a.summaries)), compare)
    print(f"wrote {a.out}", file=sys.stderr)
    return 0


REPORT_HELP = """One GPU's report: seven linked HTML pages that open offline (overview, predicted vs
measured, where the errors are, roofline, timeline, tilings, kernels), PNGs of the key
charts, and for `gemmperf index` summary.json, measured.parquet (the configurations
measured ok, median time) and picks.parquet (the optimizer's pick and the measured best
per shape). The overview leads with where the data came
from, the best model's accuracy out of sample and its predicted-against-measured chart.
The workflow's rule `report` calls it with every file of one GPU; by hand, the files the
workflow wrote under results/<gpu>/ (one --predictions and --tilings file per testlist,
in the order of --testlists)."""

REPORT_EXAMPLE = """example:
  gemmperf report --hardware results/h100-sxm5-80gb/hardware.json \\
      --params results/h100-sxm5-80gb/params.json --source shipped --testlists squares \\
      --predictions results/h100-sxm5-80gb/predictions/squares.parquet \\
      --tilings results/h100-sxm5-80gb/tilings/squares.csv \\
      --accuracy results/h100-sxm5-80gb/accuracy.csv --out-dir /tmp/report
  (then open /tmp/report/index.html)"""

INDEX_HELP = """results/index.html: one table row per GPU (where its data came from, measured
configurations, best model held out and cross-validated) and links to every page of each
GPU's report, from the summary.json each `gemmperf report` writes. With --measured and
--picks (also written by `gemmperf report`), the GPUs side by side: the measured time of
the same configurations against the first GPU's, per shape class, and each GPU's best
tiling per shape."""

INDEX_EXAMPLE = """example:
  gemmperf index --gpus h100-sxm5-80gb,b200 \\
      --summaries results/h100-sxm5-80gb/report/summary.json results/b200/report/summary.json \\
      --out results/index.html"""


def add_parsers(sub) -> None:
    p = sub.add_parser("report", help="one GPU's report: linked offline HTML pages and PNGs of the key charts",
                       description=REPORT_HELP, epilog=REPORT_EXAMPLE,
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--hardware", required=True, help="the GPU's hardware.json")
    p.add_argument("--params", required=True, help="params.json (the fit's, or any gemmperf parameters file)")
    p.add_argument("--testlists", required=True, help="comma-separated testlists, in the order of the files")
    p.add_argument("--predictions", nargs="+", required=True, help="predictions Parquet per testlist (gemmperf predict)")
    p.add_argument("--tilings", nargs="+", required=True, help="tilings CSV per testlist (gemmperf optimize)")
    p.add_argument("--source", required=True, choices=("measure", "shipped", "catalog"),
                   help="where the data is from: measured here, shipped reference data, or catalog only")
    p.add_argument("--note", default="", help="one sentence on where the data comes from, shown first")
    p.add_argument("--skipped", default="{}", help='JSON {stage: why it was skipped}, e.g. \'{"collect": "no GPU"}\'')
    p.add_argument("--heldout", help="the held-out testlist (e.g. llm)")
    p.add_argument("--accuracy", nargs="?", help="accuracy.csv (gemmperf accuracy --table)")
    p.add_argument("--out-of-sample", nargs="?", help="out_of_sample.parquet (gemmperf accuracy --predictions)")
    p.add_argument("--ablations", nargs="?",
                   help="ablations.csv (gemmperf accuracy --ablations-only --table); absent: the report says how to run them")
    p.add_argument("--headline", nargs="?",
                   help="headline.csv (gemmperf accuracy --splits testlist,nk --table): leave one testlist out "
                   "and grouped by (n, k), per model and shape class, on the accuracy page")
    p.add_argument("--answer-band", nargs="?",
                   help="answer_band.json (gemmperf answer-band): how long the optimizer's answers ran against "
                   "their prediction on fresh shapes")
    p.add_argument("--headline-picks", nargs="?",
                   help="headline_picks.csv (gemmperf accuracy --splits ... --picks): each model's pick per shape")
    p.add_argument("--measurements", nargs="*", default=[],
                   help="measurement CSVs, one per testlist named <testlist>.csv: rows measured and verified")
    p.add_argument("--microbench", nargs="?", help="microbench.csv")
    p.add_argument("--kernel-speed", nargs="?", help="benchmarks/results/kernel_speed_*.json")
    p.add_argument("--shipped-readme", nargs="?", help="the shipped data's README.md")
    p.add_argument("--out-dir", required=True, help="folder of the pages")
    p.add_argument("--images-dir", help="folder of the PNGs (default: none)")
    add_set_flag(p)
    p.set_defaults(func=cmd_report)

    p = sub.add_parser("index", help="results/index.html: every GPU's report, linked",
                       description=INDEX_HELP, epilog=INDEX_EXAMPLE,
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", required=True, help="index.html to write")
    p.add_argument("--gpus", required=True, help="comma-separated GPU slugs, in the order of the summaries")
    p.add_argument("--summaries", nargs="+", required=True, help="summary.json per GPU (gemmperf report)")
    p.add_argument("--measured", nargs="*", default=[],
                   help="measured.parquet per GPU (gemmperf report writes it beside the pages): the GPUs side by "
                   "side, measured time of the same configurations against the first GPU's")
    p.add_argument("--picks", nargs="*", default=[],
                   help="picks.parquet per GPU (gemmperf report writes it): each GPU's best tiling per shape")
    p.set_defaults(func=cmd_index)
