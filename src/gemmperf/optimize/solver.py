"""Solving: the Z3-optimal configuration of one shape, its runner-up, and the Solution.

``solve(shape, family, gpu, params, model)`` asks Z3 for the legal configuration of a
kernel family that minimizes, lexicographically,

1. the predicted time (``ws-stage``, ``ws-persistent`` or ``ws-pipelined``),
2. the MATH warps' total waiting time (the paper's section 3.2 second objective),
3. (ws-pipelined only) the padded volume ceil(M/TM)TM * ceil(N/TN)TN * ceil(K/TK)TK
   (``padded_volume``): of configurations the model predicts alike, the one that
   computes fewer padded rows and columns,
4. a deterministic tie-break rank: smallest tile class (TM, TN, TK, CM, CN ascending),
   then the deepest pipeline (most stages: the models do not distinguish B >= 2, and a
   deeper buffer absorbs load jitter they do not see), then the kernel the model
   describes (non-persistent for ws-stage, persistent for ws-persistent and
   ws-pipelined), then the variant (``space.variant_code``: K not shared among CTAs
   before the K splits (ascending) before stream-K, then raster row < column < grouped,
   the smaller raster group, the direct epilogue, the cooperative schedule),

and returns the optimum, its breakdown (the model's own ``evaluate`` on that
configuration), the runner-up tiling (the best configuration with a different tile class)
and the solve time.

ws-pipelined's tables are floats from evaluate(), so times and waits within TIE_TOL (1e-6)
of the optimum time count as ties (``lex_minimize(tie_tol=...)``; the exhaustive reference
does the same): a part per million is far below what the model resolves, and without it a
1e-8 difference from where a symmetric term binds (64x128 vs 128x64 for N = 192) decides
instead of the tie-break.

Solving is lexicographic OptSMT by linear search on one incremental ``SimpleSolver``
(``lex_minimize``): find a model, assert objective < its value, repeat until unsat; keep
objective == minimum and go to the next objective. The domain is finite, so each minimum
is attained and exact. This is about twice as fast here as ``z3.Optimize`` with
lexicographic priorities, and gives the same optima. Z3 runs single-threaded.

By default (``prune=True``) the configurations whose closed-form time rules them out as
optimum and runner-up are left out of the encoding, and the search starts at the
exhaustive choice among the rest: one unsat check proves that no kept configuration is
lexicographically better than the claimed optimum, nor, outside its tile class, than the
claimed runner-up, and one sat check each returns them (``_certify_pair``; ``_certify``
for one claim; where a claim fails, the linear search above runs). prune.py argues why the answer is that of the whole space;
``prune=False`` is the plain path (every configuration, the linear search), kept for
comparison (``benchmarks/optimize_speed.py``). The pruned path asserts each shape's lines
in a scope of one process-wide solver whose variables are declared once.
"""

from __future__ import annotations

import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from fractions import Fraction

import z3

from ..errors import UserError
from ..hardware import GPU
from ..params import ParamSet
from ..problem import EPILOGUES, RASTERS, SCHEDULES, KernelConfig, Shape
from .encode import ALL_VARS, CHOICE_VARS, MODEL_VARS, encode_text, encoding_size, skeleton
from .evaluate import breakdown, breakdown_of
from .pipelined import TIE_TOL, PipeTable, pipelined_table
from .prune import Pruned, prune_exact, prune_pipelined
from .space import (DEFAULT_MODEL, FIELDS, GROUP_SIZES, SPLIT_SIZES, RankParts, check_family, check_model, class_key,
                    consts, explain_unsat, search_space, shape_for, variant_fields)

z3.set_param("parallel.enable", False)  # one core

_Z: dict = {}


def _zv(name: str):
    """The z3 constant of an encoding variable (same name and sort as declared)."""
    if not _Z:
        for model_vars in (CHOICE_VARS,) + tuple(MODEL_VARS.values()):
            for n, t in model_vars:
                _Z[n] = {"Int": z3.Int, "Real": z3.Real, "Bool": z3.Bool}[t](n)
    return _Z[name]


