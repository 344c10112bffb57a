"""The optimizer's problem: which models it encodes, the configuration space of a family,
the exact constants of one (shape, family, gpu, params), tile classes and the tie-break rank.

Everything the optimizer computes is exact: float parameters enter as the rationals of
their shortest decimal form (``Q``), so that Z3 and the exhaustive references decide ties
identically.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from ..errors import UserError
from ..hardware import GPU
from ..kernels import FAMILY_OBJECTS, check_legal, get_family
from ..models.columns import ceil_div
from ..params import ParamSet
from ..problem import (DTYPE_BYTES, EPILOGUES, FAMILIES, OUT_DTYPES, RASTERS, SCALE_FACTORS, SCHEDULES, KernelConfig,
                       Shape)

# The models the Z3 optimizer encodes; the CLI and the workflow default to DEFAULT_MODEL.
MODELS = ("ws-stage", "ws-persistent", "ws-pipelined")
DEFAULT_MODEL = "ws-pipelined"
# The configuration fields a solution sets (and ``fix`` may pin). The optimizer's space
# holds the persistent grid at one CTA per SM (persistent_ctas = 0).
FIELDS = ("tile_m", "tile_n", "tile_k", "stages", "cluster_m", "cluster_n", "persistent", "raster", "group_m",
          "epilogue", "schedule", "split_k", "stream_k")
# Raster order as an integer: 0 row, 1 column, 2 grouped.
RASTER_CODE = {r: i for i, r in enumerate(RASTERS)}
# A configuration's variant: its choices beside the tile class, the stages and persistence
# (raster, raster group, epilogue, schedule, how K is shared), as one integer, the
# encoding's ``raster`` variable, ordered for the tie-break: K not shared first (then the
# K splits ascending, then stream-K), then raster row < column < grouped, the smaller
# group, the direct epilogue, the cooperative schedule.
VARIANT_FIELDS = ("raster", "group_m", "epilogue", "schedule", "split_k", "stream_k")
GROUP_SIZES = tuple(sorted({g for fam in FAMILY_OBJECTS.values() for g in fam.group_ms}))
# The ways to share K among CTAs, (split_k, stream_k), in the tie-break's order: none, the
# K splits of any family, stream-K (if a family has it).
SPLIT_SIZES = tuple(sorted({s for fam in FAMILY_OBJECTS.values() for s in fam.split_ks}))
K_WAYS = tuple((s, False) for s in SPLIT_SIZES) + (((1, True),) if any(
    fam.stream_k for fam in FAMILY_OBJECTS.values()) else ())
# variants of each way to share K: raster, group, epilogue, schedule
N_TILE_VARIANTS = len(RASTERS) * len(GROUP_SIZES) * len(EPILOGUES) * len(SCHEDULES)
N_VARIANTS = len(K_WAYS) * N_TILE_VARIANTS


def variant_code(c: KernelConfig) -> int:
    """The variant integer of ``c`` (see VARIANT_FIELDS): the way K is shared is the most
    significant part, so every configuration that does not share K (code < N_TILE_VARIANTS)
    comes first."""
    code = RASTER_CODE[c.raster] * len(GROUP_SIZES) + GROUP_SIZES.index(c.group_m)
    code = (code * len(EPILOGUES) + EPILOGUES.index(c.epilogue)) * len(SCHEDULES) + SCHEDULES.index(c.schedule)
    return K_WAYS.index((c.split_k, c.stream_k)) * N_TILE_VARIANTS + code


def variant_fields(code: int) -> dict:
    """The fields of variant ``code`` (inverse of variant_code)."""
    way, code = divmod(int(code), N_TILE_VARIANTS)
    code, sched = divmod(code, len(SCHEDULES))
    code, epi = divmod(code, len(EPILOGUES))
    r, g = divmod(code, len(GROUP_SIZES))
    split, streamk = K_WAYS[way]
    return {"raster": RASTERS[r], "group_m": GROUP_SIZES[g], "epilogue": EPILOGUES[epi], "schedule": SCHEDULES[sched],
            "split_k": split, "stream_k": streamk}


def Q(x) -> Fraction:
    """Exact rational of a parameter: the float's shortest decimal form."""
    if isinstance(x, Fraction):
        return x
    if isinstance(x, (int, np.integer)):
        return Fraction(int(x))
    return Fraction(repr(float(x)))


def check_model(model: str) -> None:
    if model not in MODELS:
        raise UserError(f"model {model!r}: the Z3 optimizer encodes {', '.join(MODELS)}")


def check_family(family: str) -> None:
    if family not in FAMILIES:
        raise UserError(f"family {family!r}: known families are {', '.join(FAMILIES)}")


def shape_for(shape, family: str, dtype: str | None) -> Shape:
    """The Shape to solve: ``shape`` is a Shape or (m, n, k) (bf16); ``dtype`` overrides its
    dtype; simt always computes in fp32."""
    if isinstance(shape, Shape):
        m, n, k, d = shape.m, shape.n, shape.k, shape.dtype
    else:
        m, n, k = shape
        d = "bf16"
    return Shape(int(m), int(n), int(k), get_family(family).dtype_for(dtype or d))


