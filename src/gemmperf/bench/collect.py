"""The collect stage: a testlist's problems x each family's configurations, measured.

Standard library, numpy and cuda-python only (the GPU machine has no polars).
"""

from __future__ import annotations

from functools import partial
from pathlib import Path

from ..errors import UserError
from ..kernels.space import default_sweep, legal_configs
from ..problem import KernelConfig, Shape, family_dtype, read_testlist, runs_on, shard
from .device import identity
from .measure import Measurer
from .sweep import done_keys, run_sweep, task_key

PRESETS = ("default", "medium", "paper", "small")


def sweep_configs(family: str, gpu, dtype: str, preset: str = "default") -> list[KernelConfig]:
    """The configurations measured for each problem.

    default: the family's default sweep (kernels.space.default_sweep).
    paper: the paper's evaluation tilings, TM and TN in {64, 128} (TK as the family
        allows), 4 stages where legal, non-persistent.
    medium: ws-hopper's every legal tile with 4 stages and the most that fit (at most
        6), non-persistent row raster and persistent grouped raster; other families
        as ``small``.
    small: a handful per family, for quick checks and big shapes.
    """
    if preset == "default":
        return default_sweep(family, gpu, dtype)
    configs = legal_configs(family, gpu, dtype)
    if preset == "paper":
        keep = [c for c in configs if c.tile_m in (64, 128) and c.tile_n in (64, 128) and not c.persistent
                and c.raster == "row" and c.tile_k in (16, 64) and c.stages == (2 if family == "simt" else 4)]
        return keep
    if preset == "medium" and family == "ws-hopper":
        top = {}
        for c in configs:
            top[(c.tile_m, c.tile_n)] = min(6, max(top.get((c.tile_m, c.tile_n), 0), c.stages))
        return [c for c in configs if c.stages in (4, top[(c.tile_m, c.tile_n)])
                and (c.persistent, c.raster) in ((False, "row"), (True, "grouped"))]
    if preset in ("small", "medium"):
        picks = {
            "ws-hopper": [(128, 128, 4, False), (128, 256, 4, True), (256, 128, 4, True), (128, 64, 4, False)],
            "ws-ampere": [(128, 128, 3, False)],
            "simt": [(64, 64, 2, False)],
        }[family]
        out = []
        for tm, tn, st, persistent in picks:
            out += [c for c in configs if (c.tile_m, c.tile_n, c.stages, c.persistent) == (tm, tn, st, persistent)
                    and c.raster == ("grouped" if persistent else "row") and c.tile_k == max(
                        x.tile_k for x in configs if (x.tile_m, x.tile_n) == (tm, tn))]
        return out
    raise UserError(f"sweep preset {preset!r}: known presets are {', '.join(PRESETS)}")


def tasks_for(shapes: list[Shape], gpu, families: list[str], dtype: str, preset: str) -> list[dict]:
    """Tasks ordered by shape, so the worker reuses its input buffers."""
    per_family = {f: sweep_configs(f, gpu, family_dtype(f, dtype), preset) for f in families if runs_on(f, gpu)}
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
    context = {**identity(gpu), "warm_l2": warm_l2}
    counts = run_sweep(tasks, out, factory, timeout_s=timeout_s, context=context)
    return counts, len(tasks)