def _val(model, e) -> Fraction:
    x = model.eval(e, model_completion=True)
    if z3.is_int_value(x):
        return Fraction(x.as_long())
    if z3.is_true(x):
        return Fraction(1)
    if z3.is_false(x):
        return Fraction(0)
    return Fraction(x.as_fraction())


def _frac(x) -> Fraction:
    """The Fraction of a z3 numeral."""
    return Fraction(x.as_long()) if z3.is_int_value(x) else Fraction(x.as_fraction())


def _const(obj, v: Fraction):
    """The z3 numeral v of obj's sort."""
    v = Fraction(v)
    return z3.IntVal(v.numerator) if obj.is_int() else z3.RealVal(str(v))


def _claim(objectives: list, hints: list, tie_tol: Fraction, n_tol: int) -> tuple[list, list, list]:
    """(values, hold, better) of a claim that ``hints`` are the lexicographic minima: hold
    keeps each objective at its minimum (within the tie tolerance for the first n_tol),
    better[n] is a configuration beating the claim at objective n."""
    vals = [_const(o, h) for o, h in zip(objectives, hints)]
    slack = z3.RealVal(str(tie_tol * abs(Fraction(hints[0]))))
    hold = [o <= v + slack if n < n_tol and tie_tol else o == v for n, (o, v) in enumerate(zip(objectives, vals))]
    return vals, hold, [z3.And(*hold[:n], o < v) for n, (o, v) in enumerate(zip(objectives, vals))]


def _check(solver: z3.Solver, *facts) -> z3.ModelRef | bool:
    """check() with ``facts`` in a scope: the model if sat, else False."""
    solver.push()
    solver.add(*facts)
    m = solver.model() if solver.check() == z3.sat else False
    solver.pop()
    return m


def _witness(solver, objectives: list, hints: list, claim: tuple, tie_tol, n_tol: int, extra: tuple = ()):
    """The configuration holding every objective at its claimed minimum, and, where the
    tolerance lets its time or wait differ from the claimed minimum, a check that the
    minimum is attained. The model, or None."""
    vals, hold, _ = claim
    m = _check(solver, *extra, *hold)
    for n in range(n_tol if tie_tol and m else 0):
        if _frac(m.eval(objectives[n], model_completion=True)) != Fraction(hints[n]):
            if not _check(solver, *extra, *hold[:n], objectives[n] == vals[n]):
                return None
    return m or None


def _certify(solver: z3.Solver, objectives: list, hints: list, tie_tol: Fraction, n_tol: int):
    """lex_minimize's answer where its minima are claimed by ``hints``: one unsat check that
    no configuration is lexicographically better (with the tie tolerance), then the
    witness (``_witness``). The model, or None where the claim fails."""
    claim = _claim(objectives, hints, tie_tol, n_tol)
    if _check(solver, z3.Or(*claim[2])) is not False:
        return None
    return _witness(solver, objectives, hints, claim, tie_tol, n_tol)


def _certify_pair(solver: z3.Solver, objectives: list, tol: dict, pruned: Pruned, cls: int):
    """The optimum and the runner-up (best outside class ``cls``) claimed by ``pruned``,
    with one unsat check for both claims: (model, runner-up model), or None where a
    claim fails or there is no runner-up claim."""
    hints, hints_ru = pruned.hints(), pruned.hints(other_than=cls)
    if hints_ru is None:
        return None
    tie_tol, n_tol = tol.get("tie_tol", Fraction(0)), tol.get("n_tol", 0)
    claim, claim_ru = _claim(objectives, hints, tie_tol, n_tol), _claim(objectives, hints_ru, tie_tol, n_tol)
    other = _zv("cls") != cls
    if _check(solver, z3.Or(*claim[2], z3.And(other, z3.Or(*claim_ru[2])))) is not False:
        return None
    m = _witness(solver, objectives, hints, claim, tie_tol, n_tol)
    r = _witness(solver, objectives, hints_ru, claim_ru, tie_tol, n_tol, (other,)) if m is not None else None
    return None if r is None or m.eval(_zv("cls"), model_completion=True).as_long() != cls else (m, r)


