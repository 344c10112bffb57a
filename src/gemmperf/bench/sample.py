"""Stratified samples of a family's legal configuration space, shape by shape.

A fixed preset measures the same few configurations everywhere, so a model fitted on
it never sees most of the space it is asked to rank. The ``sample`` preset measures,
for each shape of a testlist, ``count`` configurations that together cover every
level of every dimension (tile, stages, cluster, epilogue, schedule, persistence,
raster and group, split-K / stream-K) about equally across the list, with each shape
seeing as many different levels as it can:

1. a *pool* of at most POOL_SIZE configurations per family and dtype, drawn from the
   legal space with balanced marginals (it bounds the kernels to compile);
2. per shape, the family's ANCHORS (the configurations a tuned library would try first;
   they make the measured best a fair reference for regret), then picks from the pool,
   each the candidate whose levels are rarest so far, in the list and in the shape.

Splitting K is sampled where it can run well: on a shape with fewer tiles than SMs a
quarter of the picks share K; elsewhere at most one, and only while the partial tiles
stay within a few waves (``k_sharing_ok``). Everything is drawn from
``random.Random(seed)`` in testlist order, so a (testlist, family, dtype, count, seed)
names one task list on any GPU with the same legal space (the H100 and the H200): rows
measured on two GPUs pair up.
"""

from __future__ import annotations

import random
from collections import Counter

from ..problem import KernelConfig, Shape
from ..kernels.family import work_units

POOL_SIZE = 1024
CANDIDATES = 48  # random candidates weighed per pick
KSHARE_WAVES = 4  # split-K / stream-K only while tiles x splits <= this many x SMs
# share of the pool per way of covering K (the other dimensions: equal shares per level)
K_WAY_SHARES = {"whole": 0.55, "split": 0.30, "stream": 0.15}
# the configurations a tuned library tries first; each at the most stages that are legal
ANCHORS = (
    dict(tile_m=128, tile_n=256, schedule="cooperative", persistent=True, raster="grouped", epilogue="tma",
         cluster_m=2),
    dict(tile_m=128, tile_n=128, schedule="pingpong", persistent=True, raster="grouped", epilogue="tma",
         cluster_m=2),
)


def k_way(c: KernelConfig) -> str:
    return "stream" if c.stream_k else "split" if c.split_k > 1 else "whole"


# dimension -> level of a configuration
DIMENSIONS = {
    "tile": lambda c: (c.tile_m, c.tile_n),
    "stages": lambda c: c.stages,
    "cluster": lambda c: (c.cluster_m, c.cluster_n),
    "epilogue": lambda c: c.epilogue,
    "schedule": lambda c: c.schedule,
    "persistent": lambda c: c.persistent,
    "raster": lambda c: c.raster,
    "group": lambda c: c.group_m if c.raster == "grouped" else None,  # None: not a level of c
    "split": lambda c: c.split_k if c.split_k > 1 else None,
}


def _targets(configs: list[KernelConfig]) -> dict[str, dict]:
    """Per dimension, each level's target share: equal."""
    out = {}
    for dim, level in DIMENSIONS.items():
        levels = {level(c) for c in configs} - {None}
        out[dim] = {x: 1 / len(levels) for x in levels}
    return out


def _cost(c: KernelConfig, counts: dict[str, Counter], targets: dict[str, dict], local=None) -> float:
    """How over-represented ``c``'s levels already are (0: all unseen)."""
    cost = 0.0
    for dim, level in DIMENSIONS.items():
        x = level(c)
        if x is None:
            continue
        cost += counts[dim][x] / targets[dim].get(x, 1.0)
        if local is not None:
            cost += 4 * len(counts) * local[dim][x]  # a level this shape already has weighs most
    return cost


def _take(c: KernelConfig, *counters) -> None:
    for counts in counters:
        for dim, level in DIMENSIONS.items():
            counts[dim][level(c)] += 1


def _pick(rng: random.Random, candidates: list[KernelConfig], counts, targets, local=None) -> KernelConfig:
    trial = candidates if len(candidates) <= CANDIDATES else rng.sample(candidates, CANDIDATES)
    return min(trial, key=lambda c: (_cost(c, counts, targets, local), rng.random()))


