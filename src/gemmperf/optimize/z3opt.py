"""Z3-optimal tilings: the model and the legal configuration space as an SMT problem.

``solve(shape, family, gpu, params, model)`` asks Z3 for the legal configuration of a
kernel family that minimizes, lexicographically,

1. the predicted time (``ws-stage``, ``ws-persistent`` or ``ws-pipelined``),
2. the MATH warps' total waiting time (the paper's section 3.2 second objective),
3. a deterministic tie-break rank (below),

and returns the optimum, its breakdown (the model's own ``evaluate`` on that
configuration), the runner-up tiling and the solve time. Everything is exact: float
parameters enter as the rationals of their shortest decimal form (``Fraction(repr(x))``),
and ``exhaustive_exact`` evaluates the same formulas with Python ``Fraction`` so that
ties are decided identically.

Encoding (for one shape; its size does not depend on K)
--------------------------------------------------------
The space (by default ``kernels.space.legal_configs(family, gpu, dtype)``) is grouped
into tile classes c = (TM, TN, TK, CM, CN), numbered in ascending order. Variables:

- ``cls`` (Int, 0 <= cls < #classes) and the fields tm, tn, tk, cm, cn (Int) with
  ``cls == c -> tm == TM_c & ...``; ``b`` (stages, Int), ``pers`` (Bool), ``raster``
  (Int: 0 row, 1 column, 2 grouped).
- Legality per class: the (stages, persistent, raster) choices the space allows,
  as an interval of stages times allowed flags when it is a product, else as an
  explicit disjunction; plus the shared-memory budget ``smem_c(b) = base_c + per_c*b
  <= smem_per_block`` where kernels.space.smem_bytes is affine in the stages (the
  epilogue's and barriers' bytes are in base_c/per_c). Register and architecture rules
  remove whole tiles (they are not in the space).
- ws-stage: ``tiles`` (Int) from a per-class table ceil(M/TM)*ceil(N/TN); waves W by
  integer division ``W*SMs >= tiles > (W-1)*SMs``; K stages S by ``S*TK >= K >
  (S-1)*TK`` (per class, TK constant, so linear). L = T_LOAD_A + T_LOAD_B and T_MATH
  (Real) per class. The stage recurrence is replaced by its closed form
  ``Sm(S) = L + (S-1)*P, P = If(b >= 2, max(L, T_MATH), L + T_MATH)`` (proved equal to
  the recurrence for every S and B by ``prove_closed_form``). The products (S-1)*P and
  W*wave are linearized over the finitely many values S and W take (one per TK, at
  most one per class): ``S == s -> Sm == L + (s-1)*P``, ``W == w -> time == w*wave +
  T_INIT``. Wait: ``W*(L + (S-1)*(P - T_MATH))``.
- ws-persistent: tiles from the cluster-rounded grid (table), ``tiles == fw*F_c + rem,
  0 <= rem < F_c`` with F_c the whole-cluster SM count, first/last wave SM counts by
  If, DMA/EPILOGUE of the remainder wave and the first K block linear in rem and the
  per-class per-SM constants, max by If; ``fw * fullwave_c`` per class. The MATH warps'
  waiting time is everything but their busy time before the last epilogue:
  ``first_dma + mainloop - waves * MATH``.

- ws-pipelined (models/ws_pipelined.py): the model's physics is not re-derived here.
  For one shape, ``pipelined_table`` runs the model's own vectorized ``evaluate()`` over
  the space (and at B = 1, 2, 2**40 to read the periods off) and splits its time as

      time = A + cF * max(mF, lF/B) + cL * max(mL, lL/B),   wait = time - D

  i.e. the pipelined K loop: S - 1 steady periods per tile, Pk = max(Tc, x, (lat + x +
  Tc)/B) = max(m, l/B), for the F full waves (cF = F*(S-1)) and the remainder wave (cL =
  [R>0]*(S-1)), per class. *Tabled* from evaluate(): cF, cL per class; (m, l) of the
  full-wave and last-wave CTA per (class, raster) (bandwidth sharing, raster L2 reuse,
  padding, SMEM limit, whatever the model's load physics is); A and D per (class,
  raster, persistent): A is evaluate()'s time minus the stage-dependent part (init,
  fills and their exposure, epilogues, overheads, launches), D is time minus the MATH
  wait. *Symbolic*: the ring depth B (Int, with the legal stage range and the
  shared-memory budget per class from the skeleton), Pk = If(b >= B*, m, q), q = l/b
  through one implication per legal stage value (``b == v -> q == l/v``: linear), B* =
  ceil(l/m) an integer per (class, raster) (exactly max(m, l/B) for integer B), the sum
  and the wait. Per (class, raster, persistent) an implied bound time >= A + cF*mF +
  cL*mL (Pk >= m) is added: redundant, but bound propagation then prunes whole groups
  (about 10x faster on simt's 27 tiles).
  MATH wait (second objective): the consumer warps' time in the K loops that is not
  multiply: fill_us + mainloop_us - waves * S * T_MATH (exposed fills, latency, load,
  shared-memory and period stalls, on the critical path of one SM).
  ``pipelined_table`` checks the split on every configuration of the space (A and D the
  same for every B of a group, to 1e-9 relative); if the model's dependence on B stops
  having this form (B in the L2 window or the fill, say), it falls back to a
  per-configuration table of evaluate()'s time and wait (``Solution.encoding ==
  "tabled"``; still K-independent, #configs lines). Exact rationals of the tabled floats
  are shared with ``exhaustive_exact``, so both decide ties identically; against
  evaluate() itself the optimum agrees to 1e-9 relative.

About 8 + 2*#classes assertions (ws-pipelined: about #classes*(1 + 3*#rasters) +
#stages + 8) and about 20 variables; K changes constants only
(``test_encoding_size_does_not_grow_with_k``). The encoding is written as SMT-LIB
text (the shape-independent skeleton -- variables, legality, tie rank -- is cached per
space) and parsed by Z3 in C++, which is much faster than building terms through the
Python API.

Solving: lexicographic OptSMT by linear search on one incremental ``SimpleSolver``
(``lex_minimize``): find a model, assert objective < its value, repeat until unsat;
keep objective == minimum and go to the next objective. The domain is finite, so each
minimum is attained and exact. This is about twice as fast here as ``z3.Optimize``
with lexicographic priorities, and gives the same optima. Z3 runs single-threaded.

Ties (predicted time and wait equal) are broken by a rank Z3 minimizes third:
smallest tile class (TM, TN, TK, CM, CN ascending), then the deepest pipeline (most
stages: the models do not distinguish B >= 2, and a deeper buffer absorbs load
jitter they do not see), then the kernel the model describes (non-persistent for
ws-stage, persistent for ws-persistent and ws-pipelined), then raster row < column <
grouped.

ws-pipelined adds, before that rank, a third objective: the padded volume
ceil(M/TM)TM * ceil(N/TN)TN * ceil(K/TK)TK (``padded_volume``; the model's
``padding_waste`` is 1 - MNK/volume): of configurations the model predicts alike, the one
that computes fewer padded rows and columns. And since its tables are floats from
evaluate(), times and waits within TIE_TOL (1e-6) of the optimum time count as ties
(``lex_minimize(tie_tol=...)``; exhaustive_exact does the same): a part per million is
far below what the model resolves, and without it a 1e-8 difference from where a
symmetric term binds (64x128 vs 128x64 for N = 192) decides instead of the tie-break.
The runner-up is the best configuration with a different tile class.
"""

