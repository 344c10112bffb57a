"""Synchronous tiled GEMM (paper 2.1.2): load, then multiply, stage after stage.

    S = ceil(K/TK), tiles = ceil(M/TM) * ceil(N/TN), W = ceil(tiles / SMs)
    T_LOAD_A = TM*TK*in_bytes / load_bytes_per_us + load_latency_us   (+ nvfp4 scales)
    T_LOAD_B = TK*TN*in_bytes / load_bytes_per_us + load_latency_us
    T_MATH   = 2*TM*TN*TK / math_flops_per_us + math_latency_us
    predicted_us = W*S*(T_LOAD_A + T_LOAD_B + T_MATH) + W*T_EPILOGUE + T_INIT

The paper's formula has no epilogue term. We add W*T_EPILOGUE because a synchronous
kernel stores C after its K loop with nothing left to overlap the store, so every wave
pays it; the WS-stage model pays it per wave too, which keeps the two comparable (the
gap between them is then the overlap alone). Padded tiles (M or N not a multiple of
the tile) and a partial last K stage cost a full tile / stage, as on the hardware.

The paper's kernel has one CTA per tile and nothing else: a row with clusters, another
epilogue or schedule, a raster group, split-K or stream-K is predicted as its tile.

Limiter: "load" if T_LOAD_A + T_LOAD_B >= T_MATH, else "math".
Columns: predicted_us, limiter, load_us, math_us, epilogue_us, init_us (the four
terms of the sum), stage_load_a_us, stage_load_b_us, stage_math_us (one stage),
tiles, waves, k_stages (S; the config column `stages` is the buffer depth).
"""

from __future__ import annotations

import sys

import numpy as np

from . import columns

NAME = "sync"
LIMITERS = ("load", "math")
INPUTS = ("m", "n", "k", "tile_m", "tile_n", "tile_k", "in_bytes", "sf_bytes_per_elem", "sms",
          "t_init_us", "t_epilogue_us", "load_bytes_per_us", "load_latency_us",
          "math_flops_per_us", "math_latency_us")


def evaluate(m, n, k, tile_m, tile_n, tile_k, in_bytes, sf_bytes_per_elem, sms,
             t_init_us, t_epilogue_us, load_bytes_per_us, load_latency_us,
             math_flops_per_us, math_latency_us) -> dict[str, np.ndarray]:
    stages = columns.ceil_div(k, tile_k)
    tiles, w = columns.waves(m, n, tile_m, tile_n, sms)
    t_a, t_b, t_m = columns.stage_times(tile_m, tile_n, tile_k, in_bytes, sf_bytes_per_elem,
                                       load_bytes_per_us, load_latency_us,
                                       math_flops_per_us, math_latency_us)
    ws = w * stages
    load_us = ws * (t_a + t_b)
    math_us = ws * t_m
    epilogue_us = w * t_epilogue_us
    return {
        "predicted_us": load_us + math_us + epilogue_us + t_init_us,
        "limiter": np.asarray(t_m > t_a + t_b, dtype=np.int8),
        "load_us": load_us,
        "math_us": math_us,
        "epilogue_us": epilogue_us,
        "init_us": np.broadcast_to(t_init_us, load_us.shape).astype(np.float64),
        "stage_load_a_us": np.broadcast_to(t_a, load_us.shape).astype(np.float64),
        "stage_load_b_us": np.broadcast_to(t_b, load_us.shape).astype(np.float64),
        "stage_math_us": np.broadcast_to(t_m, load_us.shape).astype(np.float64),
        "tiles": np.broadcast_to(tiles, load_us.shape).astype(np.int64),
        "waves": np.broadcast_to(w, load_us.shape).astype(np.int64),
        "k_stages": np.broadcast_to(stages, load_us.shape).astype(np.int64),
    }


def predict(configs, params):
    return columns.run(configs, params, sys.modules[__name__])
