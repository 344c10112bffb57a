"""ws-pipelined for one shape over one space, read off the model's own evaluate(): the
table the Z3 encoding and the exhaustive reference share.

The model's physics is not re-derived here. ``pipelined_table`` runs
``models.ws_pipelined.evaluate()`` over the space and splits its time as

    time = A + K(B),   wait = time - D

where K is evaluate()'s ``ring_us``, the part of the main loop the ring depth B changes
(the K loops' steady periods on the critical path: F*(S-1) periods of the full waves and
[R>0]*(S-1) of the remainder wave, less stream-K's segment ends, each period the ring's
p-norm of (Tc, x, z, the round trip over the free slots): whatever the model's load physics is). K depends on
the (class, variant) and B only (the variant holds the K split and stream-K, which change
S and the waves); A and D per (class, variant, persistent): A is the time the ring depth
does not change (init, fills and their exposure, epilogues, reductions, overheads,
launches), D is time minus the MATH wait.

The split is checked on every configuration of the space (A and D the same for every B of
a group, K the same for both persistences of a (class, variant, B), to PIPE_TOL
relative); if the model's dependence on B stops having this form (B in the L2 window or
the fill, say), the table is ``symbolic=False`` and the encoding uses each
configuration's evaluate() time and wait instead. Exact rationals of the tabled floats are
shared by Z3 and the exhaustive reference, so both decide ties identically.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction

import numpy as np

from ..models import ws_pipelined
from ..params import ParamSet
from ..problem import KernelConfig, Shape
from .evaluate import math_wait, pipelined_inputs
from .space import Q, SpaceFacts, padded_volume, space_facts

PIPE_TOL = 1e-9  # relative deviation allowed between the decomposition and evaluate()
# ws-pipelined: times (and waits) within this share of the optimum time are ties. The tables
# are floats from evaluate(); configurations the model treats alike (e.g. 64x128 and 128x64
# when a symmetric term binds) can come out 1 ulp apart, and the tie-break must decide them.
TIE_TOL = Fraction(1, 10**6)


@dataclass
class PipeTable:
    """ws-pipelined for one shape over one space: what the encoding needs.

    ``symbolic``: the split reproduces the model's evaluate() on every configuration of
    the space (within PIPE_TOL relative); else ``tabled`` (each configuration's
    evaluate() time and wait enter as a table). Exact values, built on first use (the
    pruned solve needs only the classes and groups it keeps): ``entry(i)`` of class i,
    its ``vol`` (padded_volume) and ``variants``; ``ring(i, r)`` of a (class, variant),
    K at each ring depth B the space has for it; ``ad(i, r, p)`` the (A, D) of a (class,
    variant, persistent) group. ``exact``: config -> (time, wait) as exact rationals, the
    values both Z3 and exhaustive_exact use. ``out``: evaluate() over the space (the
    breakdown of a solution is its row). ``part``: the split's float arrays per
    configuration (K, A, D) and the index of each configuration's class (``cls``), and of
    the configuration whose values stand for its (class, variant, B) (``k0``) and its
    (class, variant, persistent) group (``g0``). ``facts``: the space's
    (``space.space_facts``).
    """

    symbolic: bool
    shape: Shape
    space: list
    index: dict
    pred: np.ndarray
    wait: np.ndarray
    stages: tuple
    max_dev: float
    out: dict
    part: dict
    facts: SpaceFacts
    _entries: dict = field(default_factory=dict)
    _ring: dict = field(default_factory=dict)
    _ad: dict = field(default_factory=dict)
    _exact: dict | None = None

    @property
    def classes(self) -> dict:
        """Every class's entry (see the class doc)."""
        return {i: self.entry(i) for i in sorted(self.facts.variants_of)}

    def entry(self, i: int) -> dict:
        """Class ``i``: its padded volume ``vol`` and its ``variants`` (ascending)."""
        d = self._entries.get(i)
        if d is None:
            f = self.facts
            d = {"vol": padded_volume(self.shape, self.space[f.class_first[i]]), "variants": f.variants_of[i]}
            self._entries[i] = d
        return d

    def ring(self, i: int, r: int) -> dict:
        """{B: K} of class ``i``, variant ``r``, exact: the values of the first configuration
        (in space order) of each (class, variant, B)."""
        v = self._ring.get((i, r))
        if v is None:
            K = self.part["K"]
            v = self._ring[(i, r)] = {b: Q(K[j]) for b, j in sorted(self.facts.first_k[(i, r)].items())}
        return v

    def ad(self, i: int, r: int, p: bool) -> tuple | None:
        """(A, D) of the group (class ``i``, variant ``r``, persistent ``p``), exact; None
        where the space has no such group."""
        key = (i, r, bool(p))
        v = self._ad.get(key)
        if v is None:
            g = self.facts.first_g.get(key)
            if g is None:
                return None
            v = self._ad[key] = (Q(self.part["A"][g]), Q(self.part["D"][g]))
        return v

    @property
    def exact(self) -> dict:
        """config -> (time, wait), exact: the split's values (symbolic) or evaluate()'s (tabled)."""
        if self._exact is None:
            self._exact = self.exact_of(range(len(self.space)))
        return self._exact

    def exact_of(self, js) -> dict:
        """config -> (time, wait), exact, for the configurations at positions ``js``."""
        if self._exact is not None:
            return {self.space[j]: self._exact[self.space[j]] for j in js}
        if not self.symbolic:
            return {self.space[j]: (Q(self.pred[j]), Q(self.wait[j])) for j in js}
        out = {}
        f = self.facts
        for j in js:
            c = self.space[j]
            i, r, p = int(f.cls[j]), int(f.variant[j]), bool(f.persistent[j])
            a, d = self.ad(i, r, p)
            t = a + self.ring(i, r)[c.stages]
            out[c] = (t, t - d)
        return out

    def float_times(self) -> tuple[np.ndarray, np.ndarray]:
        """Per configuration, in floats from the values that stand for its group and (class,
        variant, B): the split's time A + K(B), and |A| + K(B) (the scale of its rounding
        error). Tabled: evaluate()'s time."""
        if not self.symbolic:
            return self.pred, np.abs(self.pred)
        P = self.part
        k = P["K"][P["k0"]]
        return P["A"][P["g0"]] + k, np.abs(P["A"][P["g0"]]) + k


