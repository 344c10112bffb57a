"""Write results/{gpu}/report/*.html (seven linked offline pages) and the key charts' PNGs."""
import sys
from pathlib import Path

from gemmperf.report.data import load
from gemmperf.report.pages import write_gpu_report

sys.stdout = sys.stderr = open(snakemake.log[0], "w")
inp, par = snakemake.input, snakemake.params
tl = list(par.testlists)
data = load(
    hardware=inp.hardware,
    params=inp.params,
    predictions=dict(zip(tl, inp.predictions)),
    tilings=dict(zip(tl, inp.tilings)),
    source=par.source,
    note=par.note,
    skipped=par.skipped,
    heldout=par.heldout,
    accuracy=inp.accuracy or None,
    out_of_sample=inp.out_of_sample or None,
    microbench=inp.microbench or None,
    kernel_speed=inp.kernel_speed or None,
    shipped_readme=inp.shipped_readme or None,
)
for path in write_gpu_report(data, Path(snakemake.output.index).parent, Path(snakemake.output.images[0]).parent):
    print("wrote", path)
