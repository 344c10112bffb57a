"""ws-pipelined for one shape over one space, read off the model's own evaluate(): the
table the Z3 encoding and the exhaustive reference share.

The model's physics is not re-derived here. ``pipelined_table`` runs
``models.ws_pipelined.evaluate()`` over the space (and at B = 1, 2, 2**40 to read the
periods off) and splits its time as

    time = A + cF * max(mF, lF/B) + cL * max(mL, lL/B),   wait = time - D

i.e. the pipelined K loop: S - 1 steady periods per work item, Pk = max(Tc, x, (lat + x
+ Tc)/B) = max(m, l/B), for the F full waves (cF = F*(S-1)) and the remainder wave (cL =
[R>0]*(S-1)), less stream-K's segment ends: the model's own ``full_periods`` and
``last_periods``. cF, cL and (m, l) of the full-wave and last-wave CTA per (class,
variant) (the variant holds the K split and stream-K, which change S and the waves;
bandwidth sharing, raster L2 reuse, padding, SMEM limit, whatever the model's load
physics is); A and D per (class, variant, persistent): A is evaluate()'s time minus the
stage-dependent part (init, fills and their exposure, epilogues, reductions, overheads,
launches), D is time minus the MATH wait.

The split is checked on every configuration of the space (A and D the same for every B of
a group, to PIPE_TOL relative, cF and cL the same for every configuration of a (class,
variant)); if the model's dependence on B stops having this form (B
in the L2 window or the fill, say), the table is ``symbolic=False`` and the encoding uses
each configuration's evaluate() time and wait instead. Exact rationals of the tabled
floats are shared by Z3 and the exhaustive reference, so both decide ties identically.
"""

from __future__ import annotations

import math
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


def _pk(m, l, b):
    """The pipelined K loop's steady period max(m, l/B) (floats or Fractions); in the model
    m = max(Tc, x) and l = latency + x + Tc."""
    return max(m, l / b)


def period_parts(m: Fraction, l: Fraction) -> tuple[Fraction, Fraction, int]:
    """(m, l, B*) with max(m, l/B) = m if B >= B* else l/B, for integer B >= 1:
    B* = ceil(l/m) (m > 0, checked by pipelined_table)."""
    return m, l, max(1, math.ceil(l / m))


@dataclass
class PipeTable:
    """ws-pipelined for one shape over one space: what the encoding needs.

    ``symbolic``: the split reproduces the model's evaluate() on every configuration of
    the space (within PIPE_TOL relative); else ``tabled`` (each configuration's
    evaluate() time and wait enter as a table). Exact values, built on first use (the
    pruned solve needs only the classes and groups it keeps): ``entry(i)`` of class i,
    its ``vol`` (padded_volume) and ``variants``; ``per(i, r)`` of a (class, variant), the
    counts (cF, cL) of K-loop periods the full waves / the remainder wave contribute on
    the critical path (F*(S-1) and [R>0]*(S-1), less stream-K's segment ends) and the
    periods' (mF, lF), (mL, lL) (a full-wave / last-wave CTA's period is max(m, l/B));
    ``ad(i, r, p)`` the (A, D) of a (class, variant, persistent) group. ``exact``: config
    -> (time, wait) as exact rationals, the values both Z3 and exhaustive_exact use.
    ``out``: evaluate() over the space (the breakdown of a solution is its row). ``part``:
    the split's float arrays per configuration (cF, cL, A, D, mF, lF, mL, lL) and the index
    of each configuration's class (``cls``), and of the configuration whose values stand
    for its (class, variant) (``r0``) and (class, variant, persistent) group (``g0``).
    ``facts``: the space's (``space.space_facts``).
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
    _per: dict = field(default_factory=dict)
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

    def per(self, i: int, r: int) -> tuple:
        """(cF, cL, (mF, lF), (mL, lL)) of class ``i``, variant ``r``, exact: the values of
        its first configuration (in space order)."""
        v = self._per.get((i, r))
        if v is None:
            P, k = self.part, self.facts.first_r[(i, r)]
            v = (int(P["cF"][k]), int(P["cL"][k]), (Q(P["mF"][k]), Q(P["lF"][k])), (Q(P["mL"][k]), Q(P["lL"][k])))
            self._per[(i, r)] = v
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
        out, pk = {}, {}
        f = self.facts
        for j in js:
            c = self.space[j]
            i, r, p = int(f.cls[j]), int(f.variant[j]), bool(f.persistent[j])
            key = (i, r, c.stages)
            if key not in pk:
                cf, cl, (mf, lf), (ml, lm) = self.per(i, r)
                pk[key] = (cf * _pk(mf, lf, c.stages) if cf else 0) + (cl * _pk(ml, lm, c.stages) if cl else 0)
            a, d = self.ad(i, r, p)
            t = a + pk[key]
            out[c] = (t, t - d)
        return out

    def float_times(self) -> tuple[np.ndarray, np.ndarray]:
        """Per configuration, in floats from the values that stand for its class and group:
        the split's time A + cF*max(mF, lF/B) + cL*max(mL, lL/B), and |A| + cF*max(..) +
        cL*max(..) (the scale of its rounding error). Tabled: evaluate()'s time."""
        if not self.symbolic:
            return self.pred, np.abs(self.pred)
        P = self.part
        g, r = P["g0"], P["r0"]
        b = np.array([x.stages for x in self.space], dtype=np.float64)
        k = P["cF"][r] * np.maximum(P["mF"][r], P["lF"][r] / b) + P["cL"][r] * np.maximum(P["mL"][r], P["lL"][r] / b)
        return P["A"][g] + k, np.abs(P["A"][g]) + k


