"""The H100 rows shipped on 2026-11-22 (28 fixed configurations per shape), kept in
tests/data/reference/predictions.parquet: the shipped measurements were replaced in
issue 17, and the behaviour references (test_reference, the tilings of test_optimize)
were made from these rows. Written back to one CSV per testlist, with the files' columns
in their order, so they read as the shipped files did. ``without_jitter``: ws-pipelined as
the references were written in one respect, the hard max of the ring's period."""

from __future__ import annotations

from pathlib import Path

import polars as pl

PARQUET = Path(__file__).resolve().parent / "data" / "reference" / "predictions.parquet"
COLUMNS = ["m", "n", "k", "family", "dtype", "tile_m", "tile_n", "tile_k", "stages", "cluster_m", "cluster_n",
           "persistent", "raster", "mode", "out_dtype", "acc_dtype", "status", "reason", "time_us", "time_us_min",
           "time_us_max", "spread", "repeats", "launches_per_repeat", "converged", "max_rel_err", "registers",
           "smem_bytes", "spill_bytes", "gpu", "device", "driver", "cuda", "sm_clock_start_mhz", "sm_clock_end_mhz",
           "warm_l2", "timestamp"]


def write_reference_rows(folder: Path, testlists) -> dict[str, Path]:
    """testlist -> the CSV of its old shipped rows, written under ``folder``."""
    rows = pl.read_parquet(PARQUET).filter((pl.col("case") == "h100/microbench") & (pl.col("model") == "sol"))
    paths = {}
    for name in testlists:
        paths[name] = folder / f"{name}.csv"
        rows.filter(pl.col("testlist") == name).select(COLUMNS).write_csv(paths[name])
    return paths


def without_jitter(mp) -> None:
    """Patch (``mp``: a pytest MonkeyPatch) ws-pipelined's evaluate(), where the table and
    the optimizer call it, to run with ``ring_jitter`` off: since issue 17's step 9 the
    ring's period is a p-norm of its terms on every row, and the references hold the hard
    max; every other effect stays as today."""
    from gemmperf.models import ws_pipelined
    from gemmperf.models.ws_pipelined import table

    real = ws_pipelined.evaluate

    def evaluate(**kw):
        return real(**kw, ring_jitter=False)

    mp.setattr(table, "evaluate", evaluate)
    mp.setattr(ws_pipelined, "evaluate", evaluate)