from __future__ import annotations

import json
import math
import time
from dataclasses import dataclass, field
from fractions import Fraction

import numpy as np
import z3

from ..errors import UserError
from ..hardware import GPU
from ..params import ParamSet
from ..problem import DTYPE_BYTES, FAMILIES, RASTERS, SCALE_FACTORS, KernelConfig, Shape

MODELS = ("ws-stage", "ws-persistent", "ws-pipelined")
FIELDS = ("tile_m", "tile_n", "tile_k", "stages", "cluster_m", "cluster_n", "persistent", "raster")
_RASTER = {r: i for i, r in enumerate(RASTERS)}

z3.set_param("parallel.enable", False)  # one core


def Q(x) -> Fraction:
    """Exact rational of a parameter: the float's shortest decimal form."""
    if isinstance(x, Fraction):
        return x
    if isinstance(x, (int, np.integer)):
        return Fraction(int(x))
    return Fraction(repr(float(x)))


def _cdiv(a: int, b: int) -> int:
    return -(-a // b)


# ------------------------------------------------------------------ problem setup


@dataclass(frozen=True)
class Consts:
    """Exact per-run constants of one (shape, family, dtype, gpu, params)."""

    m: int
    n: int
    k: int
    sms: int
    in_b: Fraction
    out_b: Fraction
    sf: Fraction
    t_init: Fraction
    t_epi: Fraction
    load_bw: Fraction
    load_lat: Fraction
    math_fl: Fraction
    math_lat: Fraction
    l2: Fraction
    dram: Fraction


def _consts(shape: Shape, family: str, gpu: GPU, pset: ParamSet) -> Consts:
    dtype = shape.dtype
    p = pset.get(family, dtype)
    sf = SCALE_FACTORS.get(dtype)
    return Consts(
        m=shape.m, n=shape.n, k=shape.k, sms=int(gpu.sms),
        in_b=Q(DTYPE_BYTES[dtype]), out_b=Q(DTYPE_BYTES[dtype]),
        sf=Q(sf[1]) / sf[0] if sf else Fraction(0),
        t_init=Q(p.t_init_us), t_epi=Q(p.t_epilogue_us), load_bw=Q(p.load_bytes_per_us),
        load_lat=Q(p.load_latency_us), math_fl=Q(p.math_flops_per_us),
        math_lat=Q(p.math_latency_us), l2=Q(p.l2_hit_rate), dram=Q(gpu.dram_bytes_per_s) / 10**6,
    )


def family_space(family: str, gpu: GPU, dtype: str) -> list[KernelConfig]:
    """The legal space of ``family`` on ``gpu``, or a clear UserError if there is none."""
    from ..predictions import runs_on

    if family not in FAMILIES:
        raise UserError(f"family {family!r}: known families are {', '.join(FAMILIES)}")
    if not runs_on(family, gpu):
        from ..kernels.space import check_legal

        why = check_legal(KernelConfig(family=family, dtype=dtype), gpu) or "not supported"
        raise UserError(f"family {family} does not run on {gpu.slug} ({gpu.arch}): {why}")
    key = (family, dtype, json.dumps(gpu.to_dict(), sort_keys=True, default=str))
    if key not in _LEGAL:
        from ..kernels.space import legal_configs

        try:
            _LEGAL[key] = tuple(legal_configs(family, gpu, dtype))
        except UserError:
            raise
        except Exception as err:  # e.g. a dtype the family has no kernel for
            raise UserError(f"{family} on {gpu.slug}: no legal configurations for {dtype} ({err})") from None
    return list(_LEGAL[key])


_LEGAL: dict[tuple, tuple[KernelConfig, ...]] = {}


def _family_dtype(family: str, dtype: str) -> str:
    return "fp32" if family == "simt" else dtype


# ------------------------------------------------------------------ exact model (per class)


def class_key(c: KernelConfig) -> tuple[int, int, int, int, int]:
    return (c.tile_m, c.tile_n, c.tile_k, c.cluster_m, c.cluster_n)


def stage_class(C: Consts, tm: int, tn: int, tk: int) -> dict:
    """ws-stage constants of one tile (exact)."""
    tiles = _cdiv(C.m, tm) * _cdiv(C.n, tn)
    t_a = tm * tk * (C.in_b + C.sf) / C.load_bw + C.load_lat
    t_b = tn * tk * (C.in_b + C.sf) / C.load_bw + C.load_lat
    t_m = Fraction(2 * tm * tn * tk) / C.math_fl + C.math_lat
    return {"tiles": tiles, "W": _cdiv(tiles, C.sms), "S": _cdiv(C.k, tk), "ta": t_a, "tb": t_b,
            "L": t_a + t_b, "Tm": t_m}


def stage_exact(C: Consts, tm, tn, tk, b, wave_end: str = "ours") -> tuple[Fraction, Fraction]:
    """(predicted_us, total MATH wait) of ws-stage, exact, via the closed form."""
    d = stage_class(C, tm, tn, tk)
    L, Tm, S, W = d["L"], d["Tm"], d["S"], d["W"]
    P = max(L, Tm) if b >= 2 else L + Tm
    sm = L + (S - 1) * P
    wave = (sm + Tm if wave_end == "ours" else sm) + C.t_epi
    wait = L + (S - 1) * (P - Tm)
    return W * wave + C.t_init, W * wait


def persistent_class(C: Consts, tm: int, tn: int, tk: int, cm: int, cn: int) -> dict:
    """ws-persistent constants of one tile class (exact)."""
    cl = cm * cn
    tiles = _cdiv(C.m, tm * cm) * _cdiv(C.n, tn * cn) * cl
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


# ------------------------------------------------------------------ ws-pipelined (per shape, from evaluate())

PIPE_TOL = 1e-9  # relative deviation allowed between the decomposition and evaluate()
# ws-pipelined: times (and waits) within this share of the optimum time are ties. The tables
# are floats from evaluate(); configurations the model treats alike (e.g. 64x128 and 128x64
# when a symmetric term binds) can come out 1 ulp apart, and the tie-break must decide them.
TIE_TOL = Fraction(1, 10**6)


@dataclass
class PipeTable:
    """ws-pipelined for one shape over one space: what the encoding needs.

    ``symbolic``: the split (see ``pipelined_table``) reproduces the model's evaluate()
    on every configuration of the space (within PIPE_TOL relative); else ``tabled`` (each
    configuration's evaluate() time and wait enter as a table). Per class index i:
    ``cF``/``cL`` (the K-loop periods the full waves / the remainder wave contribute:
    F*(S-1) and [R>0]*(S-1)), ``per`` {raster: ((mF, lF), (mL, lL))} (the period of a
    full-wave / last-wave CTA is max(m, l/B)), ``A`` and ``D`` {(raster, persistent):
    value}. ``exact``: config -> (time, wait) as exact rationals, the values both Z3 and
    exhaustive_exact use (computed on first use: solve() needs them only when tabled).
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
            out, pk = {}, {}
            for j, c in enumerate(self.space):
                if not self.symbolic:
                    out[c] = (Q(self.pred[j]), Q(self.wait[j]))
                    continue
                i, r, p = self.index[class_key(c)], _RASTER[c.raster], bool(c.persistent)
                d = self.classes[i]
                key = (i, r, c.stages)
                if key not in pk:
                    (mf, lf), (ml, lm) = d["per"][r]
                    pk[key] = d["cF"] * _pk(mf, lf, c.stages) + d["cL"] * _pk(ml, lm, c.stages)
                t = d["A"][(r, p)] + pk[key]
                out[c] = (t, t - d["D"][(r, p)])
            self._exact = out
        return self._exact


_PIPE_INPUTS: dict = {}


def _pipe_inputs(shape: Shape, configs: list[KernelConfig], pset: ParamSet) -> dict[str, np.ndarray]:
    """ws-pipelined's evaluate() inputs for ``configs`` at ``shape``, built by the model's own
    ``prepare`` (parameters, Params.extra constants, raster codes); cached per (configs,
    params) with m, n, k swapped in per shape."""
    from ..models import ws_pipelined

    key = (tuple(configs), id(pset))
    hit = _PIPE_INPUTS.get(key)
    if hit is None or hit[0] is not pset:
        import polars as pl

        rows = [{"m": shape.m, "n": shape.n, "k": shape.k, **c.as_dict()} for c in configs]
        _, arr = ws_pipelined.prepare(pl.DataFrame(rows, infer_schema_length=None), pset)
        if len(_PIPE_INPUTS) > 64:
            _PIPE_INPUTS.clear()
        _PIPE_INPUTS[key] = hit = (pset, arr)
    arr = dict(hit[1])
    n = len(configs)
    for name, v in (("m", shape.m), ("n", shape.n), ("k", shape.k)):
        arr[name] = np.full(n, v, dtype=np.int64)
    return arr


def padded_volume(shape: Shape, c: KernelConfig) -> int:
    """The tiles' padded extent ceil(M/TM)*TM * ceil(N/TN)*TN * ceil(K/TK)*TK: the work the
    kernel does (wgmma on whole tiles), of which M*N*K is useful (ws-pipelined's
    ``padding_waste`` = 1 - M*N*K / this). ws-pipelined's tie-break after time and wait."""
    return (_cdiv(shape.m, c.tile_m) * c.tile_m * _cdiv(shape.n, c.tile_n) * c.tile_n
            * _cdiv(shape.k, c.tile_k) * c.tile_k)


def _pk(m, l, b):
    """The pipelined K loop's steady period max(m, l/B) (floats or Fractions); in the model
    m = max(Tc, x) and l = latency + x + Tc."""
    return max(m, l / b)


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
    from ..models import ws_pipelined as wp

    def ev(b):
        return wp.evaluate(**{**a, "stages": np.full_like(a["stages"], b)})

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
    from ..models import ws_pipelined as wp

    a = _pipe_inputs(shape, space, pset)
    out = wp.evaluate(**a)
    pred = out["predicted_us"]
    # MATH warps' waiting: the K loops' critical path (exposed fills + loops) minus pure multiply time
    wait = out["fill_us"] + out["mainloop_us"] - out["waves"] * out["k_stages"] * out["stage_math_us"]
    tiles, s = out["tiles"], out["k_stages"]
    full_waves, has_rem = tiles // a["sms"], (tiles % a["sms"]) > 0
    cF, cL = full_waves * (s - 1), has_rem * (s - 1)
    (mF, lF), (mL, lL) = _pipe_periods(a, out, cF, cL)
    b = a["stages"].astype(np.float64)
    A = pred - cF * np.maximum(mF, lF / b) - cL * np.maximum(mL, lL / b)
    D = pred - wait
    groups: dict = {}
    for j, c in enumerate(space):
        groups.setdefault((index[class_key(c)], _RASTER[c.raster], bool(c.persistent)), []).append(j)
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
    symbolic = dev <= PIPE_TOL and bool(np.all(lF >= mF) & np.all(lL >= mL)) and bool(np.all(mF > 0) & np.all(mL > 0))
    return PipeTable(symbolic=symbolic, classes=classes, space=list(space), index=index,
                     pred=pred, wait=wait, stages=tuple(sorted({c.stages for c in space})), max_dev=dev)


# ------------------------------------------------------------------ tie-break rank


def _rank_parts(space: list[KernelConfig], model: str):
    classes = sorted({class_key(c) for c in space})
    index = {k: i for i, k in enumerate(classes)}
    bmax = max(c.stages for c in space)
    pref = model != "ws-stage"  # the kernel the model describes: persistent for the persistent models
    return classes, index, bmax, pref


def tie_rank(c: KernelConfig, index: dict, bmax: int, pref: bool) -> int:
    pk = 0 if c.persistent == pref else 1
    return ((index[class_key(c)] * (bmax + 1) + (bmax - c.stages)) * 2 + pk) * 3 + _RASTER[c.raster]


def exact_objectives(C: Consts, c: KernelConfig, model: str, wave_end: str = "ours"):
    if model == "ws-stage":
        return stage_exact(C, c.tile_m, c.tile_n, c.tile_k, c.stages, wave_end)
    return persistent_exact(C, c.tile_m, c.tile_n, c.tile_k, c.cluster_m, c.cluster_n)


# ------------------------------------------------------------------ the encoding


def _num(x) -> str:
    """SMT-LIB real literal of an exact rational."""
    x = Q(x)
    if x.denominator == 1:
        return f"{x.numerator}.0" if x >= 0 else f"(- {-x.numerator}.0)"
    num = f"{abs(x.numerator)}.0"
    lit = f"(/ {num} {x.denominator}.0)"
    return lit if x >= 0 else f"(- {lit})"


def _z3max(a, b):
    return z3.If(a >= b, a, b)


def _max(a: str, b: str) -> str:
    return f"(ite (>= {a} {b}) {a} {b})"


_CHOICE_VARS = (("cls", "Int"), ("tm", "Int"), ("tn", "Int"), ("tk", "Int"), ("cm", "Int"), ("cn", "Int"),
                ("b", "Int"), ("pers", "Bool"), ("raster", "Int"), ("rank", "Int"),
                ("time", "Real"), ("wait", "Real"), ("tiles", "Int"))
_MODEL_VARS = {
    "ws-stage": (("W", "Int"), ("S", "Int"), ("L", "Real"), ("Tm", "Real"), ("P", "Real"),
                 ("Sm", "Real"), ("wave", "Real"), ("wait1", "Real")),
    "ws-persistent": (("fw", "Int"), ("rem", "Int"), ("first_dma", "Real"), ("mainloop", "Real"),
                      ("last_epi", "Real"), ("rem_wave", "Real"), ("math", "Real")),
    "ws-pipelined": (("mF", "Real"), ("lF", "Real"), ("BF", "Int"), ("mL", "Real"), ("lL", "Real"),
                     ("BL", "Int"), ("A", "Real"), ("D", "Real"), ("qF", "Real"), ("qL", "Real"),
                     ("PkF", "Real"), ("PkL", "Real"), ("vol", "Int")),
}
_FIELD_VAR = {"tile_m": "tm", "tile_n": "tn", "tile_k": "tk", "cluster_m": "cm", "cluster_n": "cn",
              "stages": "b", "persistent": "pers", "raster": "raster"}


@dataclass
class Skeleton:
    """The shape-independent part: choice variables, legality, tie rank (SMT-LIB lines)."""

    classes: list
    index: dict
    bmax: int
    pref: bool
    lines: list


_SKELETONS: dict[tuple, Skeleton] = {}


def skeleton(space: list[KernelConfig], model: str, smem_limit: int) -> Skeleton:
    key = (tuple(space), model, smem_limit)
    sk = _SKELETONS.get(key)
    if sk is not None:
        return sk
    from ..kernels.space import smem_bytes

    classes, index, bmax, pref = _rank_parts(space, model)
    lines = [f"(declare-const {n} {t})" for n, t in _CHOICE_VARS + _MODEL_VARS[model]]
    lines += [f"(assert (and (>= cls 0) (< cls {len(classes)}) (>= raster 0) (<= raster 2) (>= b 1)))"]
    by_class: dict[int, set] = {}
    first: dict[int, KernelConfig] = {}
    for c in space:
        i = index[class_key(c)]
        by_class.setdefault(i, set()).add((c.stages, c.persistent, _RASTER[c.raster]))
        first.setdefault(i, c)
    for i, (TM, TN, TK, CM, CN) in enumerate(classes):
        allowed = by_class[i]
        bs = sorted({a[0] for a in allowed})
        ps = sorted({a[1] for a in allowed})
        rs = sorted({a[2] for a in allowed})
        body = [f"(= tm {TM})", f"(= tn {TN})", f"(= tk {TK})", f"(= cm {CM})", f"(= cn {CN})"]
        if len(allowed) == len(bs) * len(ps) * len(rs) and bs == list(range(bs[0], bs[-1] + 1)):
            body += [f"(>= b {bs[0]})", f"(<= b {bs[-1]})"]
            if len(ps) == 1:
                body.append("pers" if ps[0] else "(not pers)")
            if len(rs) < 3:
                body.append("(or " + " ".join(f"(= raster {r})" for r in rs) + " false)")
        else:
            body.append("(or " + " ".join(
                f"(and (= b {st}) {'pers' if p else '(not pers)'} (= raster {r}))" for st, p, r in sorted(allowed))
                + ")")
        # shared-memory budget where smem_bytes is affine in the stages
        c0 = first[i]
        s1 = smem_bytes(c0.replace(stages=1))
        per = smem_bytes(c0.replace(stages=2)) - s1
        if all(smem_bytes(c0.replace(stages=st)) == s1 + (st - 1) * per for st in bs):
            body.append(f"(<= (+ {s1 - per} (* {per} b)) {smem_limit})")
        lines.append(f"(assert (=> (= cls {i}) (and {' '.join(body)})))")
    pk = f"(ite (= pers {'true' if pref else 'false'}) 0 1)"
    lines.append(f"(assert (= rank (+ (* (+ (* (+ (* cls {bmax + 1}) (- {bmax} b)) 2) {pk}) 3) raster)))")
    sk = Skeleton(classes, index, bmax, pref, lines)
    if len(_SKELETONS) > 256:
        _SKELETONS.clear()
    _SKELETONS[key] = sk
    return sk


def encode_text(C: Consts, sk: Skeleton, model: str, fix: dict | None = None,
                wave_end: str = "ours", tab: PipeTable | None = None) -> list[str]:
    """SMT-LIB lines of one shape: the skeleton, pinned fields, the model's tables.

    ws-pipelined needs ``tab`` (pipelined_table of the same shape and space)."""
    L = list(sk.lines)
    for name, value in (fix or {}).items():
        var = _FIELD_VAR[name]
        if name == "persistent":
            L.append(f"(assert {'pers' if value else '(not pers)'})")
        elif name == "raster":
            L.append(f"(assert (= raster {_RASTER[value]}))")
        else:
            L.append(f"(assert (= {var} {int(value)}))")
    epi, init = _num(C.t_epi), _num(C.t_init)
    if model == "ws-stage":
        Ws, Ss = set(), set()
        for i, (TM, TN, TK, CM, CN) in enumerate(sk.classes):
            d = stage_class(C, TM, TN, TK)
            Ws.add(d["W"])
            Ss.add(d["S"])
            L.append(f"(assert (=> (= cls {i}) (and (= tiles {d['tiles']}) (= L {_num(d['L'])}) "
                     f"(= Tm {_num(d['Tm'])}) (>= (* S {TK}) {C.k}) (< (* (- S 1) {TK}) {C.k}))))")
        L.append(f"(assert (and (>= (* W {C.sms}) tiles) (< (* (- W 1) {C.sms}) tiles)))")
        L.append(f"(assert (= P (ite (>= b 2) {_max('L', 'Tm')} (+ L Tm))))")
        for s in sorted(Ss):
            L.append(f"(assert (=> (= S {s}) (and (= Sm (+ L (* {s - 1}.0 P))) "
                     f"(= wait1 (+ L (* {s - 1}.0 (- P Tm)))))))")
        wend = "(+ Sm Tm)" if wave_end == "ours" else "Sm"
        L.append(f"(assert (= wave (+ {wend} {epi})))")
        for w in sorted(Ws):
            L.append(f"(assert (=> (= W {w}) (and (= time (+ (* {w}.0 wave) {init})) (= wait (* {w}.0 wait1)))))")
    elif model == "ws-persistent":
        L.append("(assert (and (>= fw 0) (>= rem 0)))")
        for i, key in enumerate(sk.classes):
            d = persistent_class(C, *key)
            F, ld, st, mth = d["F"], _num(d["ld"]), _num(d["st"]), _num(d["math"])
            r = "(to_real rem)"
            rw = _max(_max(f"(* {r} {ld})", "math"), f"(+ {epi} (* {r} {st}))")
            L.append(
                f"(assert (=> (= cls {i}) (and (= tiles {d['tiles']}) (= tiles (+ (* fw {F}) rem)) (< rem {F}) "
                f"(= math {mth}) "
                f"(= first_dma (* (to_real (ite (< tiles {F}) tiles {F})) {_num(d['fl'])})) "
                f"(= rem_wave (ite (> rem 0) {rw} 0.0)) "
                f"(= mainloop (+ (* (to_real fw) {_num(d['fullwave'])}) rem_wave)) "
                f"(= last_epi (+ {epi} (* (to_real (ite (> rem 0) rem {F})) {st}))) "
                f"(= wait (- (+ first_dma mainloop) (* (to_real (+ fw (ite (> rem 0) 1 0))) math))))))")
        L.append(f"(assert (= time (+ {init} first_dma mainloop last_epi)))")
    elif model == "ws-pipelined":
        if tab is None:
            raise ValueError("ws-pipelined: encode_text needs the shape's pipelined_table")
        L += _encode_pipelined(sk, tab)
    else:
        raise UserError(f"model {model!r}: the Z3 optimizer encodes {', '.join(MODELS)}")
    return L


def _encode_pipelined(sk: Skeleton, tab: PipeTable) -> list[str]:
    """ws-pipelined lines (symbolic): see the module doc. Tabled fallback: one line per
    configuration with its time and wait."""
    L = []
    if not tab.symbolic:
        for c, (t, w) in tab.exact.items():
            cond = (f"(= cls {sk.index[class_key(c)]}) (= raster {_RASTER[c.raster]}) "
                    f"{'pers' if c.persistent else '(not pers)'} (= b {c.stages})")
            L.append(f"(assert (=> (and {cond}) (and (= time {_num(t)}) (= wait {_num(w)}) "
                     f"(= vol {tab.classes[sk.index[class_key(c)]]['vol']}))))")
        return L
    for i, d in sorted(tab.classes.items()):
        terms = ["A"] + [f"(* {c}.0 {v})" for c, v in ((d["cF"], "PkF"), (d["cL"], "PkL")) if c]
        L.append(f"(assert (=> (= cls {i}) (and (= time (+ {' '.join(terms)} 0.0)) (= vol {d['vol']}))))")
        for r in sorted(d["per"]):
            (mF, lF, BF), (mL, lL, BL) = (_period_parts(m, l) for m, l in d["per"][r])
            L.append(f"(assert (=> (and (= cls {i}) (= raster {r})) (and (= mF {_num(mF)}) (= lF {_num(lF)}) "
                     f"(= BF {BF}) (= mL {_num(mL)}) (= lL {_num(lL)}) (= BL {BL}))))")
            for p in (False, True):
                if (r, p) not in d["A"]:
                    continue
                a = d["A"][(r, p)]
                # implied bound: the periods are at least m, so time >= A + cF*mF + cL*mL
                # (redundant, but it lets bound propagation prune a group; ~10x faster)
                floor = a + d["cF"] * mF + d["cL"] * mL
                L.append(f"(assert (=> (and (= cls {i}) (= raster {r}) {'pers' if p else '(not pers)'}) "
                         f"(and (= A {_num(a)}) (= D {_num(d['D'][(r, p)])}) (>= time {_num(floor)}))))")
    for v in tab.stages:
        L.append(f"(assert (=> (= b {v}) (and (= qF (/ lF {v}.0)) (= qL (/ lL {v}.0)))))")
    L.append("(assert (and (= PkF (ite (>= b BF) mF qF)) (= PkL (ite (>= b BL) mL qL))))")
    L.append("(assert (= wait (- time D)))")
    return L


def _period_parts(m: Fraction, l: Fraction) -> tuple[Fraction, Fraction, int]:
    """(m, l, B*) with max(m, l/B) = m if B >= B* else l/B, for integer B >= 1:
    B* = ceil(l/m) (m > 0, checked by pipelined_table)."""
    return m, l, max(1, math.ceil(l / m))


def encoding_size(lines: list[str]) -> tuple[int, int]:
    """(assertions, declared variables) of an encoding."""
    return sum(1 for x in lines if x.startswith("(assert")), sum(1 for x in lines if x.startswith("(declare-const"))


_Z = {}


def _zv(name: str):
    """The z3 constant of an encoding variable (same name and sort as declared)."""
    if not _Z:
        for model_vars in (_CHOICE_VARS,) + tuple(_MODEL_VARS.values()):
            for n, t in model_vars:
                _Z[n] = {"Int": z3.Int, "Real": z3.Real, "Bool": z3.Bool}[t](n)
    return _Z[name]


def lex_minimize(solver: z3.Solver, objectives: list, tie_tol: Fraction = Fraction(0),
                 n_tol: int = 0) -> z3.ModelRef | None:
    """Lexicographic minimization by OptSMT linear search: strengthen until unsat.

    For each objective in turn: take the current model's value v, assert obj < v,
    re-check; on unsat, v is the minimum (the domain is finite and every bound is
    attained), and obj == v is kept for the next objective. None if unsatisfiable.
    ``tie_tol``/``n_tol``: the first n_tol objectives keep obj <= v + tie_tol * |v0| (v0
    the first objective's minimum) instead: values that close count as ties.
    """
    if solver.check() != z3.sat:
        return None
    m = solver.model()
    scale = None
    for n, obj in enumerate(objectives):
        val = m.eval(obj, model_completion=True)
        solver.push()
        while True:
            solver.add(obj < val)
            if solver.check() != z3.sat:
                break
            m = solver.model()
            val = m.eval(obj, model_completion=True)
        solver.pop()
        if scale is None:
            scale = abs(_val(m, obj))
        if n < n_tol and tie_tol:
            solver.add(obj <= val + z3.RealVal(tie_tol * scale))
            if n + 1 < len(objectives):
                solver.check()  # the model for the next objective's start (sat: val itself is feasible)
                m = solver.model()
        else:
            solver.add(obj == val)
    return m


# ------------------------------------------------------------------ solutions


@dataclass
class RunnerUp:
    config: KernelConfig
    predicted_us: float
    math_wait_us: float


@dataclass
class Solution:
    shape: Shape
    family: str
    model: str
    config: KernelConfig
    predicted_us: float
    math_wait_us: float
    breakdown: dict
    runner_up: RunnerUp | None
    solve_s: float
    runner_up_s: float
    predicted_exact: Fraction = field(repr=False, default=Fraction(0))
    wait_exact: Fraction = field(repr=False, default=Fraction(0))
    n_configs: int = 0
    n_classes: int = 0
    n_assertions: int = 0
    n_vars: int = 0
    encoding: str = "symbolic"  # ws-pipelined: "tabled" where the decomposition did not reproduce evaluate()

    def to_dict(self) -> dict:
        c = self.config
        out = {"m": self.shape.m, "n": self.shape.n, "k": self.shape.k, "dtype": c.dtype,
               "family": self.family, "model": self.model,
               **{f: getattr(c, f) for f in FIELDS},
               "predicted_us": self.predicted_us, "math_wait_us": self.math_wait_us,
               "breakdown": self.breakdown, "solve_s": self.solve_s,
               "n_configs": self.n_configs, "n_classes": self.n_classes,
               "n_assertions": self.n_assertions, "n_vars": self.n_vars,
               "encoding": self.encoding}
        r = self.runner_up
        out["runner_up"] = None if r is None else {
            **{f: getattr(r.config, f) for f in FIELDS}, "predicted_us": r.predicted_us,
            "math_wait_us": r.math_wait_us}
        return out


def _val(model, e) -> Fraction:
    x = model.eval(e, model_completion=True)
    if z3.is_int_value(x):
        return Fraction(x.as_long())
    if z3.is_true(x):
        return Fraction(1)
    if z3.is_false(x):
        return Fraction(0)
    return Fraction(x.as_fraction())


def _decode(zm, family: str, dtype: str) -> KernelConfig:
    def iv(n):
        return zm.eval(_zv(n), model_completion=True).as_long()

    return KernelConfig(
        family=family, dtype=dtype, tile_m=iv("tm"), tile_n=iv("tn"), tile_k=iv("tk"), stages=iv("b"),
        cluster_m=iv("cm"), cluster_n=iv("cn"),
        persistent=bool(z3.is_true(zm.eval(_zv("pers"), model_completion=True))),
        raster=RASTERS[iv("raster")],
    )


def _explain_unsat(family, dtype, gpu, fix, space) -> str:
    from ..kernels.space import check_legal

    if fix:
        try:
            cfg = KernelConfig(family=family, dtype=dtype).replace(**fix)
            if not any(f in fix for f in ("stages",)):
                cfg = cfg.replace(stages=2 if family != "simt" else 1)
            why = check_legal(cfg, gpu)
        except UserError as err:
            why = str(err)
        spec = ", ".join(f"{k}={v}" for k, v in fix.items())
        return (f"no legal {family} configuration on {gpu.slug} with {spec}"
                + (f": {why}" if why else " (not in the searched space)"))
    try:
        why = check_legal(KernelConfig(family=family, dtype=dtype), gpu)
    except UserError as err:
        why = str(err)
    return f"no legal {family} configuration on {gpu.slug} for {dtype}" + (f": {why}" if why else "")


def breakdown(config: KernelConfig, shape: Shape, pset: ParamSet, model: str, wave_end: str = "ours") -> dict:
    """The model's own float ``evaluate`` on one configuration, as plain numbers."""
    out = evaluate_space(shape, [config], pset, model, wave_end)
    lim = out.pop("limiter")
    from ..models import get_model

    res = {k: (int(a[0]) if np.issubdtype(a.dtype, np.integer) else float(a[0])) for k, a in out.items()}
    res["limiter"] = get_model(model).LIMITERS[int(lim[0])]
    return res


def evaluate_space(shape: Shape, configs: list[KernelConfig], pset: ParamSet, model: str,
                   wave_end: str = "ours") -> dict[str, np.ndarray]:
    """Vectorized float evaluate() of ``model`` over configs of one shape (no polars)."""
    from ..models import get_model

    mod = get_model(model)
    if model == "ws-pipelined":
        return mod.evaluate(**_pipe_inputs(shape, configs, pset))
    gpu = pset.gpu
    dtype = configs[0].dtype
    family = configs[0].family
    p = pset.get(family, dtype)
    sf = SCALE_FACTORS.get(dtype)
    cols = {f: np.array([getattr(c, f) for c in configs], dtype=np.int64)
            for f in ("tile_m", "tile_n", "tile_k", "stages", "cluster_m", "cluster_n")}
    n = len(configs)
    full = {
        **cols, "m": np.full(n, shape.m, np.int64), "n": np.full(n, shape.n, np.int64),
        "k": np.full(n, shape.k, np.int64), "in_bytes": float(DTYPE_BYTES[dtype]),
        "out_bytes": float(DTYPE_BYTES[dtype]), "sf_bytes_per_elem": sf[1] / sf[0] if sf else 0.0,
        "sms": np.int64(gpu.sms), "dram_bytes_per_us": gpu.dram_bytes_per_s / 1e6,
        "peak_flops_per_us": gpu.peak_flops(dtype, family != "simt") / 1e6,
        **{name: float(getattr(p, name)) for name in ("t_init_us", "t_epilogue_us", "load_bytes_per_us",
                                                    "load_latency_us", "math_flops_per_us",
                                                    "math_latency_us", "l2_hit_rate")},
    }
    kw = {name: full[name] for name in mod.INPUTS}
    if model == "ws-stage":
        kw["wave_end"] = wave_end
    return mod.evaluate(**kw)


# ------------------------------------------------------------------ solve


def _shape_for(shape, family: str, dtype: str | None) -> Shape:
    if isinstance(shape, Shape):
        m, n, k, d = shape.m, shape.n, shape.k, shape.dtype
    else:
        m, n, k = shape
        d = "bf16"
    d = dtype or d
    return Shape(int(m), int(n), int(k), _family_dtype(family, d))


def solve(shape, family: str, gpu: GPU, params: ParamSet, model: str = "ws-stage",
          space: list[KernelConfig] | None = None, fix: dict | None = None,
          runner_up: bool = True, wave_end: str = "ours", dtype: str | None = None) -> Solution:
    """The Z3-optimal configuration of ``family`` for ``shape`` under ``model``.

    ``shape``: a Shape (its dtype is the input dtype; simt always uses fp32) or (m, n, k).
    ``space``: the configurations to choose from (default: the family's legal space on
    ``gpu``). ``fix``: fields to pin, e.g. {"tile_m": 256, "stages": 4}; an impossible
    request raises UserError naming the reason.
    """
    if model not in MODELS:
        raise UserError(f"model {model!r}: the Z3 optimizer encodes {', '.join(MODELS)}")
    if family not in FAMILIES:
        raise UserError(f"family {family!r}: known families are {', '.join(FAMILIES)}")
    shp = _shape_for(shape, family, dtype)
    if fix:
        bad = [k for k in fix if k not in FIELDS]
        if bad:
            raise UserError(f"cannot fix {', '.join(bad)}; fields: {', '.join(FIELDS)}")
        if "raster" in fix and fix["raster"] not in _RASTER:
            raise UserError(f"raster {fix['raster']!r}: known orders are {', '.join(RASTERS)}")
    if space is None:
        space = family_space(family, gpu, shp.dtype)
    else:
        from ..predictions import runs_on

        if not runs_on(family, gpu):
            raise UserError(f"family {family} does not run on {gpu.slug} ({gpu.arch})")
        space = [c for c in space if c.family == family and c.dtype == shp.dtype]
    if not space:
        raise UserError(_explain_unsat(family, shp.dtype, gpu, fix, space))
    t0 = time.perf_counter()
    C = _consts(shp, family, gpu, params)
    sk = skeleton(space, model, gpu.smem_per_block)
    tab = pipelined_table(shp, space, params, sk.index) if model == "ws-pipelined" else None
    lines = encode_text(C, sk, model, fix, wave_end, tab)
    solver = z3.SimpleSolver()
    solver.from_string("\n".join(lines))
    objectives = [_zv("time"), _zv("wait")] + ([_zv("vol")] if model == "ws-pipelined" else []) + [_zv("rank")]
    tol = dict(tie_tol=TIE_TOL, n_tol=2) if model == "ws-pipelined" else {}
    solver.push()
    zm = lex_minimize(solver, objectives, **tol)
    solver.pop()
    if zm is None:
        raise UserError(_explain_unsat(family, shp.dtype, gpu, fix, space))
    cfg = _decode(zm, family, shp.dtype)
    t_ex, w_ex = _val(zm, _zv("time")), _val(zm, _zv("wait"))
    solve_s = time.perf_counter() - t0
    ru, ru_s = None, 0.0
    if runner_up and len(sk.classes) > 1:
        t1 = time.perf_counter()
        solver.push()
        solver.add(_zv("cls") != sk.index[class_key(cfg)])
        zr = lex_minimize(solver, objectives, **tol)
        if zr is not None:
            ru = RunnerUp(_decode(zr, family, shp.dtype), float(_val(zr, _zv("time"))),
                          float(_val(zr, _zv("wait"))))
        solver.pop()
        ru_s = time.perf_counter() - t1
    bd = breakdown(cfg, shp, params, model, wave_end)
    bd["math_wait_us"] = float(w_ex)
    n_assert, n_vars = encoding_size(lines)
    return Solution(shape=shp, family=family, model=model, config=cfg, predicted_us=float(t_ex),
                    math_wait_us=float(w_ex), breakdown=bd, runner_up=ru, solve_s=solve_s,
                    runner_up_s=ru_s, predicted_exact=t_ex, wait_exact=w_ex, n_configs=len(space),
                    n_classes=len(sk.classes), n_assertions=n_assert, n_vars=n_vars,
                    encoding="tabled" if tab is not None and not tab.symbolic else "symbolic")


# ------------------------------------------------------------------ exhaustive references


def exhaustive_exact(shape, family: str, gpu: GPU, params: ParamSet, model: str = "ws-stage",
                     space: list[KernelConfig] | None = None, wave_end: str = "ours",
                     dtype: str | None = None, fix: dict | None = None):
    """Enumerate the space with exact rationals; the lexicographic (time, wait, rank) minimum.

    ``fix``: pinned fields, as in solve() (the model's tables are still those of the whole
    space, as solve() builds them). Returns (config, time, wait) with Fractions.
    """
    shp = _shape_for(shape, family, dtype)
    if space is None:
        space = family_space(family, gpu, shp.dtype)
    space = [c for c in space if c.family == family and c.dtype == shp.dtype]
    C = _consts(shp, family, gpu, params)
    _, index, bmax, pref = _rank_parts(space, model)
    tab = pipelined_table(shp, space, params, index) if model == "ws-pipelined" else None
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
        cands.append((t, w, vol, tie_rank(c, index, bmax, pref), c))
    if model == "ws-pipelined":  # near-ties within TIE_TOL of the optimum time, as solve()
        t0 = min(x[0] for x in cands)
        cands = [x for x in cands if x[0] <= t0 + TIE_TOL * abs(t0)]
        w0 = min(x[1] for x in cands)
        cands = [(Fraction(0), Fraction(0), *x[2:], x) for x in cands if x[1] <= w0 + TIE_TOL * abs(t0)]
        best = min(cands, key=lambda x: x[:4])[-1]
    else:
        best = min(cands, key=lambda x: x[:4])
    return best[4], best[0], best[1]


def exhaustive_float(shape, family: str, gpu: GPU, params: ParamSet, model: str = "ws-stage",
                     space: list[KernelConfig] | None = None, wave_end: str = "ours",
                     dtype: str | None = None, rel_tol: float = 1e-9):
    """The models' float evaluate() over the whole space: (min time, optima, wait per config).

    Returns (best_time, [configs within rel_tol of it], predicted array, wait array, space).
    """
    shp = _shape_for(shape, family, dtype)
    if space is None:
        space = family_space(family, gpu, shp.dtype)
    space = [c for c in space if c.family == family and c.dtype == shp.dtype]
    out = evaluate_space(shp, space, params, model, wave_end)
    pred = out["predicted_us"]
    if model == "ws-stage":
        wait = out["total_math_wait_us"]
    elif model == "ws-pipelined":
        wait = out["fill_us"] + out["mainloop_us"] - out["waves"] * out["k_stages"] * out["stage_math_us"]
    else:
        waves = out["waves"]
        wait = out["first_dma_us"] + out["mainloop_us"] - waves * out["wave_math_us"]
    best = float(pred.min())
    idx = np.nonzero(pred <= best * (1 + rel_tol))[0]
    return best, [space[i] for i in idx], pred, wait, space


# ------------------------------------------------------------------ the closed form, proved


def prove_closed_form() -> dict:
    """Prove with Z3 that the ws-stage closed form equals the stage recurrence, all S, B.

    Strong induction on the stage index i. Invariant Inv(j): Sm(j) = L + (j-1)P,
    D(j) := Sb(j) + T_LOAD_B <= Sm(j), with equality when L >= T_MATH and B >= 2, and
    the running wait Q(j) = sum_{i<=j} Wait(i) = L + (j-1)(P - T_MATH).
    Base: Inv(1) from Sa(1) = 0. Step: for symbolic real T_LOAD_A, T_LOAD_B, T_MATH >= 0
    and u = (i-2)P >= 0, t = (i-2)T_MATH, the recurrence's step from Inv(i-1) (and
    Inv(i-B), where Sm(i-B) = L + u - w with w = (B-1)P; B = 1: w = 0; B >= 2: any
    w >= P, covering every B >= 2 at once; or Sm(i-B) absent when i <= B) implies
    Inv(i). All linear real arithmetic: Z3 proves validity by refuting the negation.
    Returns {case: "proved"}; raises AssertionError with a counterexample otherwise.
    """
    la, lb, tm, u, t, w = z3.Reals("la lb tm u t w")
    L = la + lb
    results = {}

    def P_of(deep):
        return _z3max(L, tm) if deep else L + tm

    def check(name, hyp, goal):
        s = z3.Solver()
        s.add(hyp, z3.Not(goal))
        r = s.check()
        if r != z3.unsat:
            raise AssertionError(f"closed form: {name} not proved ({r}): {s.model() if r == z3.sat else ''}")
        results[name] = "proved"

    pos = z3.And(la >= 0, lb >= 0, tm >= 0)
    for deep in (False, True):
        P = P_of(deep)
        # base case i = 1
        sa1 = z3.RealVal(0)
        sb1 = sa1 + la  # Sm(1-B) absent
        sm1 = sb1 + lb
        d1 = sb1 + lb
        q1 = sb1 + lb
        inv1 = z3.And(sm1 == L, d1 <= sm1, z3.Implies(z3.And(L >= tm, deep), d1 == sm1), q1 == L)
        check(f"base B{'>=2' if deep else '=1'}", pos, inv1)
        # step i >= 2 from Inv(i-1)
        for absent in ((False, True) if deep else (False,)):
            sm_prev = L + u
            sb_prev, q_prev = z3.Reals("sb_prev q_prev")
            d_prev = sb_prev + lb
            hyp = [pos, u >= 0, t >= 0, d_prev <= sm_prev, q_prev == L + u - t]
            # u = (i-2)P and t = (i-2)Tm with the same i-2 >= 0
            hyp.append(z3.Implies(tm == 0, t == 0))
            if deep:
                hyp.append(z3.Implies(L >= tm, d_prev == sm_prev))
            if absent:
                free = None
            else:
                if deep:
                    hyp += [w >= P, u >= w - P]  # i - B >= 1
                else:
                    hyp.append(w == 0)
                free = L + u - w + tm  # Sm(i-B) + T_MATH
            a = sb_prev + lb if free is None else _z3max(sb_prev + lb, free)
            bb = a + la if free is None else _z3max(a + la, free)
            sm = _z3max(sm_prev + tm, bb + lb)
            d = bb + lb
            q = q_prev + sm - (sm_prev + tm)
            goal = z3.And(sm == L + u + P, d <= sm, q == L + (u + P) - (t + tm))
            if deep:
                goal = z3.And(goal, z3.Implies(L >= tm, d == sm))
            check(f"step B{'>=2' if deep else '=1'}{' i<=B' if absent else ''}", z3.And(hyp), goal)
    return results
