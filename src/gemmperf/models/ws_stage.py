"""Warp-specialized stage recurrence (paper 2.2, eqs 1-3), with its exact closed form.

Per wave, stages i = 1..S (S = ceil(K/TK)), buffer depth B (config column ``stages``):

    Sa(1) = 0
    Sa(i) = max(Sb(i-1) + T_LOAD_B, Sm(i-B) + T_MATH)        DMA starts loading a_i
    Sb(i) = max(Sa(i) + T_LOAD_A,   Sm(i-B) + T_MATH)        DMA starts loading b_i
    Sm(i) = max(Sm(i-1) + T_MATH,   Sb(i) + T_LOAD_B)        MATH starts multiply i

Terms whose index is <= 0 are absent (-inf). Stage times as in ``sync``:
T_LOAD_A = TM*TK*in_bytes/load_bytes_per_us + load_latency_us (nvfp4 scales included),
T_LOAD_B likewise with TN, T_MATH = 2*TM*TN*TK/math_flops_per_us + math_latency_us.

Wave end. The paper writes wave = Sm(S) + T_EPILOGUE, but Sm(S) is when the last
multiply STARTS; the epilogue can only begin when it finishes. We use
wave = Sm(S) + T_MATH + T_EPILOGUE (``wave_end="ours"``, the default);
``wave_end="paper"`` reproduces the paper. predicted_us = W * wave + T_INIT.

Closed form (proved below, and checked against ``simulate`` in the tests). Let
L = T_LOAD_A + T_LOAD_B. Since Sa(i) >= Sm(i-B) + T_MATH, eq. 2 is always
Sb(i) = Sa(i) + T_LOAD_A. With D(i) = Sa(i) + L (stage i loaded) and F(i) = Sm(i) +
T_MATH (stage i multiplied) the recurrence is the max-plus system
    D(i) = max(D(i-1), F(i-B)) + L,  D(0) = 0;     F(i) = max(F(i-1), D(i)) + T_MATH.
- B = 1: F(i-1) >= D(i-1) + T_MATH, so D(i) = F(i-1) + L and F(i) = D(i) + T_MATH:
  loads and multiplies serialize, Sm(S) = S*L + (S-1)*T_MATH.
- B >= 2: the buffer never delays the multiply. If L >= T_MATH the DMA never stalls
  (F(i-B) = (i-B)L + T_MATH <= (i-1)L because T_MATH <= (B-1)L), so D(i) = iL and
  Sm(i) = max(F(i-1), D(i)) = iL. If T_MATH > L, by induction D(i-1) <= Sm(i-1), so
  D(i-1) + L < F(i-1), and F(i-B) + L < F(i-B) + (B-1)T_MATH <= F(i-1): the operands
  are always ready when MATH is free, Sm(i) = L + (i-1)T_MATH.
Together, for every B >= 1 and S >= 1:
    Sm(S) = L + (S-1) * P,   P = max(L, T_MATH) if B >= 2 else L + T_MATH
(P is the largest cycle mean max(L, T_MATH, (L+T_MATH)/B) of the system; the
transient is the single first load L.) The paper's second objective, the MATH warp's
waiting time, Wait(1) = Sb(1) + T_LOAD_B, Wait(i) = Sm(i) - (Sm(i-1) + T_MATH),
telescopes to Sm(S) - (S-1)*T_MATH; we evaluate it without that cancellation as
    sum Wait = L + (S-1) * (max(L - T_MATH, 0) if B >= 2 else L).

The paper's kernel has one CTA per tile: a row with clusters, another epilogue or
schedule, a raster group, split-K or stream-K is predicted as its tile and ring.

Limiter: "epilogue" if T_EPILOGUE exceeds the wave's K loop (Sm(S) + T_MATH), else
"math" if T_MATH > L, else "load".
Columns: predicted_us, limiter, mainloop_us (W * (Sm(S) + T_MATH), or W * Sm(S) with
the paper's wave end), epilogue_us (W * T_EPILOGUE), init_us, wave_us,
total_math_wait_us (W * sum Wait), stage_load_a_us, stage_load_b_us, stage_math_us,
tiles, waves, k_stages (S).
"""

from __future__ import annotations

import math
import sys
from collections.abc import Mapping

import numpy as np

from ..errors import UserError
from ..problem import DTYPE_BYTES, SCALE_FACTORS, KernelConfig, Shape
from . import columns

