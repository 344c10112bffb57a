"""Write results/{gpu}/predictions/{testlist}.parquet: every model on every configuration
(the measured ones when there are measurements, else every legal configuration)."""
import sys

import polars as pl

from gemmperf.configs import read_configs
from gemmperf.hardware import load_gpu
from gemmperf.params import ParamSet
from gemmperf.predictions import candidate_table, predict_all
from gemmperf.problem import read_testlist

sys.stdout = sys.stderr = open(snakemake.log[0], "w")
gpu = load_gpu(snakemake.input.hardware)
pset = ParamSet.load(snakemake.input.params, gpu)
pset.overrides.update(snakemake.params.overrides)
if snakemake.input.measurements:
    table = read_configs(snakemake.input.measurements)
    print(f"{table.height} measured configurations")
else:
    shapes = read_testlist(snakemake.input.testlist)
    table = candidate_table(shapes, gpu, snakemake.params.families, snakemake.params.dtype)
    print(f"no measurements: {table.height} legal configurations of {len(shapes)} shapes")
correction = None
if snakemake.input.correction:
    from gemmperf.fit.residual import Correction

    correction = Correction.load(snakemake.input.correction)
preds = predict_all(table, pset, snakemake.params.models, correction)
preds.write_parquet(snakemake.output[0])
print(f"wrote {preds.height} predictions")
