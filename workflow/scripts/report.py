"""Write results/{gpu}/report/index.html."""
import sys
from pathlib import Path

import polars as pl

from gemmperf.hardware import load_gpu
from gemmperf.params import ParamSet
from gemmperf.report.basic import write_basic_report

sys.stdout = sys.stderr = open(snakemake.log[0], "w")
gpu = load_gpu(snakemake.input.hardware)
pset = ParamSet.load(snakemake.input.params, gpu)
tilings = {t: pl.read_csv(p) for t, p in zip(snakemake.params.testlists, snakemake.input.tilings)}
write_basic_report(
    Path(snakemake.output[0]), gpu, snakemake.params.note, snakemake.params.skipped, pset, tilings
)
