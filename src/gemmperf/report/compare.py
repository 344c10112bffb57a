"""GPUs side by side for results/index.html (issue 18): the measured time of the same
configurations on each GPU against the first, per shape class, and each GPU's best tiling
per shape (the optimizer's pick among what the workflow searched).

Functions take each GPU's tables by slug (the first GPU is the reference) and return
tables; ``index`` renders them."""

from __future__ import annotations

import math

import polars as pl

from ..fit.protocol import CLASSES
from .. import tables
from ..tables import CONFIG_KEY, TILING_COLUMNS, with_config_defaults


def measured_configs(frames: list[pl.DataFrame]) -> pl.DataFrame:
    """``tables.measured_configs`` of a run's measurement tables together: what ``report``
    leaves for the index (empty for a run without measurements: a catalog GPU or dtype)."""
    if not frames:
        return pl.DataFrame()
    return tables.measured_configs(pl.concat([with_config_defaults(f) for f in frames], how="diagonal_relaxed"))


PICK_COLUMNS = ("m", "n", "k", "dtype", "family", *TILING_COLUMNS, "predicted_us", "best_measured_us",
                *(f"best_{c}" for c in TILING_COLUMNS))


def picks_of(tilings: list[pl.DataFrame]) -> pl.DataFrame:
    """The optimizer's pick and the measured best per shape and family of a run's tilings
    tables (``PICK_COLUMNS``), one row per shape and family. What ``report`` leaves for the index."""
    if not tilings:
        return pl.DataFrame()
    df = pl.concat([t.select([c for c in PICK_COLUMNS if c in t.columns]) for t in tilings], how="diagonal_relaxed")
    return df.unique(["m", "n", "k", "dtype", "family"], keep="first", maintain_order=True)


def time_ratios(measured: dict[str, pl.DataFrame]) -> pl.DataFrame:
    """Per GPU after the first and per class ("all", then ``fit.protocol.CLASSES``, then each
    family): the configurations measured ok on both (``measured_configs`` of each, paired
    by configuration), and the geometric mean, 5th and 95th percentile of time on the GPU /
    time on the first. A GPU without measurements has no rows; empty with fewer than two
    measured GPUs."""
    slugs = [slug for slug, df in measured.items() if df.height]
    rows = []
    if len(slugs) < 2:
        return pl.DataFrame()
    ref = measured[slugs[0]]
    for slug in slugs[1:]:
        other = measured[slug].rename({"time_us": "other_us"})
        both = ref.join(other, on=list(CONFIG_KEY), how="inner").with_columns(
            (pl.col("other_us") / pl.col("time_us")).log().alias("log_ratio"))
        families = [(f"family {f}", pl.col("family") == f) for f in sorted(both.get_column("family").unique())]
        for cls, expr in [("all", pl.lit(True)), *CLASSES.items(), *families]:
            part = both.filter(expr).get_column("log_ratio")
            if part.len() == 0:
                continue
            rows.append({"GPU": slug, "against": slugs[0], "class": cls, "configurations": part.len(),
                         "geomean ratio": math.exp(part.mean()),
                         "p5": math.exp(part.quantile(0.05, "nearest")),
                         "p95": math.exp(part.quantile(0.95, "nearest"))})
    return pl.DataFrame(rows)


def config_label(row: dict) -> str:
    """A configuration in one short line: tile, stages, cluster, schedule, epilogue and
    what is not the default (persistent, split-K, stream-K)."""
    text = (f"{row['tile_m']}x{row['tile_n']}x{row['tile_k']} s{row['stages']} "
            f"c{row['cluster_m']}x{row['cluster_n']} {row['schedule']} {row['epilogue']}")
    if row.get("persistent"):
        text += " persistent"
    if row.get("split_k", 1) and row.get("split_k", 1) > 1:
        text += f" split-K {row['split_k']}"
    if row.get("stream_k"):
        text += " stream-K"
    return text


def best_tilings(picks: dict[str, pl.DataFrame], family: str = "ws-hopper") -> pl.DataFrame:
    """Per shape of ``family`` (in the first GPU's order, shapes every GPU has), in the first
    GPU's input dtype (GPUs without such picks are left out): each GPU's pick
    (``config_label``) with its predicted time, and its measured best where measured;
    whether the picks agree and whether the measured bests do."""
    parts, slugs, dtype = [], [], None
    for slug, df in picks.items():
        if df.height == 0 or "family" not in df.columns:
            continue
        df = df.filter(pl.col("family") == family)
        dtype = dtype if dtype is not None or df.height == 0 else df.get_column("dtype")[0]
        df = df.filter(pl.col("dtype") == dtype)
        if df.height == 0:
            continue
        cols = [pl.struct(list(TILING_COLUMNS)).map_elements(config_label, return_dtype=pl.Utf8).alias(f"{slug} pick"),
                pl.col("predicted_us").alias(f"{slug} predicted us")]
        if "best_tile_m" in df.columns:
            best = pl.struct([pl.col(f"best_{c}").alias(c) for c in TILING_COLUMNS])
            cols.append(pl.when(pl.col("best_tile_m").is_not_null())
                        .then(best.map_elements(config_label, return_dtype=pl.Utf8)).alias(f"{slug} measured best"))
            cols.append(pl.col("best_measured_us").alias(f"{slug} measured best us"))
        parts.append(df.select("m", "n", "k", "dtype", *cols))
        slugs.append(slug)
    if len(parts) < 2:
        return pl.DataFrame()
    out = parts[0]
    for part in parts[1:]:
        out = out.join(part, on=["m", "n", "k", "dtype"], how="inner", maintain_order="left")
    same = [pl.concat_list([f"{s} pick" for s in slugs]).list.n_unique().eq(1).alias("same pick")]
    if all(f"{s} measured best" in out.columns for s in slugs):
        same.append(pl.concat_list([f"{s} measured best" for s in slugs]).list.n_unique().eq(1)
                    .alias("same measured best"))
    return out.with_columns(same)
