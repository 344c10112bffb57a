"""Best configuration per shape by exhaustive search over a prediction table."""

from __future__ import annotations

import polars as pl

SHAPE = ["m", "n", "k", "dtype"]


def best_per_shape(predictions: pl.DataFrame, model: str, by: list[str] | None = None) -> pl.DataFrame:
    """For each shape (and each group in ``by``, e.g. family), the configuration the
    model predicts fastest, with the runner-up's predicted time."""
    keys = SHAPE + (by or [])
    ranked = (
        predictions.filter(pl.col("model") == model)
        .sort([*keys, "predicted_us"])
        .with_columns(pl.col("predicted_us").rank("ordinal").over(keys).alias("rank"))
    )
    best = ranked.filter(pl.col("rank") == 1).drop("rank")
    runner = ranked.filter(pl.col("rank") == 2).select([*keys, pl.col("predicted_us").alias("runner_up_us")])
    return best.join(runner, on=keys, how="left").sort(keys)
