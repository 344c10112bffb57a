"""The exhaustive references Z3 is tested against: every configuration of the space
evaluated, exactly (the same rationals and tie rules as the encoding) or with the
models' own float evaluate()."""

from __future__ import annotations

import numpy as np

from ..hardware import GPU
from ..params import ParamSet
from ..problem import KernelConfig
from .evaluate import evaluate_space, math_wait
from .exact import exact_objectives
from .pipelined import TIE_TOL, pipelined_table
from .space import (DEFAULT_MODEL, consts, family_space, matching, padded_volume, rank_parts, shape_for,
                    space_facts)


def _space_of(shape, family: str, gpu: GPU, space, dtype):
    shp = shape_for(shape, family, dtype)
    if space is None:
        space = family_space(family, gpu, shp.dtype)
    return shp, [c for c in space if c.family == family and c.dtype == shp.dtype]


def pipelined_best(cands: list) -> tuple:
    """The minimum of (time, wait, vol, rank, config) candidates where times and waits
    within TIE_TOL of the optimum time are ties, as solve() decides them."""
    t0 = min(x[0] for x in cands)
    tol = TIE_TOL * abs(t0)
    t_max = t0 + tol
    cands = [x for x in cands if x[0] <= t_max]
    w_max = min(x[1] for x in cands) + tol
    return min((x for x in cands if x[1] <= w_max), key=lambda x: x[2:4])


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
    f = space_facts(space)
    ranks, js = f.ranks(rp), np.nonzero(matching(space, fix))[0].tolist()
    if model == "ws-pipelined":
        ex = pipelined_table(shp, space, params, rp.index).exact
        cands = [(*ex[space[j]], j) for j in js]
        # pipelined_best, with the volume and rank computed for the near-ties only
        t0 = min(x[0] for x in cands)
        tol = TIE_TOL * abs(t0)
        near = [x for x in cands if x[0] <= t0 + tol]
        w_max = min(x[1] for x in near) + tol
        t, w, j = min((x for x in near if x[1] <= w_max), key=lambda x: (padded_volume(shp, space[x[2]]),
                                                                        ranks[x[2]]))
        return space[j], t, w
    # ws-stage, ws-persistent: every configuration of a tile class (and ring depth >= 2 or
    # not) has the class's values; the least rank among those with the least values
    keys = (f.cls * 2 + (f.ints["stages"] >= 2)).tolist()
    vals: dict = {}
    for j in js:
        if keys[j] not in vals:
            vals[keys[j]] = exact_objectives(C, space[j], model, wave_end)
    best = min(vals.values())
    j = min((j for j in js if vals[keys[j]] == best), key=lambda j: ranks[j])
    return space[j], best[0], best[1]


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