def lex_minimize(solver: z3.Solver, objectives: list, tie_tol: Fraction = Fraction(0),
                 n_tol: int = 0, hints: list | None = None) -> z3.ModelRef | None:
    """Lexicographic minimization by OptSMT linear search: strengthen until unsat.

    For each objective in turn: take the current model's value v, assert obj < v,
    re-check; on unsat, v is the minimum (the domain is finite and every bound is
    attained), and obj == v is kept for the next objective. None if unsatisfiable.
    ``tie_tol``/``n_tol``: the first n_tol objectives keep obj <= v + tie_tol * |v0| (v0
    the first objective's minimum) instead: values that close count as ties.
    ``hints``: the minima, if known (prune.py): Z3 proves them (``_certify``); where they
    are not the minima, the linear search runs as without them.
    """
    if hints is not None:
        m = _certify(solver, objectives, hints, tie_tol, n_tol)
        if m is not None:
            return m
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


def _decode(zm, family: str, dtype: str) -> KernelConfig:
    def iv(n):
        return zm.eval(_zv(n), model_completion=True).as_long()

    return KernelConfig(
        family=family, dtype=dtype, tile_m=iv("tm"), tile_n=iv("tn"), tile_k=iv("tk"), stages=iv("b"),
        cluster_m=iv("cm"), cluster_n=iv("cn"),
        persistent=bool(z3.is_true(zm.eval(_zv("pers"), model_completion=True))),
        **variant_fields(iv("raster")),
    )


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


# ------------------------------------------------------------------ solve


_BOOL_FIELDS = ("persistent", "stream_k")


def _check_fix(fix: dict | None) -> None:
    if not fix:
        return
    bad = [k for k in fix if k not in FIELDS]
    if bad:
        raise UserError(f"cannot fix {', '.join(bad)}; fields: {', '.join(FIELDS)}")
    known = {"raster": RASTERS, "epilogue": EPILOGUES, "schedule": SCHEDULES, "group_m": GROUP_SIZES,
             "split_k": SPLIT_SIZES, "stream_k": (False, True)}
    for name, values in known.items():
        value = fix.get(name)
        if name in fix and (value not in values or isinstance(value, bool) != (name in _BOOL_FIELDS)):
            raise UserError(f"{name} {value!r}: known values are {', '.join(map(str, values))}")


def _runner_up(solver, objectives: list, tol: dict, cls: int, family: str, dtype: str,
               pruned: Pruned | None = None) -> tuple[RunnerUp | None, float]:
    """The best configuration of another tile class than ``cls``, and its solve time."""
    t1 = time.perf_counter()
    ru = None
    solver.push()
    solver.add(_zv("cls") != cls)
    zr = lex_minimize(solver, objectives, **tol, hints=pruned.hints(other_than=cls) if pruned else None)
    if zr is not None:
        ru = RunnerUp(_decode(zr, family, dtype), float(_val(zr, _zv("time"))), float(_val(zr, _zv("wait"))))
    solver.pop()
    return ru, time.perf_counter() - t1


_SHARED: list = []


@contextmanager
def _solver(lines: list[str], shared: bool):
    """A solver holding ``lines``. ``shared``: one solver for the process with every variable
    declared once, the lines asserted in a scope popped at the end (creating, declaring
    and deleting a solver per shape costs about a millisecond); else a fresh solver."""
    if not shared:
        solver = z3.SimpleSolver()
        solver.from_string("\n".join(lines))
        yield solver
        return
    if not _SHARED:
        solver = z3.SimpleSolver()
        solver.from_string("\n".join(f"(declare-const {n} {t})" for n, t in ALL_VARS))
        _SHARED.append(solver)
    solver = _SHARED[0]
    solver.push()
    try:
        solver.from_string("\n".join(x for x in lines if not x.startswith("(declare-const")))
        yield solver
    finally:
        solver.pop()


def _prune(C, space: list, sk, model: str, tab, fix: dict | None, runner_up: bool, wave_end: str) -> Pruned | None:
    rp = RankParts(classes=sk.classes, index=sk.index, bmax=sk.bmax, pref=sk.pref)
    if tab is not None:
        return prune_pipelined(tab, rp, fix, runner_up)
    return prune_exact(C, space, rp, model, fix, runner_up, wave_end)