def _depth_rows(a: dict, n: int, g0: np.ndarray, same: bool) -> tuple[dict, np.ndarray]:
    """evaluate()'s per-row inputs at the space's ring depths (the first n rows) and at
    B = 1, 2, 2**40 (three blocks of one row per group), and the block row of each
    configuration. The configurations of a (class, raster, persistent) group differ only
    in B, so at a fixed B they are one row (``g0``: each configuration's group
    representative), where every other input agrees within the group (``same``), else
    one per row."""
    rows = [k for k, v in a.items() if isinstance(v, np.ndarray) and v.shape == (n,)]
    reps = np.unique(g0) if same else np.arange(n)
    back = np.searchsorted(reps, g0) if same else np.arange(n)
    kw = {}
    for k in rows:
        parts = [a[k]] + [np.full(len(reps), b, dtype=a[k].dtype) if k == "stages" else a[k][reps]
                          for b in (1, 2, 2 ** 40)]
        kw[k] = np.concatenate(parts)
    return kw, back


def _grid(kw: dict, rows: list, n: int):
    """The model's grid (tiles, waves, panels: no ring depth in it) of the rows of ``kw``
    (_depth_rows' blocks of each shape, concatenated), computed on one block of group
    representatives per shape and taken for every row (``ws_pipelined.take``)."""
    sizes = [len(block["stages"]) for block, _ in rows]
    r = (sizes[0] - n) // 3
    reps, idx, lo = [], [], 0
    for i, (size, (_, back)) in enumerate(zip(sizes, rows)):
        reps.append(np.arange(lo + n, lo + n + r))  # the block at B = 1: one row per group
        idx.append(i * r + np.concatenate([back, np.arange(r), np.arange(r), np.arange(r)]))
        lo += size
    reps = np.concatenate(reps)
    sub = {k: v[reps] if isinstance(v, np.ndarray) and v.shape == (lo,) else v for k, v in kw.items()}
    return ws_pipelined.take(ws_pipelined.grid_of(sub), np.concatenate(idx))


def _depth_outputs(both: dict, n: int, back: np.ndarray) -> dict:
    """_depth_rows' blocks of evaluate()'s outputs, per configuration: {"B", 1, 2, "inf"}."""
    r = (len(next(iter(both.values()))) - n) // 3
    outs = {"B": {c: v[:n] for c, v in both.items()}}
    for q, name in enumerate((1, 2, "inf")):
        outs[name] = {c: v[n + q * r:n + (q + 1) * r][back] for c, v in both.items()}
    return outs


def _pipe_periods(a: dict, outs: dict, cF: np.ndarray, cL: np.ndarray):
    """((mF, lF), (mL, lL)) per configuration: the period max(m, l/B) of a full-wave and of
    a last-wave CTA, read off the model's own evaluate() -- no physics re-derived here.

    ``outs``: evaluate() at the space's depths and at B = 1, 2, 2**40 (keys "B", 1, 2, "inf").
    At B = 1 the period is l (l >= m), at B -> inf (2**40) it is m: evaluate()'s
    ``full_wave_period_us`` gives (m, l) of the full waves where there are any, else of
    the only, remainder, wave. The remainder wave
    of a multi-wave grid comes from the totals: f(1) - f(inf) = cF*(lF - mF) + cL*(lL -
    mL) gives d = lL - mL, and f(2) - f(inf) the excess g = max(0, (d - mL)/2) over mL, so
    mL = d - 2g where g > 0; where g = 0, mL >= d and every B >= 2 sees the period mL:
    (mL, lL) = (d, 2d) reproduces the model up to the constant A. pipelined_table checks
    the result on every configuration."""
    o1, oinf = outs[1], outs["inf"]
    l1, m1 = o1["full_wave_period_us"], oinf["full_wave_period_us"]
    mF, lF, mL, lL = m1.copy(), l1.copy(), m1.copy(), l1.copy()
    two = (cF > 0) & (cL > 0)  # full waves and a remainder wave with K loops
    if two.any():
        f1, finf, f2 = o1["predicted_us"], oinf["predicted_us"], outs[2]["predicted_us"]
        kL = np.where(cL > 0, cL, 1)
        d = (f1 - finf - cF * (lF - mF)) / kL
        g = (f2 - finf - cF * (np.maximum(mF, lF / 2) - mF)) / kL
        eps = 1e-9 * np.maximum(np.abs(d), 1e-30)
        ml = np.maximum(np.where(g > eps, d - 2 * g, d), 0.0)
        mL = np.where(two, ml, mL)
        lL = np.where(two, ml + np.maximum(d, 0.0), lL)
    return (mF, lF), (mL, lL)


