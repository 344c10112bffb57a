"""The collect stage: a testlist's problems x each family's configurations, measured.

Standard library only here; the worker's Measurer brings numpy and cuda-python.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from ..errors import UserError
from ..problem import FAMILIES, KernelConfig, Shape, family_dtype, read_testlist, runs_on, shard
from .sweep import run_sweep

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
    from ..kernels.space import default_sweep, legal_configs

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


def add_parser(sub) -> None:
    p = sub.add_parser("collect", help="measure a testlist's configurations on the local GPU (appends, resumes)")
    p.add_argument("--testlist", required=True, help="testlist CSV (m,n,k[,dtype])")
    p.add_argument("--out", required=True, help="measurement CSV (appended; rerun to resume)")
    p.add_argument("--gpu", default="auto", help="hardware.json of this GPU, or auto (probe)")
    p.add_argument("--families", default=",".join(FAMILIES), help="comma-separated kernel families")
    p.add_argument("--dtype", default="bf16", choices=("bf16", "fp16"), help="tensor-core input dtype")
    p.add_argument("--preset", default="default", choices=PRESETS, help="which configurations per problem")
    p.add_argument("--shard", default="0/1", help="i/n: measure the i-th of n shards (0-based)")
    p.add_argument("--warm-l2", action="store_true", help="reuse one copy of A and B (L2 may serve them)")
    p.add_argument("--rel-spread", type=float, default=0.02, help="stop repeating under this relative spread")
    p.add_argument("--max-seconds", type=float, default=2.0, help="time cap per configuration's timing")
    p.add_argument("--timeout", type=float, default=120.0, help="seconds before a configuration is a timeout")
    p.add_argument("--limit", type=int, default=0, help="measure at most this many pending configurations")
    p.set_defaults(func=cmd_collect)


def _shard(text: str) -> tuple[int, int]:
    try:
        i, n = (int(x) for x in text.split("/"))
    except ValueError:
        raise UserError(f"--shard {text!r}: expected i/n, e.g. 0/4") from None
    if not 0 <= i < n:
        raise UserError(f"--shard {text!r}: need 0 <= i < n")
    return i, n


def cmd_collect(a) -> int:
    from ..cli import resolve_gpu
    from .device import identity

    gpu = resolve_gpu(a.gpu)
    families = [f.strip() for f in a.families.split(",") if f.strip()]
    unknown = [f for f in families if f not in FAMILIES]
    if unknown:
        raise UserError(f"--families: unknown {', '.join(unknown)}; known: {', '.join(FAMILIES)}")
    i, n = _shard(a.shard)
    shapes = shard(read_testlist(a.testlist, a.dtype), i, n)
    tasks = tasks_for(shapes, gpu, families, a.dtype, a.preset)
    if a.limit:
        from .sweep import done_keys, task_key

        seen = done_keys(Path(a.out))
        tasks = [t for t in tasks if task_key(t) not in seen][: a.limit]
    settings = dict(warm_l2=a.warm_l2, rel_spread=a.rel_spread, max_seconds=a.max_seconds)

    from functools import partial

    from .measure import Measurer

    factory = partial(Measurer, gpu, **settings)  # built in the worker process

    context = {**identity(gpu), "warm_l2": a.warm_l2}
    counts = run_sweep(tasks, a.out, factory, timeout_s=a.timeout, context=context)
    print(f"{a.out}: {sum(counts.values())} measured now ({counts}); {len(tasks)} in this shard")
    return 0


def main_args(argv=None):  # for python -m gemmperf.bench.collect on GPU machines
    parser = argparse.ArgumentParser(prog="gemmperf collect")
    add_parser(parser.add_subparsers(dest="command", required=True))
    return parser.parse_args(["collect", *(argv or [])])