def pipelined_table(shape: Shape, space: list[KernelConfig], pset: ParamSet, index: dict) -> PipeTable:
    """Run ws_pipelined.evaluate() on the whole space at ``shape`` and split it as

        time(c, variant, persistent, B) = A + K(c, variant, B),   wait = time - D

    with A and D per (tile class, variant, persistent) and K (evaluate()'s ``ring_us``)
    per (class, variant, B): the only assumption is that the ring depth B enters the model
    through the pipelined K loop's periods. That A and D are the same for every B of a
    group, and K for both persistences, is checked here on every configuration: if the
    model's dependence on B is not of this form (e.g. B also enters the L2 window or the
    fill), the table falls back to ``symbolic=False``.
    """
    return pipelined_tables([shape], space, pset, index)[0]


def pipelined_tables(shapes: list[Shape], space: list[KernelConfig], pset: ParamSet, index: dict) -> list[PipeTable]:
    """pipelined_table of each shape, with one evaluate() call for all of them (the model
    is row-wise; its cost is mostly per call): a testlist's tables at once. The tile grid
    (no ring depth in it) is computed once per (class, variant, persistent) group where the
    group's configurations differ only in B, and taken for each of them."""
    n = len(space)
    facts = space_facts(space)
    if index != facts.index:
        raise ValueError("pipelined_tables: index is not the space's tile-class index (space.rank_parts)")
    g0 = facts.g0
    ins = [pipelined_inputs(shape, space, pset) for shape in shapes]
    rows = [k for k, v in ins[0].items() if isinstance(v, np.ndarray) and v.shape == (n,)]
    # the inputs but m, n, k (constant per shape) are the configurations' and parameters'
    same = all(np.array_equal(ins[0][k], ins[0][k][g0]) for k in rows if k != "stages")
    reps = np.unique(g0) if same else np.arange(n)
    back = np.searchsorted(reps, g0) if same else np.arange(n)
    kw = {k: v for k, v in ins[0].items() if k not in rows}
    kw.update({k: np.concatenate([a[k] for a in ins]) for k in rows})
    sub = {k: np.concatenate([a[k][reps] for a in ins]) if k in rows else v for k, v in kw.items()}
    idx = np.concatenate([i * len(reps) + back for i in range(len(shapes))])
    both = ws_pipelined.evaluate(**kw, grid=ws_pipelined.take(ws_pipelined.grid_of(sub), idx))
    return [_split(shape, space, index, {c: v[i * n:(i + 1) * n] for c, v in both.items()}, facts)
            for i, shape in enumerate(shapes)]


def _split(shape: Shape, space: list, index: dict, out: dict, facts: SpaceFacts) -> PipeTable:
    """The split of one shape's evaluate() outputs (see pipelined_table)."""
    pred = out["predicted_us"]
    wait = math_wait(out, "ws-pipelined")
    K = out["ring_us"]
    part = {"K": K, "A": pred - K, "D": pred - wait, "cls": facts.cls, "g0": facts.g0, "k0": facts.k0}
    # the split holds where A and D are the same for every configuration of a group, and K
    # for every configuration of a (class, variant, B)
    g0, k0 = facts.g0, facts.k0
    dev = max(float(np.max(np.abs(part[x] - part[x][g0]) / pred)) for x in ("A", "D"))
    dev = max(dev, float(np.max(np.abs(K - K[k0]) / pred)))
    symbolic = dev <= PIPE_TOL and bool(np.all(K >= 0))
    return PipeTable(symbolic=symbolic, shape=shape, space=list(space), index=index, pred=pred, wait=wait,
                     stages=facts.stages, max_dev=dev, out=out, part=part, facts=facts)
