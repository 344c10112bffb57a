"""The predict stage: which configurations to predict, and every model on them."""

from __future__ import annotations

import polars as pl

from . import configs as cfgs
from .errors import UserError
from .hardware import GPU
from .kernels import families_on
from .models import predict
from .params import ParamSet
from .problem import Shape
from .tables import CORRECTED_MODEL


def candidate_table(shapes: list[Shape], gpu: GPU, families: list[str], dtype: str) -> pl.DataFrame:
    """Every shape with the default sweep of each family that runs on ``gpu`` (in the
    dtype the family computes for ``dtype``); a family with no kernel for that dtype
    (ws-ampere and fp8) adds nothing."""
    frames = []
    for family in families_on(gpu, families):
        fd = family.dtype_for(dtype)
        configs = family.default_sweep(gpu, fd)
        if not configs:
            continue
        fam_shapes = [Shape(s.m, s.n, s.k, fd) for s in shapes]
        frames.append(cfgs.cross(fam_shapes, configs))
    if not frames:
        raise UserError(f"none of the families {', '.join(families)} runs on {gpu.slug} in {dtype}")
    return pl.concat(frames, how="vertical_relaxed")


def corrected(table: pl.DataFrame, pset: ParamSet, correction) -> pl.DataFrame:
    """ws-pipelined with the learned residual correction applied (predicted_us corrected)."""
    out = correction(predict(table, pset, "ws-pipelined"))
    return out.with_columns(
        pl.col("predicted_us").alias("uncorrected_us"), pl.col("corrected_us").alias("predicted_us")
    )


def predict_all(table: pl.DataFrame, pset: ParamSet, models: list[str], correction=None) -> pl.DataFrame:
    """All models on one table, stacked long with a ``model`` column; with a
    ``correction``, also the corrected ws-pipelined model."""
    out = [predict(table, pset, m).with_columns(pl.lit(m).alias("model")) for m in models]
    if correction is not None:
        out.append(corrected(table, pset, correction).with_columns(pl.lit(CORRECTED_MODEL).alias("model")))
    return pl.concat(out, how="diagonal_relaxed")
