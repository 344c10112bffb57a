"""Warp-specialized persistent GEMM as phases (gemm-model's WSPersistentGEMMModel).

    predicted_us = setup + first DMA + sum over waves of max(DMA, MATH, EPILOGUE)
                   + the last wave's EPILOGUE

A wave's DMA, MATH and EPILOGUE overlap (one CTA per SM works on successive tiles),
so each wave costs its slowest part; the prologue (setup, the first K block's load)
and the last wave's epilogue are exposed. The K loop is not pipelined here: a tile's
whole K extent is one block of work.

Clusters (cm x cn CTAs) multicast: A is shared by the cn CTAs of a cluster row and B
by the cm CTAs of a column, so each SM loads A/cn and B/cm.

    cga_tiles = ceil(M/(TM*cm)) * ceil(N/(TN*cn));  tiles = cga_tiles * cm * cn
    full_wave_sms = (SMs // (cm*cn)) * (cm*cn)    (whole clusters only)
    full_waves = tiles // full_wave_sms;  remainder = tiles % full_wave_sms
    for a wave of s active SMs and K extent kk:
      DMA(s, kk) = s * (A(TM, kk)/cn + B(TN, kk)/cm) * (1 - l2_hit_rate) / DRAM B/s
                   with X(rows, kk) = rows*kk*in_bytes + nvfp4 scales rows*(kk/16)*1 B
      MATH       = 2*TM*TN*K / math_flops_per_us         (per SM, all SMs in parallel)
      EPI(s)     = t_epilogue_us + s*TM*TN*out_bytes / DRAM B/s
    setup = t_init_us
    first DMA = DMA(min(tiles, full_wave_sms), min(TK, K))   one K block of the first wave
    mainloop  = full_waves * max(DMA(full, K), MATH, EPI(full))
                + [remainder > 0] * max(DMA(rem, K), MATH, EPI(rem))
    last epilogue = EPI(s of the last wave: the remainder if any, else a full wave)

This reproduces gemm-model's printed examples digit for digit (see the tests).
gemm-model's kernel has whole tiles and clusters only: a row with another epilogue or
schedule, a raster group, split-K or stream-K is predicted as its tiling without them.
Deviations, none of which changes those examples: the first load's K extent is capped
at K (a problem with K < TK loads K, not TK), and a cluster larger than the GPU runs
one cluster at a time instead of dividing by zero.

Limiter: argmax of the first mainloop wave's (DMA, MATH, EPILOGUE) -> "dma", "math",
"epilogue" (ties go to the earlier one).
Columns: predicted_us, limiter, setup_us, first_dma_us, mainloop_us,
last_epilogue_us, wave_dma_us, wave_math_us, wave_epilogue_us (first mainloop wave),
last_wave_dma_us, last_wave_math_us, last_wave_epilogue_us, tiles, waves, full_waves,
wave_sms, last_wave_sms.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping

import numpy as np

from . import columns

NAME = "ws-persistent"
LIMITERS = ("dma", "math", "epilogue")
INPUTS = ("m", "n", "k", "tile_m", "tile_n", "tile_k", "cluster_m", "cluster_n", "in_bytes",
          "out_bytes", "sf_bytes_per_elem", "sms", "dram_bytes_per_us", "t_init_us",
          "t_epilogue_us", "math_flops_per_us", "l2_hit_rate")


def evaluate(m, n, k, tile_m, tile_n, tile_k, cluster_m, cluster_n, in_bytes, out_bytes,
             sf_bytes_per_elem, sms, dram_bytes_per_us, t_init_us, t_epilogue_us,
             math_flops_per_us, l2_hit_rate) -> dict[str, np.ndarray]:
    cluster = cluster_m * cluster_n
    tiles = columns.ceil_div(m, tile_m * cluster_m) * columns.ceil_div(n, tile_n * cluster_n) * cluster
    full_sms = np.maximum((sms // cluster) * cluster, cluster)
    first_sms = np.minimum(tiles, full_sms)
    full_waves = tiles // full_sms
    remainder = tiles % full_sms
    last_sms = np.where(remainder > 0, remainder, full_sms)

    # bytes one SM loads per tile for K extent kk, after multicast and L2 hits
    def dram_per_sm(kk):
        a = columns.operand_bytes(tile_m, kk, in_bytes, sf_bytes_per_elem) / cluster_n
        b = columns.operand_bytes(tile_n, kk, in_bytes, sf_bytes_per_elem) / cluster_m
        return (a + b) * (1.0 - l2_hit_rate) / dram_bytes_per_us

    load_k = dram_per_sm(k)
    math_us = 2.0 * tile_m * tile_n * k / math_flops_per_us
    store = tile_m * tile_n * out_bytes / dram_bytes_per_us

    first_dma = first_sms * dram_per_sm(np.minimum(tile_k, k))
    wave_dma, wave_epi = first_sms * load_k, t_epilogue_us + first_sms * store
    full_wave = np.maximum(np.maximum(full_sms * load_k, math_us), t_epilogue_us + full_sms * store)
    last_dma, last_epi = last_sms * load_k, t_epilogue_us + last_sms * store
    rem_wave = np.where(remainder > 0, np.maximum(np.maximum(last_dma, math_us), last_epi), 0.0)
    mainloop = full_waves * full_wave + rem_wave

    shape = np.shape(mainloop)
    math_us = np.broadcast_to(math_us, shape).astype(np.float64)
    limiter = np.where(wave_dma >= np.maximum(math_us, wave_epi), 0,
                       np.where(math_us >= wave_epi, 1, 2)).astype(np.int8)
    setup = np.broadcast_to(t_init_us, shape).astype(np.float64)
    return {
        "predicted_us": setup + first_dma + mainloop + last_epi,
        "limiter": limiter,
        "setup_us": setup,
        "first_dma_us": first_dma,
        "mainloop_us": mainloop,
        "last_epilogue_us": last_epi,
        "wave_dma_us": wave_dma,
        "wave_math_us": math_us,
        "wave_epilogue_us": wave_epi,
        "last_wave_dma_us": last_dma,
        "last_wave_math_us": math_us,
        "last_wave_epilogue_us": last_epi,
        "tiles": np.broadcast_to(tiles, shape).astype(np.int64),
        "waves": np.asarray(full_waves + (remainder > 0), dtype=np.int64),
        "full_waves": np.broadcast_to(full_waves, shape).astype(np.int64),
        "wave_sms": np.broadcast_to(first_sms, shape).astype(np.int64),
        "last_wave_sms": np.broadcast_to(last_sms, shape).astype(np.int64),
    }


def predict(configs, params):
    return columns.run(configs, params, sys.modules[__name__])


# ------------------------------------------------------------------ phases of a predicted row

# the parts of one wave that overlap, and the columns that hold their times (us)
WAVE_PARTS = (("DMA", "wave_dma_us"), ("MATH", "wave_math_us"), ("EPILOGUE", "wave_epilogue_us"))


def phases(row: Mapping) -> list[dict]:
    """The consecutive phases of one predicted row (a mapping with ``predict``'s columns):
    dicts phase, detail, start_us, end_us from 0 to predicted_us. Phases that take no
    time are left out; the full waves are one phase, each costing its slowest part."""
    full = max(row[col] for _, col in WAVE_PARTS)
    rem = row["mainloop_us"] - row["full_waves"] * full
    out, t = [], 0.0
    for phase, dur, detail in (
        ("setup", row["setup_us"], "launch and setup"),
        ("first DMA", row["first_dma_us"], "the first stage's loads"),
        ("full waves", row["full_waves"] * full, f"{row['full_waves']} x {full:.3f} us, limiter {row['limiter']}"),
        ("partial wave", rem, f"{row['last_wave_sms']} SMs busy"),
        ("last epilogue", row["last_epilogue_us"], "exposed on the last wave"),
    ):
        if dur and dur > 0:
            out.append({"phase": phase, "detail": detail, "start_us": t, "end_us": t + dur})
            t += dur
    return out


def wave_parts(row: Mapping) -> list[dict]:
    """The DMA, MATH and EPILOGUE times (dicts part, us) of one predicted row's first
    full wave: they overlap, and the longest is the limiter."""
    return [{"part": part, "us": row[col]} for part, col in WAVE_PARTS]
