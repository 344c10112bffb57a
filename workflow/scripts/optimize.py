"""Write results/{gpu}/tilings/{testlist}.csv: the best predicted configuration per shape."""
import sys

import polars as pl

from gemmperf.optimize.exhaustive import best_per_shape

sys.stdout = sys.stderr = open(snakemake.log[0], "w")
preds = pl.read_parquet(snakemake.input.predictions)
best = best_per_shape(preds, snakemake.params.model, by=["family"])
keep = [c for c in best.columns if not c.endswith("_us") or c in ("predicted_us", "runner_up_us")]
best.select(keep).write_csv(snakemake.output[0])
print(f"{best.height} best configurations under {snakemake.params.model}")