# ------------------------------------------------------------------ exact constants


@dataclass(frozen=True)
class Consts:
    """Exact per-run constants of one (shape, family, dtype, gpu, params); times in us,
    bytes per element, rates per us."""

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


def consts(shape: Shape, family: str, gpu: GPU, pset: ParamSet) -> Consts:
    dtype = shape.dtype
    p = pset.get(family, dtype)
    sf = SCALE_FACTORS.get(dtype)
    return Consts(
        m=shape.m, n=shape.n, k=shape.k, sms=int(gpu.sms),
        in_b=Q(DTYPE_BYTES[dtype]), out_b=Q(DTYPE_BYTES[OUT_DTYPES.get(dtype, dtype)]),
        sf=Q(sf[1]) / sf[0] if sf else Fraction(0),
        t_init=Q(p.t_init_us), t_epi=Q(p.t_epilogue_us), load_bw=Q(p.load_bytes_per_us),
        load_lat=Q(p.load_latency_us), math_fl=Q(p.math_flops_per_us),
        math_lat=Q(p.math_latency_us), l2=Q(p.l2_hit_rate), dram=Q(gpu.dram_bytes_per_s) / 10**6,
    )


# ------------------------------------------------------------------ the configuration space

_LEGAL: dict[tuple, tuple[KernelConfig, ...]] = {}


def family_space(family: str, gpu: GPU, dtype: str) -> list[KernelConfig]:
    """The legal space of ``family`` on ``gpu``, or a clear UserError if there is none."""
    check_family(family)
    if not get_family(family).runs_on(gpu):
        why = check_legal(KernelConfig(family=family, dtype=dtype), gpu) or "not supported"
        raise UserError(f"family {family} does not run on {gpu.slug} ({gpu.arch}): {why}")
    key = (family, dtype, json.dumps(gpu.to_dict(), sort_keys=True, default=str))
    if key not in _LEGAL:
        try:
            _LEGAL[key] = tuple(get_family(family).legal_configs(gpu, dtype))
        except UserError:
            raise
        except Exception as err:  # e.g. a dtype the family has no kernel for
            raise UserError(f"{family} on {gpu.slug}: no legal configurations for {dtype} ({err})") from None
    return list(_LEGAL[key])


def search_space(shape: Shape, family: str, gpu: GPU, space: list[KernelConfig] | None) -> list[KernelConfig]:
    """The configurations solve() chooses from: the family's legal space, or the given
    ``space`` restricted to the family, the shape's dtype and the persistent grid at one
    CTA per SM (a capped grid, persistent_ctas > 0, is not in the optimizer's space)."""
    if space is None:
        return family_space(family, gpu, shape.dtype)
    if not get_family(family).runs_on(gpu):
        raise UserError(f"family {family} does not run on {gpu.slug} ({gpu.arch})")
    return [c for c in space if c.family == family and c.dtype == shape.dtype and not c.persistent_ctas]


def explain_unsat(family: str, dtype: str, gpu: GPU, fix: dict | None) -> str:
    """Why no configuration satisfies the request (the legality rule that fails)."""
    if fix:
        try:
            cfg = KernelConfig(family=family, dtype=dtype).replace(**fix)
            if "stages" not in fix:
                cfg = cfg.replace(stages=get_family(family).min_stages)
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


# ------------------------------------------------------------------ tile classes and the tie-break rank


def class_key(c: KernelConfig) -> tuple[int, int, int, int, int]:
    """The tile class (TM, TN, TK, CM, CN) of a configuration."""
    return (c.tile_m, c.tile_n, c.tile_k, c.cluster_m, c.cluster_n)


@dataclass(frozen=True)
class RankParts:
    """The tile classes of a space in ascending order, their index, the deepest pipeline and
    the kernel the model describes (persistent for the persistent models)."""

    classes: list
    index: dict
    bmax: int
    pref: bool


def rank_parts(space: list[KernelConfig], model: str) -> RankParts:
    f = space_facts(space)
    return RankParts(classes=f.classes, index=f.index, bmax=f.bmax, pref=model != "ws-stage")


# ------------------------------------------------------------------ per-space facts, computed once


def space_key(space) -> tuple:
    """A cache key of a list of configurations that costs no hashing of them: their
    identities. Exact as long as the cache holds the configurations (``SpaceFacts.configs``),
    so that no identity can pass to another object."""
    return tuple(map(id, space))


