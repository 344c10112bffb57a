"""The Z3 encoding of one shape, as SMT-LIB text (parsed by Z3 in C++, much faster than
building terms through the Python API). Its size does not depend on K.

The space is grouped into tile classes c = (TM, TN, TK, CM, CN), numbered in ascending
order. Variables:

- ``cls`` (Int, 0 <= cls < #classes) and the fields tm, tn, tk, cm, cn (Int) with
  ``cls == c -> tm == TM_c & ...``; ``b`` (stages, Int), ``pers`` (Bool), ``raster``
  (Int: the variant, ``space.variant_code``: raster, raster group, epilogue, schedule,
  K split or stream-K).
- Legality per class (the shape-independent ``skeleton``, cached per space): the
  (stages, persistent, raster) choices the space allows, as an interval of stages times
  allowed flags when it is a product, else as an explicit disjunction; plus the
  shared-memory budget ``smem_c(b) = base_c + per_c*b <= smem_per_block`` where
  the family's smem_bytes is affine in the stages (the epilogue's and barriers' bytes
  are in base_c/per_c). Register and architecture rules remove whole tiles (they are not
  in the space).
- ws-stage: ``tiles`` (Int) from a per-class table ceil(M/TM)*ceil(N/TN); waves W by
  integer division ``W*SMs >= tiles > (W-1)*SMs``; K stages S by ``S*TK >= K >
  (S-1)*TK`` (per class, TK constant, so linear). L = T_LOAD_A + T_LOAD_B and T_MATH
  (Real) per class. The stage recurrence is replaced by its closed form
  ``Sm(S) = L + (S-1)*P, P = If(b >= 2, max(L, T_MATH), L + T_MATH)`` (proved equal to
  the recurrence for every S and B in proof.py). The products (S-1)*P and W*wave are
  linearized over the finitely many values S and W take (one per TK, at most one per
  class): ``S == s -> Sm == L + (s-1)*P``, ``W == w -> time == w*wave + T_INIT``.
  Wait: ``W*(L + (S-1)*(P - T_MATH))``.
- ws-persistent: tiles from the cluster-rounded grid (table), ``tiles == fw*F_c + rem,
  0 <= rem < F_c`` with F_c the whole-cluster SM count, first/last wave SM counts by
  If, DMA/EPILOGUE of the remainder wave and the first K block linear in rem and the
  per-class per-SM constants, max by If; ``fw * fullwave_c`` per class. The MATH warps'
  waiting time is everything but their busy time before the last epilogue:
  ``first_dma + mainloop - waves * MATH``.
- ws-pipelined (from pipelined.py's table): the ring depth B (Int, with the legal stage
  range and the shared-memory budget per class from the skeleton), time = A + K with K
  the time of the K loops' steady periods, one implication per (class, variant) and legal
  stage value (``cls == i & raster == r & b == v -> K == K(i, r, v)``: the periods are
  the ring's p-norm of its terms, so each depth has its own value), A and D per (class,
  variant, persistent), and the wait. Per (class, variant, persistent) an implied bound
  time >= A + min over its depths of K is added: redundant, but bound propagation then
  prunes whole groups (about 10x faster on simt's 27 tiles). Tabled fallback: one line
  per configuration with its time and wait.

Pruned (``keep``, an ``encode.Kept``): only the kept configurations' classes, groups and
stages get lines, and one assertion restricts (cls, raster, pers, b) to them; per class,
the values of the integer divisions (ws-stage's S and W, ws-persistent's fw and rem) are
asserted too: implied by the lines above (a wrong value would make the encoding unsat,
never change its optimum), they spare Z3 the integer search.

About 8 + 2*#classes assertions (ws-pipelined: about #classes*(1 + #rasters*(#stages + 2))
+ 8, about 3/4 of a per-configuration table) and about 20 variables; K changes constants only.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..kernels import family_of
from ..problem import KernelConfig
from .exact import persistent_class, stage_class
from .pipelined import PipeTable
from .space import (N_VARIANTS, VARIANT_FIELDS, Consts, Q, check_model, class_key, rank_parts, space_key,
                    variant_code, variant_fields)

CHOICE_VARS = (("cls", "Int"), ("tm", "Int"), ("tn", "Int"), ("tk", "Int"), ("cm", "Int"), ("cn", "Int"),
               ("b", "Int"), ("pers", "Bool"), ("raster", "Int"), ("rank", "Int"),
               ("time", "Real"), ("wait", "Real"), ("tiles", "Int"))
MODEL_VARS = {
    "ws-stage": (("W", "Int"), ("S", "Int"), ("L", "Real"), ("Tm", "Real"), ("P", "Real"),
                 ("Sm", "Real"), ("wave", "Real"), ("wait1", "Real")),
    "ws-persistent": (("fw", "Int"), ("rem", "Int"), ("first_dma", "Real"), ("mainloop", "Real"),
                      ("last_epi", "Real"), ("rem_wave", "Real"), ("math", "Real")),
    "ws-pipelined": (("A", "Real"), ("D", "Real"), ("K", "Real"), ("vol", "Int")),
}
ALL_VARS = CHOICE_VARS + tuple(v for model_vars in MODEL_VARS.values() for v in model_vars)
FIELD_VAR = {"tile_m": "tm", "tile_n": "tn", "tile_k": "tk", "cluster_m": "cm", "cluster_n": "cn",
             "stages": "b", "persistent": "pers", "raster": "raster"}


def _num(x) -> str:
    """SMT-LIB real literal of an exact rational."""
    x = Q(x)
    if x.denominator == 1:
        return f"{x.numerator}.0" if x >= 0 else f"(- {-x.numerator}.0)"
    num = f"{abs(x.numerator)}.0"
    lit = f"(/ {num} {x.denominator}.0)"
    return lit if x >= 0 else f"(- {lit})"


def _max(a: str, b: str) -> str:
    return f"(ite (>= {a} {b}) {a} {b})"


def _pers(p: bool) -> str:
    return "pers" if p else "(not pers)"


# ------------------------------------------------------------------ the skeleton (shape-independent)


@dataclass
class Skeleton:
    """The shape-independent part: choice variables, legality, tie rank (SMT-LIB lines)."""

    classes: list
    index: dict
    bmax: int
    pref: bool
    head: list  # declarations, domains
    per_class: list  # one legality line per class
    rank: str  # the tie rank's definition

    @property
    def lines(self) -> list[str]:
        return self.head + self.per_class + [self.rank]

    def kept(self, keep: Kept | None) -> list[str]:
        """The lines for the configurations ``keep`` only (all where None): the legality of
        their classes, and (cls, raster, persistent, stages) restricted to them."""
        if keep is None:
            return self.lines
        alts = [f"(and (= cls {i}) (= raster {r}) {_pers(p)} (or {' '.join(f'(= b {b})' for b in sorted(bs))}))"
                for (i, r, p), bs in sorted(keep.groups.items())]
        return self.head + [self.per_class[i] for i in keep.classes] + [self.rank, f"(assert (or {' '.join(alts)}))"]


@dataclass
class Kept:
    """The configurations an encoding holds, by tile class index: ``classes`` (ascending),
    ``groups`` {(class, raster code, persistent): {stages}} and ``configs``."""

    classes: list
    groups: dict
    configs: set

    @classmethod
    def at(cls, space, facts, js) -> "Kept":
        """``of`` the configurations at positions ``js`` of ``space`` (its ``space.space_facts``)."""
        js = np.asarray(js, dtype=np.int64)
        groups: dict = {}
        for i, r, p, st in zip(facts.cls[js].tolist(), facts.variant[js].tolist(), facts.persistent[js].tolist(),
                               facts.ints["stages"][js].tolist()):
            groups.setdefault((i, r, bool(p)), set()).add(st)
        return cls(sorted({g[0] for g in groups}), groups, {space[j] for j in js.tolist()})

    @classmethod
    def of(cls, configs, index: dict) -> "Kept":
        groups: dict = {}
        for c in configs:
            groups.setdefault((index[class_key(c)], variant_code(c), bool(c.persistent)), set()).add(c.stages)
        return cls(sorted({g[0] for g in groups}), groups, set(configs))

    def has(self, group: tuple) -> bool:
        return group in self.groups


class Every:
    """Every configuration of a skeleton (the unpruned encoding)."""

    def __init__(self, sk: "Skeleton"):
        self.classes = list(range(len(sk.classes)))

    def has(self, group: tuple) -> bool:
        return True


_SKELETONS: dict[tuple, Skeleton] = {}


def _class_choices(allowed: set, bs: list) -> list[str]:
    """The (stages, persistent, raster) choices of one class: an interval of stages times
    the allowed flags where the set is such a product, else an explicit disjunction."""
    ps = sorted({a[1] for a in allowed})
    rs = sorted({a[2] for a in allowed})
    if len(allowed) == len(bs) * len(ps) * len(rs) and bs == list(range(bs[0], bs[-1] + 1)):
        body = [f"(>= b {bs[0]})", f"(<= b {bs[-1]})"]
        if len(ps) == 1:
            body.append(_pers(ps[0]))
        if len(rs) < N_VARIANTS:
            body.append("(or " + " ".join(f"(= raster {r})" for r in rs) + " false)")
        return body
    return ["(or " + " ".join(f"(and (= b {st}) {_pers(p)} (= raster {r}))" for st, p, r in sorted(allowed)) + ")"]


def _smem_budget(c0: KernelConfig, bs: list, smem_limit: int) -> list[str]:
    """The shared-memory budget of a class, where smem_bytes is affine in the stages."""
    smem_bytes = family_of(c0).smem_bytes
    s1 = smem_bytes(c0.replace(stages=1))
    per = smem_bytes(c0.replace(stages=2)) - s1
    if all(smem_bytes(c0.replace(stages=st)) == s1 + (st - 1) * per for st in bs):
        return [f"(<= (+ {s1 - per} (* {per} b)) {smem_limit})"]
    return []


def skeleton(space: list[KernelConfig], model: str, smem_limit: int) -> Skeleton:
    """Choice variables, per-class legality and the tie rank of ``space`` (cached)."""
    key = (space_key(space), model, smem_limit)
    hit = _SKELETONS.get(key)
    if hit is not None:
        return hit[1]
    rp = rank_parts(space, model)
    head = [f"(declare-const {n} {t})" for n, t in CHOICE_VARS + MODEL_VARS[model]]
    head += [f"(assert (and (>= cls 0) (< cls {len(rp.classes)}) (>= raster 0) (< raster {N_VARIANTS}) (>= b 1)))"]
    by_class: dict[int, set] = {}
    first: dict[int, KernelConfig] = {}
    per_class: list[str] = []
    for c in space:
        i = rp.index[class_key(c)]
        by_class.setdefault(i, set()).add((c.stages, c.persistent, variant_code(c)))
        first.setdefault(i, c)
    for i, (TM, TN, TK, CM, CN) in enumerate(rp.classes):
        bs = sorted({a[0] for a in by_class[i]})
        body = [f"(= tm {TM})", f"(= tn {TN})", f"(= tk {TK})", f"(= cm {CM})", f"(= cn {CN})"]
        body += _class_choices(by_class[i], bs) + _smem_budget(first[i], bs, smem_limit)
        per_class.append(f"(assert (=> (= cls {i}) (and {' '.join(body)})))")
    pk = f"(ite (= pers {'true' if rp.pref else 'false'}) 0 1)"
    rank = f"(assert (= rank (+ (* (+ (* (+ (* cls {rp.bmax + 1}) (- {rp.bmax} b)) 2) {pk}) {N_VARIANTS}) raster)))"
    sk = Skeleton(rp.classes, rp.index, rp.bmax, rp.pref, head, per_class, rank)
    if len(_SKELETONS) > 256:
        _SKELETONS.clear()
    _SKELETONS[key] = (tuple(space), sk)  # the space held: space_key stays exact
    return sk


# ------------------------------------------------------------------ one shape


def _pins(fix: dict | None) -> list[str]:
    """Pinned fields; the variant's (raster, group, epilogue, schedule) pin the variant
    codes that have them."""
    L, variant = [], {}
    for name, value in (fix or {}).items():
        if name == "persistent":
            L.append(f"(assert {_pers(value)})")
        elif name in VARIANT_FIELDS:
            variant[name] = value
        else:
            L.append(f"(assert (= {FIELD_VAR[name]} {int(value)}))")
    if variant:
        codes = [v for v in range(N_VARIANTS) if all(variant_fields(v)[k] == x for k, x in variant.items())]
        L.append("(assert (or " + " ".join(f"(= raster {v})" for v in codes) + " false))")
    return L


def _encode_stage(C: Consts, sk: Skeleton, wave_end: str, keep: Kept | Every) -> list[str]:
    L, Ws, Ss = [], set(), set()
    for i in keep.classes:
        TM, TN, TK, CM, CN = sk.classes[i]
        d = stage_class(C, TM, TN, TK)
        Ws.add(d["W"])
        Ss.add(d["S"])
        L.append(f"(assert (=> (= cls {i}) (and (= tiles {d['tiles']}) (= L {_num(d['L'])}) "
                 f"(= Tm {_num(d['Tm'])}) (>= (* S {TK}) {C.k}) (< (* (- S 1) {TK}) {C.k}))))")
        if isinstance(keep, Kept):  # implied: the integer divisions' values (saves Z3 the search)
            L.append(f"(assert (=> (= cls {i}) (and (= S {d['S']}) (= W {d['W']}))))")
    L.append(f"(assert (and (>= (* W {C.sms}) tiles) (< (* (- W 1) {C.sms}) tiles)))")
    L.append(f"(assert (= P (ite (>= b 2) {_max('L', 'Tm')} (+ L Tm))))")
    for s in sorted(Ss):
        L.append(f"(assert (=> (= S {s}) (and (= Sm (+ L (* {s - 1}.0 P))) "
                 f"(= wait1 (+ L (* {s - 1}.0 (- P Tm)))))))")
    wend = "(+ Sm Tm)" if wave_end == "ours" else "Sm"
    L.append(f"(assert (= wave (+ {wend} {_num(C.t_epi)})))")
    for w in sorted(Ws):
        L.append(f"(assert (=> (= W {w}) (and (= time (+ (* {w}.0 wave) {_num(C.t_init)})) "
                 f"(= wait (* {w}.0 wait1)))))")
    return L


def _encode_persistent(C: Consts, sk: Skeleton, keep: Kept | Every) -> list[str]:
    epi = _num(C.t_epi)
    L = ["(assert (and (>= fw 0) (>= rem 0)))"]
    for i in keep.classes:
        d = persistent_class(C, *sk.classes[i])
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
        if isinstance(keep, Kept):  # implied: the integer division's values (saves Z3 the search)
            fw, rem = divmod(d["tiles"], F)
            L.append(f"(assert (=> (= cls {i}) (and (= fw {fw}) (= rem {rem}))))")
    L.append(f"(assert (= time (+ {_num(C.t_init)} first_dma mainloop last_epi)))")
    return L


def _encode_pipelined_tabled(sk: Skeleton, tab: PipeTable, keep: Kept | Every) -> list[str]:
    L = []
    js = range(len(tab.space)) if isinstance(keep, Every) else [j for j, c in enumerate(tab.space) if c in keep.configs]
    for c, (t, w) in tab.exact_of(js).items():
        i = sk.index[class_key(c)]
        cond = f"(= cls {i}) (= raster {variant_code(c)}) {_pers(c.persistent)} (= b {c.stages})"
        L.append(f"(assert (=> (and {cond}) (and (= time {_num(t)}) (= wait {_num(w)}) "
                 f"(= vol {tab.entry(i)['vol']}))))")
    return L


def _encode_pipelined(sk: Skeleton, tab: PipeTable, keep: Kept | Every) -> list[str]:
    """ws-pipelined lines (symbolic): see the module doc."""
    if not tab.symbolic:
        return _encode_pipelined_tabled(sk, tab, keep)
    L = []
    for i in keep.classes:
        d = tab.entry(i)
        L.append(f"(assert (=> (= cls {i}) (and (= time (+ A K)) (= vol {d['vol']}))))")
        for r in d["variants"]:
            groups = [p for p in (False, True) if tab.ad(i, r, p) is not None and keep.has((i, r, p))]
            if not groups:
                continue
            ring = tab.ring(i, r)
            depths = sorted(ring) if isinstance(keep, Every) else \
                sorted(set().union(*(keep.groups[(i, r, p)] for p in groups)))
            for b in depths:
                L.append(f"(assert (=> (and (= cls {i}) (= raster {r}) (= b {b})) (= K {_num(ring[b])})))")
            for p in groups:
                a, dd = tab.ad(i, r, p)
                # implied bound: K is at least its least value over the group's depths, so time >=
                # A + min K (redundant, but it lets bound propagation prune a group; ~10x faster)
                bs = depths if isinstance(keep, Every) else sorted(keep.groups[(i, r, p)])
                floor = a + min(ring[b] for b in bs)
                L.append(f"(assert (=> (and (= cls {i}) (= raster {r}) {_pers(p)}) "
                         f"(and (= A {_num(a)}) (= D {_num(dd)}) (>= time {_num(floor)}))))")
    L.append("(assert (= wait (- time D)))")
    return L


def encode_text(C: Consts, sk: Skeleton, model: str, fix: dict | None = None,
                wave_end: str = "ours", tab: PipeTable | None = None, keep: Kept | None = None) -> list[str]:
    """SMT-LIB lines of one shape: the skeleton, pinned fields, the model's tables.

    ws-pipelined needs ``tab`` (pipelined_table of the same shape and space). ``keep``:
    the configurations to encode, the choice restricted to them (default: every one; the
    pruned solve passes those its bound could not rule out, see prune.py)."""
    check_model(model)
    L = sk.kept(keep) + _pins(fix)
    keep = Every(sk) if keep is None else keep
    if model == "ws-stage":
        return L + _encode_stage(C, sk, wave_end, keep)
    if model == "ws-persistent":
        return L + _encode_persistent(C, sk, keep)
    if tab is None:
        raise ValueError("ws-pipelined: encode_text needs the shape's pipelined_table")
    return L + _encode_pipelined(sk, tab, keep)


def encoding_size(lines: list[str]) -> tuple[int, int]:
    """(assertions, declared variables) of an encoding."""
    return sum(1 for x in lines if x.startswith("(assert")), sum(1 for x in lines if x.startswith("(declare-const"))
