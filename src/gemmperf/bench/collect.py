"""The collect stage: a testlist's problems x each family's configurations, measured.

Standard library, numpy and cuda-python only (the GPU machine has no polars).
"""

from __future__ import annotations

from functools import partial
from pathlib import Path

from ..errors import UserError
from ..kernels import families_on, get_family
from ..problem import KernelConfig, Shape, read_testlist, shard
from .device import measurement_context
from .measure import Measurer
from .sweep import done_keys, run_sweep, task_key

PRESETS = ("default", "medium", "paper", "small")


def sweep_configs(family: str, gpu, dtype: str, preset: str = "default") -> list[KernelConfig]:
    """The configurations measured for each problem.

    default: the family's default sweep (Family.default_sweep).
    paper: the paper's evaluation tilings, TM and TN in {64, 128} (TK as the family
        allows), 4 stages where legal, non-persistent.
    medium: for families with a ``medium_grid`` (ws-hopper), every legal tile with 4
        stages and the most that fit (at most 6), non-persistent row raster and
        persistent grouped raster; other families as ``small``.
    small: the family's ``small_picks``, for quick checks and big shapes.
    """
    fam = get_family(family)
    if preset == "default":
        return fam.default_sweep(gpu, dtype)
    configs = fam.legal_configs(gpu, dtype)
    if preset == "paper":
        keep = [c for c in configs if c.tile_m in (64, 128) and c.tile_n in (64, 128) and not c.persistent
                and c.raster == "row" and c.tile_k in (16, 64) and c.stages == fam.bench_stages]
        return keep
    if preset == "medium" and fam.medium_grid:
        top = {}
        for c in configs:
            top[(c.tile_m, c.tile_n)] = min(6, max(top.get((c.tile_m, c.tile_n), 0), c.stages))
        return [c for c in configs if c.stages in (4, top[(c.tile_m, c.tile_n)])
                and (c.persistent, c.raster) in ((False, "row"), (True, "grouped"))]
    if preset in ("small", "medium"):
        out = []
        for tm, tn, st, persistent in fam.small_picks:
            out += [c for c in configs if (c.tile_m, c.tile_n, c.stages, c.persistent) == (tm, tn, st, persistent)
                    and c.raster == ("grouped" if persistent else "row") and c.tile_k == max(
                        x.tile_k for x in configs if (x.tile_m, x.tile_n) == (tm, tn))]
        return out
    raise UserError(f"sweep preset {preset!r}: known presets are {', '.join(PRESETS)}")


def tasks_for(shapes: list[Shape], gpu, families: list[str], dtype: str, preset: str) -> list[dict]:
    """Tasks ordered by shape, so the worker reuses its input buffers."""
    per_family = {f.name: sweep_configs(f.name, gpu, f.dtype_for(dtype), preset) for f in families_on(gpu, families)}
    tasks = []
    for s in shapes:
        for family, configs in per_family.items():
            for c in configs:
                tasks.append({"m": s.m, "n": s.n, "k": s.k, **c.as_dict()})
    return tasks


def run_collect(gpu, testlist, out, families: list[str], dtype: str, preset: str = "default",
                shard_of: tuple[int, int] = (0, 1), warm_l2: bool = False, rel_spread: float = 0.02,
                max_seconds: float = 2.0, timeout_s: float = 120.0, limit: int = 0) -> tuple[dict, int]:
    """Measure shard ``shard_of`` = (i, n) of a testlist into ``out`` (appends, resumes).

    Returns (status counts of the rows measured now, tasks in this shard)."""
    i, n = shard_of
    shapes = shard(read_testlist(testlist, dtype), i, n)
    tasks = tasks_for(shapes, gpu, families, dtype, preset)
    if limit:
        seen = done_keys(Path(out))
        tasks = [t for t in tasks if task_key(t) not in seen][:limit]
    factory = partial(Measurer, gpu, warm_l2=warm_l2, rel_spread=rel_spread, max_seconds=max_seconds)
    context = {**measurement_context(gpu), "warm_l2": warm_l2}
    counts = run_sweep(tasks, out, factory, timeout_s=timeout_s, context=context)
    return counts, len(tasks)
