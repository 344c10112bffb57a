"""ws-pipelined's polars side: configuration table -> evaluate() arrays -> result columns."""

from __future__ import annotations

import numpy as np
import polars as pl

from ...errors import UserError
from ...params import ParamSet
from .. import columns
from .compose import LIMITERS, evaluate
from .constants import CONSTANTS, constants_for
from .geometry import RASTER_IDS
from .inputs import EPILOGUE_CODES, INPUTS, SCHEDULE_CODES

RASTER_CODES = RASTER_IDS


def prepare(configs: pl.DataFrame, params: ParamSet) -> tuple[pl.DataFrame, dict[str, np.ndarray]]:
    """(filled config table, evaluate()'s input arrays) for every row."""
    df = columns.fill_configs(configs)
    unknown = sorted(set(df.get_column("raster").unique().to_list()) - set(RASTER_CODES))
    if unknown:
        raise UserError(f"configs: raster = {unknown[0]!r} is unknown; known: {', '.join(RASTER_CODES)}")
    pcols = columns.param_columns(df, params)
    pairs = df.select("family", "dtype").unique()
    table = [{"family": f, "dtype": d, **constants_for(params, f, d).as_dict()} for f, d in pairs.iter_rows()]
    schema = {"family": pl.Utf8, "dtype": pl.Utf8, **{c: pl.Float64 for c in CONSTANTS}}
    consts = df.select("family", "dtype").join(pl.DataFrame(table, schema=schema), on=["family", "dtype"],
                                               how="left", maintain_order="left").drop("family", "dtype")
    gpu = params.gpu
    sizes = df.select((pl.col("cluster_m") * pl.col("cluster_n")).alias("size")).get_column("size").unique().to_list()
    fit = {size: gpu.ctas_in_clusters(size) for size in sizes}
    work = pl.concat([
        df.select(*columns.INT_COLUMNS, pl.col("persistent").cast(pl.Int8), pl.col("stream_k").cast(pl.Int64),
                  pl.col("raster").replace_strict(RASTER_CODES, return_dtype=pl.Int64),
                  pl.col("epilogue").replace_strict(EPILOGUE_CODES, return_dtype=pl.Int64),
                  pl.col("schedule").replace_strict(SCHEDULE_CODES, return_dtype=pl.Int64),
                  (pl.col("cluster_m") * pl.col("cluster_n")).replace_strict(fit, return_dtype=pl.Int64)
                  .alias("cluster_ctas")),
        pcols, consts], how="horizontal")
    work = work.with_columns(pl.lit(float(params.gpu.l2_bytes)).alias("l2_bytes"))
    return df, columns.arrays(work, INPUTS)


def finish(df: pl.DataFrame, out: dict) -> pl.DataFrame:
    """``df`` plus evaluate()'s result columns, limiter codes as names."""
    return columns.attach(df, out, LIMITERS)


def predict(configs: pl.DataFrame, params: ParamSet, model_options: dict | None = None, **flags) -> pl.DataFrame:
    """Input columns plus predicted_us, limiter and the breakdown columns."""
    df, arr = prepare(configs, params)
    return finish(df, evaluate(**arr, model_options=model_options, **flags))