NAME = "ws-stage"
LIMITERS = ("load", "math", "epilogue")
WAVE_ENDS = ("ours", "paper")
INPUTS = ("m", "n", "k", "tile_m", "tile_n", "tile_k", "stages", "in_bytes", "sf_bytes_per_elem",
          "sms", "t_init_us", "t_epilogue_us", "load_bytes_per_us", "load_latency_us",
          "math_flops_per_us", "math_latency_us")


def _check_wave_end(wave_end: str) -> None:
    if wave_end not in WAVE_ENDS:
        raise UserError(f"wave_end {wave_end!r}: expected one of {', '.join(WAVE_ENDS)}")


# ------------------------------------------------------------------ closed form


def closed_form(S, B, t_load_a, t_load_b, t_math):
    """(Sm(S), sum of Wait(i)) of one wave, vectorized over arrays; exact for B >= 1."""
    load = np.add(t_load_a, t_load_b)
    deep = np.asarray(B) >= 2
    s1 = np.subtract(S, 1)
    last_math_start = load + s1 * np.where(deep, np.maximum(load, t_math), load + t_math)
    math_wait = load + s1 * np.where(deep, np.maximum(load - t_math, 0.0), load)
    return last_math_start, math_wait


def evaluate(m, n, k, tile_m, tile_n, tile_k, stages, in_bytes, sf_bytes_per_elem, sms,
             t_init_us, t_epilogue_us, load_bytes_per_us, load_latency_us,
             math_flops_per_us, math_latency_us, wave_end: str = "ours") -> dict[str, np.ndarray]:
    _check_wave_end(wave_end)
    s = columns.ceil_div(k, tile_k)
    tiles, w = columns.waves(m, n, tile_m, tile_n, sms)
    t_a, t_b, t_m = columns.stage_times(tile_m, tile_n, tile_k, in_bytes, sf_bytes_per_elem,
                                       load_bytes_per_us, load_latency_us,
                                       math_flops_per_us, math_latency_us)
    last, wait = closed_form(s, stages, t_a, t_b, t_m)
    loop_end = last + t_m
    wave = (loop_end if wave_end == "ours" else last) + t_epilogue_us
    limiter = np.where(t_epilogue_us > loop_end, 2, np.where(t_m > t_a + t_b, 1, 0)).astype(np.int8)
    shape = np.shape(wave)
    return {
        "predicted_us": w * wave + t_init_us,
        "limiter": limiter,
        "mainloop_us": w * (loop_end if wave_end == "ours" else last),
        "epilogue_us": w * np.broadcast_to(t_epilogue_us, shape),
        "init_us": np.broadcast_to(t_init_us, shape).astype(np.float64),
        "wave_us": wave,
        "total_math_wait_us": w * wait,
        "stage_load_a_us": np.broadcast_to(t_a, shape).astype(np.float64),
        "stage_load_b_us": np.broadcast_to(t_b, shape).astype(np.float64),
        "stage_math_us": np.broadcast_to(t_m, shape).astype(np.float64),
        "tiles": np.broadcast_to(tiles, shape).astype(np.int64),
        "waves": np.broadcast_to(w, shape).astype(np.int64),
        "k_stages": np.broadcast_to(s, shape).astype(np.int64),
    }


def predict(configs, params):
    return columns.run(configs, params, sys.modules[__name__])


# ------------------------------------------------------------------ event simulator


def simulate(S: int, B: int, t_load_a: float, t_load_b: float, t_math: float,
             t_epilogue: float = 0.0, wave_end: str = "ours") -> dict:
    """Step the recurrence for one wave, event by event (the reference for the closed form).

    Returns Sa, Sb, Sm (start times, arrays of length S, stage i at index i-1), wait
    (Wait(i)), math_wait_us (sum of wait), last_math_start_us (Sm(S)) and wave_us.
    """
    _check_wave_end(wave_end)
    S, B = int(S), int(B)
    if S < 1 or B < 1:
        raise UserError(f"simulate: need S >= 1 and B >= 1, got S={S}, B={B}")
    t_load_a, t_load_b, t_math = float(t_load_a), float(t_load_b), float(t_math)
    sa, sb, sm = [0.0] * S, [0.0] * S, [0.0] * S
    absent = -math.inf
    for i in range(S):  # 0-based: stage i+1; Sm(i+1-B) is sm[i-B]
        free = sm[i - B] + t_math if i >= B else absent
        a = 0.0 if i == 0 else max(sb[i - 1] + t_load_b, free)
        b = max(a + t_load_a, free)
        prev = sm[i - 1] + t_math if i >= 1 else absent
        sa[i], sb[i], sm[i] = a, b, max(prev, b + t_load_b)
    Sa, Sb, Sm = np.array(sa), np.array(sb), np.array(sm)
    wait = np.empty(S)
    wait[0] = Sb[0] + t_load_b
    wait[1:] = Sm[1:] - (Sm[:-1] + t_math)
    last = sm[-1]
    wave = (last + t_math if wave_end == "ours" else last) + t_epilogue
    return {"Sa": Sa, "Sb": Sb, "Sm": Sm, "wait": wait, "math_wait_us": float(wait.sum()),
            "last_math_start_us": last, "wave_us": wave}