def solve(shape, family: str, gpu: GPU, params: ParamSet, model: str = DEFAULT_MODEL,
          space: list[KernelConfig] | None = None, fix: dict | None = None,
          runner_up: bool = True, wave_end: str = "ours", dtype: str | None = None,
          prune: bool = True, table: PipeTable | None = None) -> Solution:
    """The Z3-optimal configuration of ``family`` for ``shape`` under ``model``.

    ``shape``: a Shape (its dtype is the input dtype; simt always uses fp32) or (m, n, k).
    ``space``: the configurations to choose from (default: the family's legal space on
    ``gpu``). ``fix``: fields to pin, e.g. {"tile_m": 256, "stages": 4}; an impossible
    request raises UserError naming the reason. ``prune``: leave out of the encoding the
    tile classes a proven bound rules out and start Z3 at the exhaustive choice among the
    rest (prune.py; same answer); False: every class, the plain linear search.
    ``table``: ws-pipelined's table of this shape and space if already built
    (``pipelined_tables`` builds a testlist's at once).
    """
    check_model(model)
    check_family(family)
    shp = shape_for(shape, family, dtype)
    _check_fix(fix)
    space = search_space(shp, family, gpu, space)
    if not space:
        raise UserError(explain_unsat(family, shp.dtype, gpu, fix))
    t0 = time.perf_counter()
    sk = skeleton(space, model, gpu.smem_per_block)
    C = consts(shp, family, gpu, params)
    tab = None
    if model == "ws-pipelined":
        ok = table is not None and table.shape == shp and table.space == space and table.index == sk.index
        tab = table if ok else pipelined_table(shp, space, params, sk.index)
    pr = _prune(C, space, sk, model, tab, fix, runner_up, wave_end) if prune else None
    lines = encode_text(C, sk, model, fix, wave_end, tab, keep=pr.keep if pr else None)
    objectives = [_zv("time"), _zv("wait")] + ([_zv("vol")] if model == "ws-pipelined" else []) + [_zv("rank")]
    tol = dict(tie_tol=TIE_TOL, n_tol=2) if model == "ws-pipelined" else {}
    with _solver(lines, shared=prune) as solver:
        both = None
        if pr is not None and runner_up and len(sk.classes) > 1:
            both = _certify_pair(solver, objectives, tol, pr, pr.best_class())
        if both is None:
            solver.push()
            zm = lex_minimize(solver, objectives, **tol, hints=pr.hints() if pr else None)
            solver.pop()
        else:
            zm = both[0]
        if zm is None:
            raise UserError(explain_unsat(family, shp.dtype, gpu, fix))
        cfg = _decode(zm, family, shp.dtype)
        t_ex, w_ex = _val(zm, _zv("time")), _val(zm, _zv("wait"))
        solve_s = time.perf_counter() - t0
        ru, ru_s = None, 0.0
        if both is not None:
            zr = both[1]
            ru = RunnerUp(_decode(zr, family, shp.dtype), float(_val(zr, _zv("time"))), float(_val(zr, _zv("wait"))))
        elif runner_up and len(sk.classes) > 1:
            ru, ru_s = _runner_up(solver, objectives, tol, sk.index[class_key(cfg)], family, shp.dtype, pr)
    bd = breakdown_of(tab.out, tab.facts.position[cfg], model) if tab is not None else \
        breakdown(cfg, shp, params, model, wave_end)
    bd["math_wait_us"] = float(w_ex)
    n_assert, n_vars = encoding_size(lines)
    return Solution(shape=shp, family=family, model=model, config=cfg, predicted_us=float(t_ex),
                    math_wait_us=float(w_ex), breakdown=bd, runner_up=ru, solve_s=solve_s,
                    runner_up_s=ru_s, predicted_exact=t_ex, wait_exact=w_ex, n_configs=len(space),
                    n_classes=len(sk.classes), n_assertions=n_assert, n_vars=n_vars,
                    encoding="tabled" if tab is not None and not tab.symbolic else "symbolic")