def pipelined_table(shape: Shape, space: list[KernelConfig], pset: ParamSet, index: dict) -> PipeTable:
    """Run ws_pipelined.evaluate() on the whole space at ``shape`` and split it as

        time(c, variant, persistent, B) = A + cF * max(mF, lF/B) + cL * max(mL, lL/B)
        wait = time - D

    with A and D per (tile class, variant, persistent), cF, cL and (m, l) per (class,
    variant): the only assumption is that the ring depth B enters the model through the
    pipelined K loop's period (the model's full_periods and last_periods of them, S - 1
    per work item of the full and the last wave). That A is the same for every B of a
    group, and D too, and cF, cL for every configuration of a (class, variant), is checked here on
    every configuration: if the model's dependence on B is not of this form (e.g. B also
    enters the L2 window or the fill), the table falls back to ``symbolic=False``.
    """
    return pipelined_tables([shape], space, pset, index)[0]


def pipelined_tables(shapes: list[Shape], space: list[KernelConfig], pset: ParamSet, index: dict) -> list[PipeTable]:
    """pipelined_table of each shape, with one evaluate() call for all of them (the model
    is row-wise; its cost is mostly per call): a testlist's tables at once."""
    n = len(space)
    facts = space_facts(space)
    if index != facts.index:
        raise ValueError("pipelined_tables: index is not the space's tile-class index (space.rank_parts)")
    g0 = facts.g0
    ins = [pipelined_inputs(shape, space, pset) for shape in shapes]
    # the inputs but m, n, k (constant per shape) are the configurations' and parameters'
    same = all(np.array_equal(v, v[g0]) for k, v in ins[0].items()
               if isinstance(v, np.ndarray) and v.shape == (n,) and k != "stages")
    rows = [_depth_rows(a, n, g0, same) for a in ins]
    kw = {k: v for k, v in ins[0].items() if k not in rows[0][0]}
    kw.update({k: np.concatenate([r[0][k] for r in rows]) for k in rows[0][0]})
    both = ws_pipelined.evaluate(**kw, grid=_grid(kw, rows, n))
    out, lo = [], 0
    for shape, a, (block, back) in zip(shapes, ins, rows):
        size = len(block["stages"])
        outs = _depth_outputs({c: v[lo:lo + size] for c, v in both.items()}, n, back)
        lo += size
        out.append(_split(shape, space, index, a, outs, facts))
    return out


def _split(shape: Shape, space: list, index: dict, a: dict, outs: dict, facts: SpaceFacts) -> PipeTable:
    """The split of one shape's evaluate() outputs (see pipelined_table)."""
    out = outs["B"]
    pred = out["predicted_us"]
    wait = math_wait(out, "ws-pipelined")
    cF, cL = out["full_periods"], out["last_periods"]
    (mF, lF), (mL, lL) = _pipe_periods(a, outs, cF, cL)
    b = a["stages"].astype(np.float64)
    A = pred - cF * np.maximum(mF, lF / b) - cL * np.maximum(mL, lL / b)
    part = {"cF": cF, "cL": cL, "A": A, "D": pred - wait, "mF": mF, "lF": lF, "mL": mL, "lL": lL,
            "cls": facts.cls, "r0": facts.r0, "g0": facts.g0}
    # the split holds where A, D and the periods are the same for every configuration of a group,
    # and the periods' counts for every configuration of a (class, variant)
    g0, r0 = facts.g0, facts.r0
    dev = max(float(np.max(np.abs(part[x] - part[x][g0]) / pred)) for x in ("A", "D", "mF", "lF", "mL", "lL"))
    same_counts = bool(np.all(cF == cF[r0]) & np.all(cL == cL[r0]))
    symbolic = dev <= PIPE_TOL and same_counts and bool(np.all(lF >= mF) & np.all(lL >= mL)) \
        and bool(np.all(mF > 0) & np.all(mL > 0))
    return PipeTable(symbolic=symbolic, shape=shape, space=list(space), index=index, pred=pred, wait=wait,
                     stages=facts.stages, max_dev=dev, out=out, part=part, facts=facts)