@dataclass(frozen=True)
class SpaceFacts:
    """What the optimizer asks of a space on every shape, computed once per space: its
    tile classes in ascending order and their index, each configuration's position, class
    index, variant code and persistence, the first configuration (in space order) of each
    class, (class, variant, persistent) group and (class, variant, ring depth), the ring
    depths."""

    configs: tuple  # the space (held, so that space_key stays exact)
    classes: list
    index: dict
    position: dict  # config -> position in the space
    cls: np.ndarray
    variant: np.ndarray
    persistent: np.ndarray
    g0: np.ndarray  # per configuration, the first of its (class, variant, persistent) group
    k0: np.ndarray  # per configuration, the first of its (class, variant, stages)
    class_first: dict  # class -> position of its first configuration
    variants_of: dict  # class -> its variants, ascending
    first_g: dict  # (class, variant, persistent) -> position of its first configuration
    first_k: dict  # (class, variant) -> {stages: position of the first configuration with them}
    stages: tuple  # the ring depths, ascending
    bmax: int
    ints: dict  # tile_m, tile_n, tile_k, stages, cluster_m, cluster_n: int64 arrays

    def ranks(self, rp: RankParts) -> np.ndarray:
        """``tie_rank`` of every configuration (int64; rp of this space)."""
        pk = np.where(self.persistent.astype(bool) == rp.pref, 0, 1)
        return ((self.cls * (rp.bmax + 1) + (rp.bmax - self.ints["stages"])) * 2 + pk) * N_VARIANTS + self.variant


_FACTS: dict = {}


def _first_of(keys: np.ndarray) -> np.ndarray:
    """Per position, the first position (in space order) with the same key."""
    _, first, inv = np.unique(keys, return_index=True, return_inverse=True)
    return first[inv.reshape(-1)]


def space_facts(space) -> SpaceFacts:
    """The SpaceFacts of ``space`` (cached by ``space_key``)."""
    key = space_key(space)
    f = _FACTS.get(key)
    if f is None:
        f = _facts(space)
        if len(_FACTS) > 64:
            _FACTS.clear()
        _FACTS[key] = f
    return f


def _facts(space) -> SpaceFacts:
    classes = sorted({class_key(c) for c in space})
    index = {k: i for i, k in enumerate(classes)}
    cls = np.array([index[class_key(c)] for c in space], dtype=np.int64)
    variant = np.array([variant_code(c) for c in space], dtype=np.int64)
    pers = np.array([bool(c.persistent) for c in space], dtype=np.int64)
    g0 = _first_of((cls * N_VARIANTS + variant) * 2 + pers)
    ints = {k: np.array([getattr(c, k) for c in space], dtype=np.int64)
            for k in ("tile_m", "tile_n", "tile_k", "stages", "cluster_m", "cluster_n")}
    stages, bmax = ints["stages"], int(ints["stages"].max())
    k0 = _first_of((cls * N_VARIANTS + variant) * (bmax + 1) + stages)
    first_k: dict = {}
    for j in np.unique(k0).tolist():
        first_k.setdefault((int(cls[j]), int(variant[j])), {})[int(stages[j])] = j
    first_r, first_g, class_first, variants_of = {}, {}, {}, {}
    for j in np.unique(g0).tolist():
        i, r, p = int(cls[j]), int(variant[j]), bool(pers[j])
        first_g[(i, r, p)] = j
        if first_r.setdefault((i, r), j) == j:
            variants_of.setdefault(i, []).append(r)
        class_first[i] = min(class_first.get(i, j), j)
    return SpaceFacts(configs=tuple(space), classes=classes, index=index,
                      position={c: j for j, c in reversed(list(enumerate(space)))}, cls=cls, variant=variant,
                      persistent=pers, g0=g0, k0=k0, class_first=class_first,
                      variants_of={i: sorted(v) for i, v in variants_of.items()}, first_g=first_g,
                      first_k=first_k,
                      stages=tuple(sorted(set(stages.tolist()))), bmax=bmax, ints=ints)


def matching(space, fix: dict | None) -> np.ndarray:
    """Whether each configuration of ``space`` has the pinned fields ``fix`` (bool array)."""
    if not fix:
        return np.ones(len(space), dtype=bool)
    return np.array([all(getattr(c, f) == v for f, v in fix.items()) for c in space], dtype=bool)


def tie_rank(c: KernelConfig, rp: RankParts) -> int:
    """Ties broken by: smallest tile class, deepest pipeline, the kernel the model
    describes, the smallest variant (K not shared, raster row < column < grouped, ...:
    variant_code; the encoding's ``rank``)."""
    pk = 0 if c.persistent == rp.pref else 1
    return ((rp.index[class_key(c)] * (rp.bmax + 1) + (rp.bmax - c.stages)) * 2 + pk) * N_VARIANTS + variant_code(c)


def padded_volume(shape: Shape, c: KernelConfig) -> int:
    """The tiles' padded extent ceil(M/TM)*TM * ceil(N/TN)*TN * ceil(K/TK)*TK: the work the
    kernel does (wgmma on whole tiles), of which M*N*K is useful (ws-pipelined's
    ``padding_waste`` = 1 - M*N*K / this). ws-pipelined's tie-break after time and wait."""
    return (ceil_div(shape.m, c.tile_m) * c.tile_m * ceil_div(shape.n, c.tile_n) * c.tile_n
            * ceil_div(shape.k, c.tile_k) * c.tile_k)
