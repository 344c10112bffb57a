"""The H100 rows shipped on 2026-11-22 (28 fixed configurations per shape), kept in
tests/data/reference/predictions.parquet: the shipped measurements were replaced in
issue 17, and the behaviour references (test_reference, the tilings of test_optimize)
were made from these rows. Written back to one CSV per testlist, with the files' columns
in their order, so they read as the shipped files did. ``as_referenced``: ws-pipelined
with the effects added since the references were written switched off."""

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


# effects of ws-pipelined added after the references were written, each on every row it
# concerns: issue 17's step 9 (the ring's period a p-norm of its terms, where the
# references hold the hard max) and step 10 (the direct epilogue's per-thread work).
# Step 11's term of the zero fill of its own went in step 15, whose zero fill follows the
# rows in flight (a change of the references' own boundary_fill: the rows it concerns are
# left out where the references are compared); step 17 (C's stores at the DRAM's write rate,
# hidden behind the next tile and the L2's buffer, where the references hold the direct
# epilogue's stores at the load rate per wave); step 18 (the hit rate counted among the
# reads the L2 sees after multicast); step 19 (stream-K's slot lookup before each partial);
# step 20 (a slot's round trip waits behind the ring slots in flight); step 23 (the split
# rows' extra requests in a slot's round trip); step 24 (a non-persistent TMA-store CTA's
# exit waits for its staging buffers to be read); step 25 (a held slot, the round trip
# without the transfer, a deep ring's saturation); step 26 (an edge tile stores only its
# part inside C); step 27 (a two-stage ring of 256-row tiles waits for its consumer's issue);
# step 28 (a 128-accumulator tile's fix-up reads a partial in two round trips); step 29
# (the rows of a last k-block that overhangs K are zero-filled); step 30 (a slot's round
# trip is shorter where the L2 serves its load); step 31 (a second consumer warpgroup
# slows a thread's direct stores); step 32 (the power cap's clock drop on a long run); step
# 33 (a sector of C two tiles' stores share); step 35 (one SM's TMA engine for the loads and
# the TMA stores); step 38 (that engine's time for the rows off their sector)
LATER_EFFECTS = {"ring_jitter": False, "epilogue_threads": False, "dram_writes": False, "multicast_reads": False,
                 "stream_k_lookup": False, "ring_queue": False, "split_row_latency": False, "store_exit": False,
                 "slot_release": False, "ring_saturation": False, "partial_stores": False, "issue_wait": False,
                 "fixup_batches": False, "k_tail_fill": False, "hit_latency": False,
                 "second_warpgroup": False, "power_clock": False, "shared_sectors": False, "tma_engine": False,
                 "stream_k_ceiling": False, "engine_rows": False}


# constants whose descriptor default has changed since the references were written:
# name -> (today's default, the default then). Step 25 took the transfer out of a ring
# slot's round trip, and ring_extra_latency_us's default went from 0.5 to 0.15 us with it.
LATER_DEFAULTS = {"ring_extra_latency_us": (0.15, 0.5)}


def as_referenced(mp) -> None:
    """Patch (``mp``: a pytest MonkeyPatch) ws-pipelined's evaluate(), where the table and
    the optimizer call it, to run with ``LATER_EFFECTS`` off and a constant at today's
    default at the default it had then (``LATER_DEFAULTS``; a stored value stays); every
    other effect stays as today."""
    import numpy as np

    from gemmperf.models import ws_pipelined
    from gemmperf.models.ws_pipelined import table

    real = ws_pipelined.evaluate

    def evaluate(**kw):
        for name, (today, then) in LATER_DEFAULTS.items():
            if name in kw:
                kw[name] = np.where(np.asarray(kw[name]) == today, then, kw[name])
        return real(**kw, **LATER_EFFECTS)

    mp.setattr(table, "evaluate", evaluate)
    mp.setattr(ws_pipelined, "evaluate", evaluate)
