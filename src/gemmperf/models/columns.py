"""The models' columns: configuration table in, numpy arrays out, result columns back.

Each model's numeric core is a vectorized ``evaluate(**arrays)``; ``run`` turns a
configuration table into those arrays (configs filled with ``KernelConfig`` defaults,
per-row parameters joined from ``ParamSet.get(family, dtype)`` for each distinct pair)
and the result back into columns. No Python loop touches individual rows.

Columns a model can ask for by name (its ``INPUTS``):
- configuration: m, n, k, tile_m, tile_n, tile_k, stages, cluster_m, cluster_n
- element sizes: in_bytes, out_bytes (``DTYPE_BYTES`` of dtype and out_dtype), sf_bytes_per_elem
  (block-scale bytes per input element: 1/16 for nvfp4, 0 otherwise)
- parameters (``params.PARAM_NAMES``): t_init_us, t_epilogue_us, load_bytes_per_us,
  load_latency_us, math_flops_per_us, math_latency_us, l2_hit_rate
- GPU: sms, dram_bytes_per_us, peak_flops_per_us (whole GPU, tensor cores where the family uses them)
"""

from __future__ import annotations

import numpy as np
import polars as pl

from ..errors import UserError
from ..kernels import get_family
from ..params import PARAM_NAMES, ParamSet
from ..problem import CONFIG_COLUMNS, DTYPE_BYTES, EPILOGUES, OUT_DTYPES, SCALE_FACTORS, SCHEDULES, KernelConfig
from ..tables import INT_COLUMNS, SHAPE_COLUMNS, ZERO_OK_COLUMNS
_DEFAULTS = KernelConfig().as_dict()
_BYTES = {d: float(b) for d, b in DTYPE_BYTES.items()}
_SF_PER_ELEM = {d: nbytes / elems for d, (elems, nbytes) in SCALE_FACTORS.items()}


# ------------------------------------------------------------------ numeric helpers


