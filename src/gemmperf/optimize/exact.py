"""ws-stage and ws-persistent in exact rationals, per tile class: the constants the Z3
encoding tables and the objectives the exhaustive reference compares.

These are the formulas of ``models/ws_stage.py`` and ``models/ws_persistent.py``. They
are restated here rather than run through the models' numpy ``evaluate`` on Fraction
object arrays because the models mix in float literals (``2.0 * tile_m * ...``,
``1.0 - l2_hit_rate``) and cast outputs with ``astype(np.float64)``: a Fraction combined
with a float becomes a float, so the exact values (and thus exact tie decisions) would be
lost. The per-class constants are cached per (constants, class): the encoding, the
pruning and the exhaustive reference of one shape compute them once. ``tests/test_optimize.py`` checks these against the models' own float evaluate() on
every shipped shape (same optimum within 1e-9).
"""

from __future__ import annotations

from fractions import Fraction
from functools import lru_cache

from ..models.columns import ceil_div
from ..problem import KernelConfig
from .space import Consts


@lru_cache(maxsize=4096)
def stage_class(C: Consts, tm: int, tn: int, tk: int) -> dict:
    """ws-stage constants of one tile (exact): output tiles, waves W, K stages S, per-stage
    load times ta, tb (L = ta + tb) and multiply time Tm (us)."""
    tiles = ceil_div(C.m, tm) * ceil_div(C.n, tn)
    t_a = tm * tk * (C.in_b + C.sf) / C.load_bw + C.load_lat
    t_b = tn * tk * (C.in_b + C.sf) / C.load_bw + C.load_lat
    t_m = Fraction(2 * tm * tn * tk) / C.math_fl + C.math_lat
    return {"tiles": tiles, "W": ceil_div(tiles, C.sms), "S": ceil_div(C.k, tk), "ta": t_a, "tb": t_b,
            "L": t_a + t_b, "Tm": t_m}


def stage_exact(C: Consts, tm, tn, tk, b, wave_end: str = "ours") -> tuple[Fraction, Fraction]:
    """(predicted_us, total MATH wait) of ws-stage, exact, via the closed form
    Sm(S) = L + (S-1)*P, P = max(L, Tm) for B >= 2 else L + Tm (see proof.py)."""
    d = stage_class(C, tm, tn, tk)
    L, Tm, S, W = d["L"], d["Tm"], d["S"], d["W"]
    P = max(L, Tm) if b >= 2 else L + Tm
    sm = L + (S - 1) * P
    wave = (sm + Tm if wave_end == "ours" else sm) + C.t_epi
    wait = L + (S - 1) * (P - Tm)
    return W * wave + C.t_init, W * wait


@lru_cache(maxsize=4096)
def persistent_class(C: Consts, tm: int, tn: int, tk: int, cm: int, cn: int) -> dict:
    """ws-persistent constants of one tile class (exact): cluster-rounded tiles, the
    whole-cluster SM count F, per-SM DRAM time of a tile's K loop (ld) and first K block
    (fl), a tile's multiply time, a tile's store time and a full wave's time (us)."""
    cl = cm * cn
    tiles = ceil_div(C.m, tm * cm) * ceil_div(C.n, tn * cn) * cl
    full = max((C.sms // cl) * cl, cl)

    def per_sm(kk):
        a = tm * kk * (C.in_b + C.sf) / cn
        b = tn * kk * (C.in_b + C.sf) / cm
        return (a + b) * (1 - C.l2) / C.dram

    ld, fl = per_sm(C.k), per_sm(min(tk, C.k))
    mth = Fraction(2 * tm * tn * C.k) / C.math_fl
    st = tm * tn * C.out_b / C.dram
    return {"tiles": tiles, "F": full, "ld": ld, "fl": fl, "math": mth, "st": st,
            "fullwave": max(full * ld, mth, C.t_epi + full * st)}


def persistent_exact(C: Consts, tm, tn, tk, cm, cn) -> tuple[Fraction, Fraction]:
    """(predicted_us, MATH wait) of ws-persistent, exact."""
    d = persistent_class(C, tm, tn, tk, cm, cn)
    tiles, F = d["tiles"], d["F"]
    fw, rem = divmod(tiles, F)
    last = rem if rem > 0 else F
    first_dma = min(tiles, F) * d["fl"]
    rem_wave = max(rem * d["ld"], d["math"], C.t_epi + rem * d["st"]) if rem > 0 else Fraction(0)
    mainloop = fw * d["fullwave"] + rem_wave
    last_epi = C.t_epi + last * d["st"]
    waves = fw + (rem > 0)
    return C.t_init + first_dma + mainloop + last_epi, first_dma + mainloop - waves * d["math"]


def exact_objectives(C: Consts, c: KernelConfig, model: str, wave_end: str = "ours"):
    """(time, wait) of one configuration under ws-stage or ws-persistent, exact."""
    if model == "ws-stage":
        return stage_exact(C, c.tile_m, c.tile_n, c.tile_k, c.stages, wave_end)
    return persistent_exact(C, c.tile_m, c.tile_n, c.tile_k, c.cluster_m, c.cluster_n)
