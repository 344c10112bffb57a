"""A shape's shortlist: the optimizer's answer, then the next best configurations by the
model, for a user (or an autotuner) to time.

One pick inherits every error of the model where it is most optimistic; timing a few of
the model's best recovers most of it (``benchmarks/optimizer_picks.py`` measures both on
shapes no testlist holds).
"""

from __future__ import annotations

import numpy as np

from ..hardware import GPU
from ..params import ParamSet
from ..problem import KernelConfig
from .exhaustive import exhaustive_float
from .solver import Solution
from .space import matching, rank_parts, space_facts


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
