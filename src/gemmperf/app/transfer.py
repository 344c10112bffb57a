"""``gemmperf transfer``: one GPU's fit carried onto another GPU with no GEMM measured on
it (``fit.transfer``), scored against that GPU's measurements beside its baselines."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import polars as pl

from ..errors import UserError
from ..fit import protocol
from ..fit.residual import Correction
from ..fit.transfer import baselines, score
from ..tables import read_measurements
from .modelparams import carried, fitted_of
from .resolve import resolve_gpu, write_text


def _rows(paths: list[str], what: str) -> pl.DataFrame:
    """The development rows (ws-hopper, valid) of measurement CSVs; testlist = file stem."""
    if not paths:
        raise UserError(f"transfer: no {what} measurements given")
    return protocol.development({Path(p).stem: read_measurements(p) for p in paths})


def cmd_transfer(a) -> int:
    src_gpu, gpu = resolve_gpu(a.source_gpu), resolve_gpu(a.gpu)
    fitted = fitted_of(src_gpu, a.source_params, a.dtype, "--source-params")
    pset, source_base, target_base = carried(fitted, gpu, a.source_microbench, a.microbench, a.dtype)
    target = _rows(a.measurements, gpu.slug)
    source = _rows(a.source_measurements, src_gpu.slug) if a.source_measurements else None
    correction = Correction.load(a.source_correction) if a.source_correction else None
    preds, summary = score(baselines(fitted, source_base, target_base, pset), target, source, src_gpu.slug,
                           source_fit=fitted, correction=correction)
    onto = "microbenchmarks" if a.source_microbench and a.microbench else "descriptors"
    meta = {"source": src_gpu.slug, "target": gpu.slug, "dtype": a.dtype, "source_params": a.source_params,
            "against": onto, "rows": preds.height, "shapes": preds.select("m", "n", "k").unique().height,
            "note": f"no GEMM measured on {gpu.slug} enters the transfer; its rows only score it"}
    write_text(a.out, json.dumps({"meta": meta, "summary": summary.to_dicts()}, indent=2) + "\n")
    if a.table:
        Path(a.table).parent.mkdir(parents=True, exist_ok=True)
        summary.write_csv(a.table)
    if a.predictions:
        Path(a.predictions).parent.mkdir(parents=True, exist_ok=True)
        preds.write_parquet(a.predictions)
    print(f"{src_gpu.slug} -> {gpu.slug} ({a.dtype}, {preds.height} rows, against the {onto}):")
    for r in summary.filter(pl.col("class") == "all").iter_rows(named=True):
        print(f"  {r['model']:<48} MAPE {r['mape_pct']:5.1f}%  p95 {r['p95_ape_pct']:5.1f}%  "
              f"Spearman {r['spearman_mean']:.3f}  regret {r['regret_mean_pct']:.2f}%")
    print(f"wrote {a.out}", file=sys.stderr)
    return 0


EXAMPLE = """example (what `snakemake --cores all transfer` runs for each pair of GPUs with data):
  gemmperf transfer --source-gpu results/h100-sxm5-80gb/hardware.json \\
      --source-params results/h100-sxm5-80gb/params.json \\
      --source-correction results/h100-sxm5-80gb/correction.json \\
      --source-microbench results/h100-sxm5-80gb/shipped/microbench.csv \\
      --source-measurements results/h100-sxm5-80gb/shipped/measurements/*.csv \\
      --gpu results/h200-sxm-141gb/hardware.json --microbench results/h200-sxm-141gb/shipped/microbench.csv \\
      --measurements results/h200-sxm-141gb/shipped/measurements/*.csv \\
      --out results/transfer/h100-sxm5-80gb/to-h200-sxm-141gb.json"""


def add_parsers(sub) -> None:
    p = sub.add_parser("transfer", help="one GPU's fit carried onto another, scored on the other's measurements",
                       description="Carry one GPU's fit (its params.json) onto another GPU by the units of each "
                       "value (fit.transfer: microbenchmarked parameters by the fit's factor, the launch as it is, "
                       "constants by their descriptor defaults, DRAM and L2 rates by the measured copy rates, "
                       "the cost of clusters and the epilogue's by their microbenchmarks), with no GEMM measured "
                       "on the other GPU, and score it on that GPU's measured ws-hopper rows beside the "
                       "baselines: its descriptor alone, its microbenchmarks alone, the source's fit as it is, "
                       "and the source's measured times of the same configurations reused; with those, also "
                       "the transfer anchored on them (the source's measured time times the ratio of the "
                       "two GPUs' predictions); with --source-correction, also the transfer corrected by the "
                       "source's residual correction.",
                       epilog=EXAMPLE, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--source-gpu", required=True, help="the fitted GPU: catalog slug or hardware.json")
    p.add_argument("--source-params", required=True, help="its params.json (gemmperf fit)")
    p.add_argument("--source-correction", help="its correction.json (gemmperf fit): also score the transfer "
                   "corrected by it")
    p.add_argument("--source-microbench", nargs="?", help="its microbench.csv (both or neither: else descriptors)")
    p.add_argument("--source-measurements", nargs="*", default=[],
                   help="its measurement CSVs (the reused-times baseline and the anchored transfer)")
    p.add_argument("--gpu", required=True, help="the GPU predicted: catalog slug or hardware.json")
    p.add_argument("--microbench", nargs="?", help="its microbench.csv")
    p.add_argument("--measurements", nargs="+", required=True,
                   help="its measurement CSVs, which score the transfer (testlist = file stem)")
    p.add_argument("--dtype", default="bf16", help="input dtype (default bf16)")
    p.add_argument("--out", required=True, help="JSON summary to write")
    p.add_argument("--table", help="CSV of the summary (model x shape class)")
    p.add_argument("--predictions", help="Parquet of every row's predictions")
    p.set_defaults(func=cmd_transfer)
