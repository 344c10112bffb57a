"""Write results/{gpu}/params.json: fitted from microbenchmarks, or descriptor defaults."""
import sys

from gemmperf.fit.params import default_paramset
from gemmperf.hardware import load_gpu

sys.stdout = sys.stderr = open(snakemake.log[0], "w")
gpu = load_gpu(snakemake.input.hardware)
if snakemake.input.microbench:
    from gemmperf.fit.params import fit_paramset

    pset = fit_paramset(gpu, snakemake.input.microbench, snakemake.params.families, snakemake.params.dtype)
else:
    print("no microbenchmarks: writing descriptor defaults (source=default)")
    pset = default_paramset(gpu, snakemake.params.families, snakemake.params.dtype)
pset.save(snakemake.output[0])
