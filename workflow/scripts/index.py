"""Write results/index.html linking every GPU's report pages."""
import sys
from pathlib import Path

from gemmperf.report.basic import write_index

sys.stdout = sys.stderr = open(snakemake.log[0], "w")
write_index(Path(snakemake.output[0]), dict(zip(snakemake.params.gpus, snakemake.input.summaries)))