def pool(legal: list[KernelConfig], seed: int, size: int = POOL_SIZE) -> list[KernelConfig]:
    """At most ``size`` of the ``legal`` configurations: of each way of covering K its
    K_WAY_SHARES, with balanced marginals within it (split-K and stream-K are
    cooperative only, so balancing them together would skew the whole-K part)."""
    out = []
    for way, share in K_WAY_SHARES.items():
        part = [c for c in legal if k_way(c) == way]
        out += _balanced(part, seed, max(1, round(size * share)))
    return out


def _balanced(legal: list[KernelConfig], seed: int, size: int) -> list[KernelConfig]:
    if len(legal) <= size:
        return list(legal)
    rng = random.Random(seed)
    targets = _targets(legal)
    counts = {d: Counter() for d in DIMENSIONS}
    left = list(legal)
    out = []
    for _ in range(size):
        c = _pick(rng, left, counts, targets)
        left.remove(c)
        out.append(c)
        _take(c, counts)
    return out


def k_sharing_ok(fam, c: KernelConfig, shape: Shape, sms: int) -> bool:
    """Whether a split-K / stream-K ``c`` is sampled on ``shape``: every split has a
    k-block, and the partial tiles (tiles x splits) stay within KSHARE_WAVES waves;
    stream-K needs two k-blocks a tile."""
    tiles = work_units(c, shape.m, shape.n) * c.cluster_size
    kt = -(-fam.pad_k(shape.k) // c.tile_k)
    if c.stream_k:
        return kt >= 2 and tiles < KSHARE_WAVES * sms
    return c.split_k <= kt and tiles * c.split_k <= KSHARE_WAVES * sms


def anchors(fam, legal_keys: dict, dtype: str, gpu) -> list[KernelConfig]:
    """The family's ANCHORS that are legal, each at its most legal stages."""
    out = []
    for spec in ANCHORS:
        base = KernelConfig(fam.name, dtype, tile_k=fam.tiles(dtype)[0][2], **spec) if fam.tiles(dtype) else None
        if base is None or fam.check_legal(base.replace(stages=2), gpu) is not None:
            continue
        best = base.replace(stages=fam.max_legal_stages(base, gpu))
        if best.key() in legal_keys:
            out.append(best)
    return out


def sample_configs(fam, gpu, dtype: str, shapes: list[Shape], count: int, seed: int) -> dict[Shape, list]:
    """Shape -> its ``count`` configurations of family ``fam`` (fewer where the legal
    space is smaller), in ``shapes`` order: the module's recipe."""
    legal = fam.legal_configs(gpu, dtype)
    if not legal or count < 1:
        return {s: [] for s in shapes}
    rng = random.Random(seed)
    the_pool = pool(legal, seed, POOL_SIZE)
    groups = {"whole": [c for c in the_pool if k_way(c) == "whole"],
              "shared": [c for c in the_pool if k_way(c) != "whole"]}
    # balanced within each group: K sharing is cooperative only, so one balance over
    # both would push the whole-K picks towards ping-pong
    targets = {g: _targets(cs) for g, cs in groups.items() if cs}
    counts = {g: {d: Counter() for d in DIMENSIONS} for g in groups}
    fixed = anchors(fam, {c.key(): c for c in legal}, dtype, gpu)[: max(0, count // 4)]
    out = {}
    for s in shapes:
        local = {d: Counter() for d in DIMENSIONS}
        chosen = list(fixed)
        for c in chosen:
            _take(c, local)
        shared = [c for c in groups["shared"] if k_sharing_ok(fam, c, s, gpu.sms)]
        tiles = -(-s.m // 128) * -(-s.n // 128)
        n_shared = min(len(shared), round(count / 4) if tiles < gpu.sms else 1)
        for g, cands, n in (("shared", shared, n_shared), ("whole", groups["whole"], count - len(chosen) - n_shared)):
            for _ in range(max(0, n)):
                left = [c for c in cands if c not in chosen]
                if not left:
                    break
                c = _pick(rng, left, counts[g], targets[g], local)
                chosen.append(c)
                _take(c, counts[g], local)
        out[s] = chosen
    return out
