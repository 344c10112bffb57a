"""Write the behaviour reference of issue 13 (run once, on main at 38feef8, before the
renovation): every model's predictions on every shipped H100 row, with microbenchmark
parameters and with the fitted constants (+ the residual correction), and every model on
the default sweep of two catalog GPUs with descriptor defaults.

    PYTHONPATH=src python tests/data/reference/make_reference.py

It wrote params_microbench.json, params_fitted.json, correction.json and predictions.parquet
beside itself; tests/test_reference.py recomputes the same predictions with today's code
from those parameter files and asserts they are equal bit for bit. This script used the
library API of 38feef8 and is kept as the record of how the reference was made.
"""
import sys
from pathlib import Path

import polars as pl

from gemmperf.configs import read_configs
from gemmperf.fit.accuracy import fit_shipped
from gemmperf.fit.cli import _read_measurements
from gemmperf.fit.params import fit_paramset
from gemmperf.hardware import get_gpu, load_gpu
from gemmperf.predictions import candidate_table, predict_all
from gemmperf.problem import read_testlist

HERE = Path(__file__).resolve().parent
SHIPPED = Path("results/h100-sxm5-80gb/shipped")
TESTLISTS = ["dsv3", "paper-grid", "squares", "decode", "llm"]
FAMILIES = ["ws-hopper", "ws-ampere", "simt"]
MODELS = ["sol", "sync", "ws-stage", "ws-persistent", "ws-pipelined"]


def main():
    gpu = load_gpu(SHIPPED / "hardware.json")
    paths = [SHIPPED / "measurements" / f"{t}.csv" for t in TESTLISTS]
    mb = fit_paramset(gpu, str(SHIPPED / "microbench.csv"), FAMILIES, "bf16")
    fitted, corr, _ = fit_shipped(_read_measurements(paths), mb, "llm", residual=True)
    mb.save(HERE / "params_microbench.json")
    fitted.save(HERE / "params_fitted.json")
    corr.save(HERE / "correction.json")
    table = pl.concat([read_configs(p).with_columns(pl.lit(p.stem).alias("testlist")) for p in paths],
                      how="diagonal_relaxed")
    frames = [
        predict_all(table, mb, MODELS).with_columns(pl.lit("h100/microbench").alias("case")),
        predict_all(table, fitted, MODELS, corr).with_columns(pl.lit("h100/fitted").alias("case")),
    ]
    shapes = read_testlist("testlists/squares.csv")
    for slug in ("a100-sxm4-80gb", "h200-sxm-141gb"):
        g = get_gpu(slug)
        from gemmperf.params import ParamSet

        cand = candidate_table(shapes, g, FAMILIES, "bf16")
        frames.append(predict_all(cand, ParamSet(g), MODELS).with_columns(pl.lit(f"{slug}/default").alias("case")))
    out = pl.concat(frames, how="diagonal_relaxed")
    out.write_parquet(HERE / "predictions.parquet", compression="zstd", compression_level=19)
    print(f"{out.height} predictions, {len(out.columns)} columns", file=sys.stderr)


if __name__ == "__main__":
    main()
