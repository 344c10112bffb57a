"""ws-pipelined for one shape over one space, read off the model's own evaluate(): the
table the Z3 encoding and the exhaustive reference share.

The model's physics is not re-derived here. ``pipelined_table`` runs
``models.ws_pipelined.evaluate()`` over the space (and at B = 1, 2, 2**40 to read the
periods off) and splits its time as

    time = A + cF * max(mF, lF/B) + cL * max(mL, lL/B),   wait = time - D

i.e. the pipelined K loop: S - 1 steady periods per tile, Pk = max(Tc, x, (lat + x +
Tc)/B) = max(m, l/B), for the F full waves (cF = F*(S-1)) and the remainder wave (cL =
[R>0]*(S-1)), per tile class. cF, cL per class; (m, l) of the full-wave and last-wave CTA
per (class, raster) (bandwidth sharing, raster L2 reuse, padding, SMEM limit, whatever the
model's load physics is); A and D per (class, raster, persistent): A is evaluate()'s time
minus the stage-dependent part (init, fills and their exposure, epilogues, overheads,
launches), D is time minus the MATH wait.

The split is checked on every configuration of the space (A and D the same for every B of
a group, to PIPE_TOL relative); if the model's dependence on B stops having this form (B
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
from .space import N_VARIANTS, Q, class_key, padded_volume, variant_code

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
    evaluate() time and wait enter as a table). ``classes``: per class index i, ``cF``/``cL``
    (the K-loop periods the full waves / the remainder wave contribute: F*(S-1) and
    [R>0]*(S-1)), ``per`` {raster: ((mF, lF), (mL, lL))} (the period of a full-wave /
    last-wave CTA is max(m, l/B)), ``A`` and ``D`` {(raster, persistent): value}, ``vol``
    (padded_volume), exact, built on first use per class (``entry(i)``): the pruned solve
    needs only the classes it keeps. ``exact``: config -> (time, wait) as exact rationals,
    the values both Z3 and exhaustive_exact use. ``out``: evaluate() over the space (the
    breakdown of a solution is its row). ``part``: the split's float arrays per
    configuration (cF, cL, A, D, mF, lF, mL, lL) and the index of each configuration's
    class (``cls``), and of the configuration whose values stand for its class (``c0``),
    (class, raster) (``r0``) and (class, raster, persistent) group (``g0``).
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
    _entries: dict = field(default_factory=dict)
    _exact: dict | None = None

    @property
    def classes(self) -> dict:
        """Every class's exact entry (see the class doc)."""
        return {i: self.entry(i) for i in sorted(set(self.part["cls"].tolist()))}

    def entry(self, i: int) -> dict:
        """The exact entry of class ``i``: the values of the first configuration (in space
        order) of the class, of each (class, raster) and of each group."""
        d = self._entries.get(i)
        if d is not None:
            return d
        P = self.part
        js = np.nonzero(P["cls"] == i)[0]
        j0 = int(js[0])
        d = {"cF": int(P["cF"][j0]), "cL": int(P["cL"][j0]), "per": {}, "A": {}, "D": {},
             "vol": padded_volume(self.shape, self.space[j0])}
        for j in js:
            c = self.space[j]
            r, p = variant_code(c), bool(c.persistent)
            if r not in d["per"]:
                k = int(P["r0"][j])
                d["per"][r] = ((Q(P["mF"][k]), Q(P["lF"][k])), (Q(P["mL"][k]), Q(P["lL"][k])))
            if (r, p) not in d["A"]:
                g = int(P["g0"][j])
                d["A"][(r, p)], d["D"][(r, p)] = Q(P["A"][g]), Q(P["D"][g])
        self._entries[i] = d
        return d

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
        for j in js:
            c = self.space[j]
            i, r, p = int(self.part["cls"][j]), variant_code(c), bool(c.persistent)
            d = self.entry(i)
            key = (i, r, c.stages)
            if key not in pk:
                (mf, lf), (ml, lm) = d["per"][r]
                pk[key] = d["cF"] * _pk(mf, lf, c.stages) + d["cL"] * _pk(ml, lm, c.stages)
            t = d["A"][(r, p)] + pk[key]
            out[c] = (t, t - d["D"][(r, p)])
        return out

    def float_times(self) -> tuple[np.ndarray, np.ndarray]:
        """Per configuration, in floats from the values that stand for its class and group:
        the split's time A + cF*max(mF, lF/B) + cL*max(mL, lL/B), and |A| + cF*max(..) +
        cL*max(..) (the scale of its rounding error). Tabled: evaluate()'s time."""
        if not self.symbolic:
            return self.pred, np.abs(self.pred)
        P = self.part
        g, r, c = P["g0"], P["r0"], P["c0"]
        b = np.array([x.stages for x in self.space], dtype=np.float64)
        k = P["cF"][c] * np.maximum(P["mF"][r], P["lF"][r] / b) + P["cL"][c] * np.maximum(P["mL"][r], P["lL"][r] / b)
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


