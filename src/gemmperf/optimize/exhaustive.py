"""The exhaustive references Z3 is tested against: every configuration of the space
evaluated, exactly (the same rationals and tie rules as the encoding) or with the
models' own float evaluate()."""

from __future__ import annotations

from fractions import Fraction

import numpy as np

from ..hardware import GPU
from ..params import ParamSet
from ..problem import KernelConfig
from .evaluate import evaluate_space, math_wait
from .exact import exact_objectives
from .pipelined import TIE_TOL, pipelined_table
from .space import DEFAULT_MODEL, class_key, consts, family_space, padded_volume, rank_parts, shape_for, tie_rank


def _space_of(shape, family: str, gpu: GPU, space, dtype):
    shp = shape_for(shape, family, dtype)
    if space is None:
        space = family_space(family, gpu, shp.dtype)
    return shp, [c for c in space if c.family == family and c.dtype == shp.dtype]


def pipelined_best(cands: list) -> tuple:
    """The minimum of (time, wait, vol, rank, config) candidates where times and waits
    within TIE_TOL of the optimum time are ties, as solve() decides them."""
    t0 = min(x[0] for x in cands)
    cands = [x for x in cands if x[0] <= t0 + TIE_TOL * abs(t0)]
    w0 = min(x[1] for x in cands)
    cands = [(Fraction(0), Fraction(0), *x[2:], x) for x in cands if x[1] <= w0 + TIE_TOL * abs(t0)]
    return min(cands, key=lambda x: x[:4])[-1]


def exhaustive_exact(shape, family: str, gpu: GPU, params: ParamSet, model: str = DEFAULT_MODEL,
                     space: list[KernelConfig] | None = None, wave_end: str = "ours",
                     dtype: str | None = None, fix: dict | None = None):
    """Enumerate the space with exact rationals; the lexicographic (time, wait, rank) minimum.

    ``fix``: pinned fields, as in solve() (the model's tables are still those of the whole
    space, as solve() builds them). Returns (config, time, wait) with Fractions.
    """
    shp, space = _space_of(shape, family, gpu, space, dtype)
    C = consts(shp, family, gpu, params)
    rp = rank_parts(space, model)
    tab = pipelined_table(shp, space, params, rp.index) if model == "ws-pipelined" else None
    cache = {}
    cands = []
    for c in space:
        if fix and any(getattr(c, f) != v for f, v in fix.items()):
            continue
        if tab is not None:
            t, w = tab.exact[c]
        else:
            key = (class_key(c), c.stages >= 2)
            if key not in cache:
                cache[key] = exact_objectives(C, c, model, wave_end)
            t, w = cache[key]
        vol = padded_volume(shp, c) if model == "ws-pipelined" else 0
        cands.append((t, w, vol, tie_rank(c, rp), c))
    best = pipelined_best(cands) if model == "ws-pipelined" else min(cands, key=lambda x: x[:4])
    return best[4], best[0], best[1]


def exhaustive_float(shape, family: str, gpu: GPU, params: ParamSet, model: str = DEFAULT_MODEL,
                     space: list[KernelConfig] | None = None, wave_end: str = "ours",
                     dtype: str | None = None, rel_tol: float = 1e-9):
    """The models' float evaluate() over the whole space: (min time, optima, wait per config).

    Returns (best_time, [configs within rel_tol of it], predicted array, wait array, space).
    """
    shp, space = _space_of(shape, family, gpu, space, dtype)
    out = evaluate_space(shp, space, params, model, wave_end)
    pred = out["predicted_us"]
    wait = math_wait(out, model)
    best = float(pred.min())
    idx = np.nonzero(pred <= best * (1 + rel_tol))[0]
    return best, [space[i] for i in idx], pred, wait, space
