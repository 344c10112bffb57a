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
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from ..models import ws_pipelined
from ..params import ParamSet
from ..problem import KernelConfig, Shape
from .evaluate import math_wait, pipelined_inputs
from .space import RASTER_CODE, Q, class_key, padded_volume

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
    evaluate() time and wait enter as a table). Per class index i: ``cF``/``cL`` (the
    K-loop periods the full waves / the remainder wave contribute: F*(S-1) and
    [R>0]*(S-1)), ``per`` {raster: ((mF, lF), (mL, lL))} (the period of a full-wave /
    last-wave CTA is max(m, l/B)), ``A`` and ``D`` {(raster, persistent): value}, ``vol``
    (padded_volume). ``exact``: config -> (time, wait) as exact rationals, the values both
    Z3 and exhaustive_exact use (computed on first use: solve() needs them only when tabled).
    """

    symbolic: bool
    classes: dict
    space: list
    index: dict
    pred: np.ndarray
    wait: np.ndarray
    stages: tuple
    max_dev: float
    _exact: dict | None = None

    @property
    def exact(self) -> dict:
        """config -> (time, wait), exact: the split's values (symbolic) or evaluate()'s (tabled)."""
        if self._exact is None:
            self._exact = self._split_values() if self.symbolic else {
                c: (Q(self.pred[j]), Q(self.wait[j])) for j, c in enumerate(self.space)}
        return self._exact

    def _split_values(self) -> dict:
        out, pk = {}, {}
        for c in self.space:
            i, r, p = self.index[class_key(c)], RASTER_CODE[c.raster], bool(c.persistent)
            d = self.classes[i]
            key = (i, r, c.stages)
            if key not in pk:
                (mf, lf), (ml, lm) = d["per"][r]
                pk[key] = d["cF"] * _pk(mf, lf, c.stages) + d["cL"] * _pk(ml, lm, c.stages)
            t = d["A"][(r, p)] + pk[key]
            out[c] = (t, t - d["D"][(r, p)])
        return out


def _pipe_periods(a: dict, out: dict, cF: np.ndarray, cL: np.ndarray):
    """((mF, lF), (mL, lL)) per configuration: the period max(m, l/B) of a full-wave and of
    a last-wave CTA, read off the model's own evaluate() -- no physics re-derived here.

    At B = 1 the period is l (l >= m), at B -> inf (2**40) it is m: evaluate()'s
    ``full_wave_period_us`` gives (m, l) of the full waves where there are any, else of
    the only, remainder, wave. The remainder wave
    of a multi-wave grid comes from the totals: f(1) - f(inf) = cF*(lF - mF) + cL*(lL -
    mL) gives d = lL - mL, and f(2) - f(inf) the excess g = max(0, (d - mL)/2) over mL, so
    mL = d - 2g where g > 0; where g = 0, mL >= d and every B >= 2 sees the period mL:
    (mL, lL) = (d, 2d) reproduces the model up to the constant A. pipelined_table checks
    the result on every configuration."""

    def ev(b):
        return ws_pipelined.evaluate(**{**a, "stages": np.full_like(a["stages"], b)})

    o1, oinf = ev(1), ev(2 ** 40)
    l1, m1 = o1["full_wave_period_us"], oinf["full_wave_period_us"]
    mF, lF, mL, lL = m1.copy(), l1.copy(), m1.copy(), l1.copy()
    two = (out["tiles"] // a["sms"] > 0) & (cL > 0)
    if two.any():
        f1, finf, f2 = o1["predicted_us"], oinf["predicted_us"], ev(2)["predicted_us"]
        kL = np.where(cL > 0, cL, 1)
        d = (f1 - finf - cF * (lF - mF)) / kL
        g = (f2 - finf - cF * (np.maximum(mF, lF / 2) - mF)) / kL
        eps = 1e-9 * np.maximum(np.abs(d), 1e-30)
        ml = np.maximum(np.where(g > eps, d - 2 * g, d), 0.0)
        mL = np.where(two, ml, mL)
        lL = np.where(two, ml + np.maximum(d, 0.0), lL)
    return (mF, lF), (mL, lL)


def _group_classes(shape: Shape, space: list[KernelConfig], index: dict, parts: dict) -> tuple[dict, float]:
    """Per-class tables from the per-configuration split ``parts`` (cF, cL, A, D, mF, lF,
    mL, lL, pred), and the largest relative deviation within a (class, raster, persistent)
    group (the split holds where it is ~0)."""
    groups: dict = {}
    for j, c in enumerate(space):
        groups.setdefault((index[class_key(c)], RASTER_CODE[c.raster], bool(c.persistent)), []).append(j)
    pred, cF, cL, A, D = (parts[x] for x in ("pred", "cF", "cL", "A", "D"))
    mF, lF, mL, lL = (parts[x] for x in ("mF", "lF", "mL", "lL"))
    dev = 0.0
    classes: dict = {}
    for (i, r, p), js in groups.items():
        j0 = js[0]
        for arr_ in (A, D, mF, lF, mL, lL):
            dev = max(dev, float(np.max(np.abs(arr_[js] - arr_[j0]) / pred[js])))
        d = classes.setdefault(i, {"cF": int(cF[j0]), "cL": int(cL[j0]), "per": {}, "A": {}, "D": {},
                                   "vol": padded_volume(shape, space[j0])})
        d["per"].setdefault(r, ((Q(mF[j0]), Q(lF[j0])), (Q(mL[j0]), Q(lL[j0]))))
        d["A"][(r, p)] = Q(A[j0])
        d["D"][(r, p)] = Q(D[j0])
    return classes, dev


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
    a = pipelined_inputs(shape, space, pset)
    out = ws_pipelined.evaluate(**a)
    pred = out["predicted_us"]
    wait = math_wait(out, "ws-pipelined")
    tiles, s = out["tiles"], out["k_stages"]
    full_waves, has_rem = tiles // a["sms"], (tiles % a["sms"]) > 0
    cF, cL = full_waves * (s - 1), has_rem * (s - 1)
    (mF, lF), (mL, lL) = _pipe_periods(a, out, cF, cL)
    b = a["stages"].astype(np.float64)
    A = pred - cF * np.maximum(mF, lF / b) - cL * np.maximum(mL, lL / b)
    parts = {"pred": pred, "cF": cF, "cL": cL, "A": A, "D": pred - wait, "mF": mF, "lF": lF, "mL": mL, "lL": lL}
    classes, dev = _group_classes(shape, space, index, parts)
    symbolic = dev <= PIPE_TOL and bool(np.all(lF >= mF) & np.all(lL >= mL)) and bool(np.all(mF > 0) & np.all(mL > 0))
    return PipeTable(symbolic=symbolic, classes=classes, space=list(space), index=index,
                     pred=pred, wait=wait, stages=tuple(sorted({c.stages for c in space})), max_dev=dev)