def ceil_div(a, b):
    """Integer ceil(a / b) for non-negative int arrays."""
    return -(-a // b)


def operand_bytes(rows, kk, in_bytes, sf_bytes_per_elem):
    """Bytes of a rows x kk operand tile, block-scale factors included."""
    return rows * kk * (in_bytes + sf_bytes_per_elem)


def stage_times(tile_m, tile_n, tile_k, in_bytes, sf_bytes_per_elem,
                load_bytes_per_us, load_latency_us, math_flops_per_us, math_latency_us):
    """The paper's per-stage times T_LOAD_A, T_LOAD_B, T_MATH (us), per CTA."""
    t_load_a = operand_bytes(tile_m, tile_k, in_bytes, sf_bytes_per_elem) / load_bytes_per_us + load_latency_us
    t_load_b = operand_bytes(tile_n, tile_k, in_bytes, sf_bytes_per_elem) / load_bytes_per_us + load_latency_us
    t_math = 2.0 * tile_m * tile_n * tile_k / math_flops_per_us + math_latency_us
    return t_load_a, t_load_b, t_math


def waves(m, n, tile_m, tile_n, sms):
    """(output tiles, waves) for one CTA per tile and one CTA per SM (paper 2.1.1)."""
    tiles = ceil_div(m, tile_m) * ceil_div(n, tile_n)
    return tiles, ceil_div(tiles, sms)


# ------------------------------------------------------------------ polars side


def fill_configs(configs: pl.DataFrame) -> pl.DataFrame:
    """Add missing config columns (KernelConfig defaults; out_dtype the input dtype's output
    type, ``problem.OUT_DTYPES``: bf16 for fp8, else the dtype itself), cast, check."""
    if not isinstance(configs, pl.DataFrame):
        raise UserError(f"configs must be a polars DataFrame, got {type(configs).__name__}")
    missing = [c for c in SHAPE_COLUMNS if c not in configs.columns]
    if missing:
        raise UserError(f"configs: missing column(s) {', '.join(missing)}")
    df = configs.with_columns(
        pl.lit(_DEFAULTS[c]).alias(c) for c in CONFIG_COLUMNS if c not in configs.columns
    )
    if "out_dtype" not in df.columns:  # the kernel's output type (fp8 writes bf16: KernelConfig.out_dtype)
        df = df.with_columns(pl.col("dtype").cast(pl.Utf8).replace(OUT_DTYPES).alias("out_dtype"))
    try:
        df = df.with_columns(
            *(pl.col(c).cast(pl.Int64) for c in INT_COLUMNS),
            pl.col("family", "dtype", "out_dtype", "epilogue", "schedule").cast(pl.Utf8),
            pl.col("persistent", "stream_k").cast(pl.Boolean),
        )
    except pl.exceptions.PolarsError as err:
        raise UserError(f"configs: a column has the wrong type ({err})") from None
    for c in INT_COLUMNS + ("family", "dtype", "out_dtype"):
        nulls = df.get_column(c).null_count()
        if nulls:
            raise UserError(f"configs: column {c} has {nulls} empty value(s)")
    for c in INT_COLUMNS:
        low = 0 if c in ZERO_OK_COLUMNS else 1
        bad = df.filter(pl.col(c) < low)
        if bad.height:
            raise UserError(f"configs: {c} = {bad.get_column(c)[0]} must be >= {low}")
    for c, known in (("dtype", DTYPE_BYTES), ("out_dtype", DTYPE_BYTES), ("epilogue", EPILOGUES),
                     ("schedule", SCHEDULES)):
        unknown = sorted(set(df.get_column(c).unique().to_list()) - set(known))
        if unknown:
            raise UserError(f"configs: {c} = {unknown[0]!r} is unknown; known: {', '.join(known)}")
    return df


def param_columns(df: pl.DataFrame, params: ParamSet) -> pl.DataFrame:
    """One row of parameters per row of ``df`` (same order), joined by (family, dtype)."""
    gpu = params.gpu
    pairs = df.select("family", "dtype").unique()
    # a handful of distinct pairs, not rows: this loop is over parameter sets
    table = []
    for family, dtype in pairs.iter_rows():
        p = params.get(family, dtype)
        table.append(
            {
                "family": family,
                "dtype": dtype,
                **{name: float(getattr(p, name)) for name in PARAM_NAMES},
                "sms": gpu.sms,
                "dram_bytes_per_us": gpu.dram_bytes_per_s / 1e6,
                "peak_flops_per_us": gpu.peak_flops(dtype, get_family(family).tensor_cores) / 1e6,
            }
        )
    schema = {"family": pl.Utf8, "dtype": pl.Utf8, **{n: pl.Float64 for n in PARAM_NAMES},
              "sms": pl.Int64, "dram_bytes_per_us": pl.Float64, "peak_flops_per_us": pl.Float64}
    joined = df.select("family", "dtype", "out_dtype").join(
        pl.DataFrame(table, schema=schema), on=["family", "dtype"], how="left", maintain_order="left"
    )
    return joined.with_columns(
        pl.col("dtype").replace_strict(_BYTES, return_dtype=pl.Float64).alias("in_bytes"),
        pl.col("out_dtype").replace_strict(_BYTES, return_dtype=pl.Float64).alias("out_bytes"),
        pl.col("dtype").replace_strict(_SF_PER_ELEM, default=0.0, return_dtype=pl.Float64)
        .alias("sf_bytes_per_elem"),
    ).drop("family", "dtype", "out_dtype")


def arrays(df: pl.DataFrame, names) -> dict[str, np.ndarray]:
    return {name: df.get_column(name).to_numpy() for name in names}


def run(configs: pl.DataFrame, params: ParamSet, model) -> pl.DataFrame:
    """predict() for a model module: fill, join parameters, evaluate, attach columns."""
    df = fill_configs(configs)
    pcols = param_columns(df, params)
    work = pl.concat([df.select(c for c in INT_COLUMNS), pcols], how="horizontal")
    return attach(df, model.evaluate(**arrays(work, model.INPUTS)), model.LIMITERS)


def attach(df: pl.DataFrame, out: dict, limiters) -> pl.DataFrame:
    """``df`` plus evaluate()'s arrays as columns, limiter codes turned into names."""
    out = dict(out)
    limiter = np.asarray(limiters, dtype=object)[out.pop("limiter")]
    result = {"predicted_us": pl.Series(out.pop("predicted_us"), dtype=pl.Float64),
              "limiter": pl.Series(limiter.tolist(), dtype=pl.Utf8)}
    for name, values in out.items():
        dtype = pl.Int64 if np.issubdtype(values.dtype, np.integer) else pl.Float64
        result[name] = pl.Series(values, dtype=dtype)
    # overwrite columns of an earlier prediction instead of suffixing them
    df = df.drop([c for c in result if c in df.columns])
    return df.with_columns(s.alias(name) for name, s in result.items())
