"""Merge the collect shards of one testlist into one table."""
import sys

from gemmperf.bench.merge import merge_shards

sys.stdout = sys.stderr = open(snakemake.log[0], "w")
rows = merge_shards(list(snakemake.input), snakemake.output[0])
print(f"{snakemake.output[0]}: {rows} rows from {len(snakemake.input)} shard(s)")
