"""Write results/{gpu}/tilings/{testlist}.csv: Z3-optimal configuration per shape and family."""
import sys

from gemmperf.hardware import load_gpu
from gemmperf.optimize.tilings import mean_regret, read_measurements, tilings_table
from gemmperf.params import ParamSet
from gemmperf.problem import read_testlist

sys.stdout = sys.stderr = open(snakemake.log[0], "w")
gpu = load_gpu(snakemake.input.hardware)
pset = ParamSet.load(snakemake.input.params, gpu)
pset.overrides.update(snakemake.params.overrides)
meas = read_measurements(snakemake.input.measurements) if snakemake.input.measurements else None
table = tilings_table(
    read_testlist(snakemake.input.testlist), gpu, pset, snakemake.params.families,
    snakemake.params.model, meas, space="auto",
)
table.write_csv(snakemake.output[0])
print(f"{table.height} tilings under {snakemake.params.model}")
if meas is not None:
    print(f"mean regret: {mean_regret(table)}")