def _row(config, shape) -> dict:
    """A plain dict with m, n, k and every config field, from a row or a KernelConfig."""
    if isinstance(config, KernelConfig):
        if shape is None:
            raise UserError("timeline: a KernelConfig needs a shape (m, n, k)")
        m, n, k = (shape.m, shape.n, shape.k) if isinstance(shape, Shape) else shape
        return {"m": m, "n": n, "k": k, **config.as_dict()}
    if isinstance(config, Mapping):
        row = {**KernelConfig().as_dict(), **dict(config)}
        if shape is not None:
            m, n, k = (shape.m, shape.n, shape.k) if isinstance(shape, Shape) else shape
            row.update(m=m, n=n, k=k)
        missing = [c for c in ("m", "n", "k") if row.get(c) is None]
        if missing:
            raise UserError(f"timeline: the row lacks {', '.join(missing)}")
        return row
    raise UserError(f"timeline: expected a config row (mapping) or KernelConfig, got {type(config).__name__}")


def timeline(config, params, shape=None, wave_end: str = "ours", max_waves: int | None = None) -> list[dict]:
    """Gantt bars of the WS kernel: dict(warp, wave, stage, start_us, end_us).

    ``config`` is a row (mapping with m, n, k and config columns) or a KernelConfig
    with ``shape`` (a Shape or (m, n, k)). warp is "DMA-A", "DMA-B", "MATH" or
    "EPILOGUE" (stage 0). Wave w (0-based) starts at T_INIT + w * wave_us, so the last
    bar ends at the model's predicted_us. One wave is simulated; all waves are alike.
    """
    row = _row(config, shape)
    dtype = row["dtype"]
    if dtype not in DTYPE_BYTES:
        raise UserError(f"timeline: unknown dtype {dtype!r}")
    p = params.get(row["family"], dtype)
    sf = SCALE_FACTORS.get(dtype)
    t_a, t_b, t_m = columns.stage_times(
        int(row["tile_m"]), int(row["tile_n"]), int(row["tile_k"]), DTYPE_BYTES[dtype],
        sf[1] / sf[0] if sf else 0.0, p.load_bytes_per_us, p.load_latency_us,
        p.math_flops_per_us, p.math_latency_us)
    S = -(-int(row["k"]) // int(row["tile_k"]))
    tiles = -(-int(row["m"]) // int(row["tile_m"])) * -(-int(row["n"]) // int(row["tile_n"]))
    W = -(-tiles // params.gpu.sms)
    sim = simulate(S, int(row["stages"]), t_a, t_b, t_m, p.t_epilogue_us, wave_end)
    epi_start = sim["last_math_start_us"] + (t_m if wave_end == "ours" else 0.0)
    bars = []
    for w in range(W if max_waves is None else min(W, max_waves)):
        t0 = p.t_init_us + w * sim["wave_us"]
        for i in range(S):
            for warp, start, dur in (("DMA-A", sim["Sa"][i], t_a), ("DMA-B", sim["Sb"][i], t_b),
                                     ("MATH", sim["Sm"][i], t_m)):
                bars.append({"warp": warp, "wave": w, "stage": i + 1,
                             "start_us": t0 + float(start), "end_us": t0 + float(start) + dur})
        bars.append({"warp": "EPILOGUE", "wave": w, "stage": 0, "start_us": t0 + epi_start,
                     "end_us": t0 + epi_start + p.t_epilogue_us})
    return bars
