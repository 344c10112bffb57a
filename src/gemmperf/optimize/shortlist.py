"""A shape's shortlist: the optimizer's answer, then the next best configurations by the
model, for a user (or an autotuner) to time; and the same list re-ranked by the residual
correction.

One pick inherits every error of the model where it is most optimistic; timing a few of
the model's best recovers most of it, and re-ranking them by the correction some
(``benchmarks/optimizer_picks.py`` measures both on shapes no testlist holds). The
correction is a tree ensemble, not a model Z3 can search: it re-ranks the fitted model's
RERANK best, the Z3 answer among them.
"""

from __future__ import annotations

import numpy as np
import polars as pl

from ..hardware import GPU
from ..models import predict
from ..params import ParamSet
from ..problem import KernelConfig
from .exhaustive import exhaustive_float
from .solver import Solution
from .space import matching, rank_parts, space_facts

RERANK = 64  # the fitted model's best configurations the correction re-ranks (optimizer_picks.py's)


def shortlist(solution: Solution, gpu: GPU, params: ParamSet, count: int,
              fix: dict | None = None) -> list[tuple[KernelConfig, float]]:
    """(configuration, predicted us) of ``solution``'s answer, then of the next ``count`` - 1
    configurations of its family's space (within the pins ``fix``) by the model's float
    prediction; ties by the MATH warps' wait, then by the optimizer's rank."""
    if count < 1:
        raise ValueError(f"shortlist of {count} configurations")
    _, _, pred, wait, space = exhaustive_float(solution.shape, solution.family, gpu, params, solution.model)
    ranks = space_facts(space).ranks(rank_parts(space, solution.model))
    js = np.nonzero(matching(space, fix))[0]
    order = js[np.lexsort((ranks[js], wait[js], pred[js]))]
    out = [(solution.config, float(solution.predicted_us))]
    for j in order:
        if len(out) == count:
            break
        if space[j] != solution.config:
            out.append((space[j], float(pred[j])))
    return out


def reranked(top: list[tuple[KernelConfig, float]], shape, params: ParamSet,
             correct) -> list[tuple[KernelConfig, float, float]]:
    """``top`` (``shortlist``'s) as (configuration, predicted us, corrected us), by the
    corrected time (ties keep ``top``'s order). ``correct``: a residual correction
    (``fit.residual.Correction``: ws-pipelined's table in, with ``corrected_us``, out)."""
    rows = [{"m": shape.m, "n": shape.n, "k": shape.k,
             **{f: getattr(c, f) for f in KernelConfig.__dataclass_fields__}} for c, _ in top]
    corrected = correct(predict(pl.DataFrame(rows), params, "ws-pipelined")).get_column("corrected_us").to_list()
    order = sorted(range(len(top)), key=lambda i: corrected[i])
    return [(top[i][0], top[i][1], float(corrected[i])) for i in order]