def _depth_outputs(both: dict, n: int, back: np.ndarray) -> dict:
    """_depth_rows' blocks of evaluate()'s outputs, per configuration: {"B", 1, 2, "inf"}."""
    r = (len(next(iter(both.values()))) - n) // 3
    outs = {"B": {c: v[:n] for c, v in both.items()}}
    for q, name in enumerate((1, 2, "inf")):
        outs[name] = {c: v[n + q * r:n + (q + 1) * r][back] for c, v in both.items()}
    return outs


def _groups(space: list[KernelConfig], index: dict) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per configuration: class index, variant code, and its group's first configuration."""
    cls = np.array([index[class_key(c)] for c in space], dtype=np.int64)
    rast = np.array([variant_code(c) for c in space], dtype=np.int64)
    pers = np.array([bool(c.persistent) for c in space], dtype=np.int64)
    return cls, rast, _first_of((cls * N_VARIANTS + rast) * 2 + pers)


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
    o1, oinf, out = outs[1], outs["inf"], outs["B"]
    l1, m1 = o1["full_wave_period_us"], oinf["full_wave_period_us"]
    mF, lF, mL, lL = m1.copy(), l1.copy(), m1.copy(), l1.copy()
    two = (out["tiles"] // out["wave_ctas"] > 0) & (cL > 0)
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


def _first_of(keys: np.ndarray) -> np.ndarray:
    """Per position, the first position (in space order) with the same key."""
    _, first, inv = np.unique(keys, return_index=True, return_inverse=True)
    return first[inv.reshape(-1)]


def pipelined_table(shape: Shape, space: list[KernelConfig], pset: ParamSet, index: dict) -> PipeTable:
    """Run ws_pipelined.evaluate() on the whole space at ``shape`` and split it as

        time(c, raster, persistent, B) = A + cF * max(mF, lF/B) + cL * max(mL, lL/B)
        wait = time - D

    with A and D per (tile class, raster, persistent), cF, cL per class, (m, l) per
    (class, raster): the only assumption is that the ring depth B enters the model
    through the pipelined K loop's period (S - 1 periods per tile of the full and the
    last wave). That A is the same for every B of a group, and D too, is checked here on
    every configuration: if the model's dependence on B is not of this form (e.g. B also
    enters the L2 window or the fill), the table falls back to ``symbolic=False``.
    """
    return pipelined_tables([shape], space, pset, index)[0]


def pipelined_tables(shapes: list[Shape], space: list[KernelConfig], pset: ParamSet, index: dict) -> list[PipeTable]:
    """pipelined_table of each shape, with one evaluate() call for all of them (the model
    is row-wise; its cost is mostly per call): a testlist's tables at once."""
    n = len(space)
    cls, rast, g0 = _groups(space, index)
    ins = [pipelined_inputs(shape, space, pset) for shape in shapes]
    # the inputs but m, n, k (constant per shape) are the configurations' and parameters'
    same = all(np.array_equal(v, v[g0]) for k, v in ins[0].items()
               if isinstance(v, np.ndarray) and v.shape == (n,) and k != "stages")
    rows = [_depth_rows(a, n, g0, same) for a in ins]
    kw = {k: v for k, v in ins[0].items() if k not in rows[0][0]}
    kw.update({k: np.concatenate([r[0][k] for r in rows]) for k in rows[0][0]})
    both = ws_pipelined.evaluate(**kw)
    out, lo = [], 0
    for shape, a, (block, back) in zip(shapes, ins, rows):
        size = len(block["stages"])
        outs = _depth_outputs({c: v[lo:lo + size] for c, v in both.items()}, n, back)
        lo += size
        out.append(_split(shape, space, index, a, outs, (cls, rast, g0)))
    return out


def _split(shape: Shape, space: list, index: dict, a: dict, outs: dict, groups: tuple) -> PipeTable:
    """The split of one shape's evaluate() outputs (see pipelined_table)."""
    cls, rast, g0 = groups
    out = outs["B"]
    pred = out["predicted_us"]
    wait = math_wait(out, "ws-pipelined")
    tiles, s = out["tiles"], out["k_stages"]
    full_waves, has_rem = tiles // out["wave_ctas"], (tiles % out["wave_ctas"]) > 0
    cF, cL = full_waves * (s - 1), has_rem * (s - 1)
    (mF, lF), (mL, lL) = _pipe_periods(a, outs, cF, cL)
    b = a["stages"].astype(np.float64)
    A = pred - cF * np.maximum(mF, lF / b) - cL * np.maximum(mL, lL / b)
    part = {"cF": cF, "cL": cL, "A": A, "D": pred - wait, "mF": mF, "lF": lF, "mL": mL, "lL": lL, "cls": cls,
            "c0": _first_of(cls), "r0": _first_of(cls * N_VARIANTS + rast), "g0": g0}
    # the split holds where A, D and the periods are the same for every configuration of a group
    dev = max(float(np.max(np.abs(part[x] - part[x][g0]) / pred)) for x in ("A", "D", "mF", "lF", "mL", "lL"))
    symbolic = dev <= PIPE_TOL and bool(np.all(lF >= mF) & np.all(lL >= mL)) and bool(np.all(mF > 0) & np.all(mL > 0))
    return PipeTable(symbolic=symbolic, shape=shape, space=list(space), index=index, pred=pred, wait=wait,
                     stages=tuple(sorted({c.stages for c in space})), max_dev=dev, out=out, part=part)
