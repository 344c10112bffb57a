"""Merge the collect shards of one testlist into one table."""
import sys

from gemmperf.bench.merge import merge_shards

sys.stdout = sys.stderr = open(snakemake.log[0], "w")
merge_shards(list(snakemake.input), snakemake.output[0])
