"""Pruning before Z3: the tile classes that cannot hold the optimum or the runner-up are
left out of the encoding, and the optimum Z3 is asked to certify is known in advance.

Why it is sound. Every quantity below is one of the values the encoding itself uses
(exact.py's rationals for ws-stage and ws-persistent, the pipelined table's for
ws-pipelined), so a bound on it is a bound on what Z3 would have seen.

1. Incumbents. ``a`` is the configuration with the smallest time (by the closed form,
   among those matching the pinned fields) and ``b`` the smallest in another tile class
   than ``a``'s. Their exact times t_a, t_b are feasible, and U = max(t_a, t_b) bounds
   both the optimum t* (t* <= t_a) and the runner-up t_r, the best time outside the
   optimum's class: if that class is not ``a``'s, t_r <= t_a; if it is, ``b`` lies
   outside it and t_r <= t_b (without a runner-up, U = t_a).
2. Bounds. A lower bound on each configuration's exact time: the closed form's value
   itself (ws-stage, ws-persistent: exact.py; ws-pipelined: A + K(B) from the table, or
   the tabled time).
3. Dropping. A configuration is dropped only if its bound exceeds U * (1 + tol), tol the tie tolerance of the time (ws-pipelined's TIE_TOL: times
   within tol of the optimum are ties and go to the next objective; 0 otherwise). Such a
   configuration is slower than the optimum and the runner-up by more than the
   tolerance: it can be neither, nor tie with either, so the lexicographic optimum and
   runner-up over the kept classes are those over the whole space.

Nothing above depends on what a configuration varies beside its tile class: the variant
(raster, raster group, epilogue, schedule, and since issue 16 the K split and stream-K,
``space.variant_code``), the ring depth and persistence enter only through each
configuration's own value. ws-pipelined's value is A + K(B) with A, D of its own (class,
variant, persistent) group and K of its own (class, variant, B) -- a K split changes the
periods' count (S = ceil(KT/Sk) per item, waves of items) in K and the fix-up in A,
stream-K the count (I minus the segment ends), and pipelined_table checks on every configuration that the split reproduces the
model, else the table holds evaluate()'s values themselves; ws-stage and ws-persistent
do not see the variant (their exact values are per class and ring depth). The
incumbents and U are taken over every configuration matching the pins (the pins of
split_k and stream_k included), and a dropped configuration's own value exceeds U (1 +
tol): however the space grows, what is dropped can be neither optimum nor runner-up.

ws-pipelined's bounds are compared in floats: the table holds float64 values whose
exact rationals (``Q``) are their shortest decimal forms, within 2**-53 relative, and
the closed form is one sum. A configuration is dropped only if its float time exceeds the
float threshold by more than 1e-9 of (|A| + K + threshold): six orders of magnitude above
the rounding (< 1e-14 relative), so the exact time exceeds the exact threshold.
The encoding then holds the kept configurations only (the choice restricted to them, the
model's constants of their classes and groups: ``encode.Kept``).
ws-stage and ws-persistent compare exact rationals.

Z3 then certifies over the kept classes (``solver.lex_minimize`` with ``hints``): the
exhaustive choices among them (the optimum, and the runner-up outside the optimum's
class) are only claims; one unsat check proves that no kept configuration is
lexicographically better than either, and sat checks that their values are attained.
Where the claim fails, the linear search runs as without it. ``tests/test_optimize.py``
checks pruned Z3 == unpruned Z3 == exhaustive, and the dropping rule.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from .encode import Kept
from .exact import exact_objectives
from .exhaustive import pipelined_best
from .pipelined import TIE_TOL, PipeTable
from .space import Consts, RankParts, matching, padded_volume, space_facts

FLOAT_MARGIN = 1e-9  # relative margin of the float comparison (see the module doc)


@dataclass
class Pruned:
    """The configurations Z3 sees (``keep``), the threshold every dropped configuration's
    bound exceeds (``bound``), and the exact candidates matching the pins: (time, wait, vol,
    rank, class index) per configuration that can be the optimum or the runner-up."""

    keep: list
    bound: Fraction
    cands: dict
    model: str

    def best_class(self) -> int:
        """The tile class (index) of the claimed optimum."""
        rank = self.hints()[-1]
        return next(v[4] for v in self.cands.values() if v[3] == rank)

    def hints(self, other_than: int | None = None) -> list | None:
        """The objectives' minima (time, wait[, vol], rank) over the kept candidates, outside
        class ``other_than`` if given: the values Z3 is asked to certify."""
        cs = [(t, w, v, r, c) for c, (t, w, v, r, i) in self.cands.items() if i != other_than]
        if not cs:
            return None
        if self.model == "ws-pipelined":
            best = pipelined_best(cs)
            t0 = min(x[0] for x in cs)
            t_max = t0 + TIE_TOL * abs(t0)
            w0 = min(x[1] for x in cs if x[0] <= t_max)
            return [t0, w0, best[2], best[3]]
        best = min(cs, key=lambda x: x[:4])
        return [best[0], best[1], best[3]]


def prune_exact(C: Consts, space: list, rp: RankParts, model: str, fix: dict | None,
                runner_up: bool, wave_end: str = "ours") -> Pruned | None:
    """ws-stage / ws-persistent: exact times per tile class (and, for ws-stage, B >= 2),
    configurations slower than U dropped (None where no configuration matches the pins)."""
    f = space_facts(space)
    keys = f.cls * 2 + ((f.ints["stages"] >= 2) if model == "ws-stage" else 1)
    uniq, first = np.unique(keys, return_index=True)
    vals = {k: exact_objectives(C, space[j], model, wave_end) for k, j in zip(uniq.tolist(), first.tolist())}
    match = matching(space, fix)
    order = sorted(np.unique(keys[match]).tolist(), key=lambda k: vals[k][0])
    if not order:
        return None
    a = order[0]
    b = next((k for k in order if k // 2 != a // 2), None)  # the first of another class
    U = max(vals[a][0], vals[b][0]) if runner_up and b is not None else vals[a][0]
    near = np.isin(keys, [k for k in vals if vals[k][0] <= U])
    ranks = f.ranks(rp)
    cands = {space[j]: (*vals[int(keys[j])], 0, int(ranks[j]), int(f.cls[j])) for j in np.nonzero(near & match)[0]}
    return Pruned(keep=Kept.at(space, f, np.nonzero(near)[0]), bound=U, cands=cands, model=model)


def prune_pipelined(tab: PipeTable, rp: RankParts, fix: dict | None, runner_up: bool) -> Pruned | None:
    """ws-pipelined: float times from the table; exact values only for the configurations
    that can be the optimum or the runner-up."""
    space = tab.space
    t, scale = tab.float_times()
    cls = tab.part["cls"]
    match = matching(space, fix)
    if not match.any():
        return None
    order = np.argsort(np.where(match, t, np.inf), kind="stable")[:int(match.sum())]
    a = int(order[0])
    other = order[cls[order] != cls[a]]
    b = int(other[0]) if len(other) else None  # the first in another class
    inc = tab.exact_of([a] if b is None or not runner_up else [a, b])
    U = max(x[0] for x in inc.values())
    bound = U + TIE_TOL * abs(U)
    thr = float(bound)
    near = t <= thr + FLOAT_MARGIN * (scale + abs(thr))  # the others' exact times exceed ``bound``
    near[a] = True
    keep = Kept.at(space, tab.facts, np.nonzero(near)[0])
    js = [int(j) for j in np.nonzero(near & match)[0]]
    ex = tab.exact_of(js)
    ranks = tab.facts.ranks(rp)
    cands = {space[j]: (*ex[space[j]], padded_volume(tab.shape, space[j]), int(ranks[j]), int(cls[j])) for j in js}
    return Pruned(keep=keep, bound=bound, cands=cands, model="ws-pipelined")
