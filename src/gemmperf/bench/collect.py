"""The collect stage: a testlist's problems x each family's configurations, measured.

Standard library, numpy and cuda-python only (the GPU machine has no polars).
"""

from __future__ import annotations

import importlib
import os
import re
from functools import partial
from pathlib import Path

from ..errors import UserError
from ..kernels import FAMILY_OBJECTS, families_on, get_family
from ..kernels.builder import build_all
from ..problem import DEFAULT_GROUP_M, KernelConfig, Shape, read_testlist, shard
from .device import local_arch, measurement_context
from .journal import best_rows, norm, read_rows, seed, task_key, write_table
from .measure import Measurer
from .sample import sample_configs
from .sweep import run_sweep

PRESETS = ("default", "medium", "paper", "small", "sample")
SAMPLE_COUNT, SAMPLE_SEED = 16, 1723  # the sample preset's configurations per shape, and its seed
STANDIN_ENV = "GEMMPERF_MEASURE_STANDIN"
# the tensor-core input dtypes some kernel compiles for (--dtype of collect and microbench;
# simt computes fp32 whichever is asked): bf16, fp16, fp8
KERNEL_DTYPES = tuple(sorted({d for f in FAMILY_OBJECTS.values() if f.tensor_cores for d in f.dtypes}))
COMPILE_JOBS = max(1, min(8, (os.cpu_count() or 2) // 2))  # NVRTC processes compiling at once


def sweep_configs(family: str, gpu, dtype: str, preset: str = "default") -> list[KernelConfig]:
    """The configurations measured for each problem.

    default: the family's default sweep (Family.default_sweep).
    paper: the paper's evaluation tilings, TM and TN in {64, 128} (TK 64, 16 for simt,
        or the family's only tile K of the dtype: 128 for fp8), 4 stages where legal,
        non-persistent; no cluster, direct epilogue.
    medium: for families with a ``medium_grid`` (ws-hopper), every legal tile with 4
        stages and the most that fit (at most 6), non-persistent row raster and
        persistent grouped raster; other families as ``small``.
    small: the family's ``small_picks``, for quick checks and big shapes.
    medium and small measure each pick as it was before issue 15 (no cluster, direct
    epilogue, cooperative) and, where the family has them and they are legal, with the
    TMA-store epilogue and with the TMA-store epilogue on 2x1 clusters.
    default, medium and small also measure split-K and stream-K on the shapes where they
    pay (few tiles): ``shared_k_picks``, added per shape by ``tasks_for``; paper does not.
    """
    fam = get_family(family)
    if preset == "default":
        return fam.default_sweep(gpu, dtype)
    configs = [c for c in fam.legal_configs(gpu, dtype) if _baseline(c)]
    if preset == "paper":
        tks = {c.tile_k for c in configs}
        tk = min(tks & {16, 64}, default=min(tks, default=0))
        keep = [c for c in configs if c.tile_m in (64, 128) and c.tile_n in (64, 128) and not c.persistent
                and c.raster == "row" and c.tile_k == tk and c.stages == fam.bench_stages]
        return keep
    if preset == "medium" and fam.medium_grid:
        top = {}
        for c in configs:
            top[(c.tile_m, c.tile_n)] = min(6, max(top.get((c.tile_m, c.tile_n), 0), c.stages))
        return _with_variants(fam, gpu, [c for c in configs if c.stages in (4, top[(c.tile_m, c.tile_n)])
                                         and (c.persistent, c.raster) in ((False, "row"), (True, "grouped"))])
    if preset in ("small", "medium"):
        out = []
        for tm, tn, st, persistent in fam.small_picks:
            out += [c for c in configs if (c.tile_m, c.tile_n, c.stages, c.persistent) == (tm, tn, st, persistent)
                    and c.raster == ("grouped" if persistent else "row") and c.tile_k == max(
                        x.tile_k for x in configs if (x.tile_m, x.tile_n) == (tm, tn))]
        return _with_variants(fam, gpu, out)
    raise UserError(f"sweep preset {preset!r}: known presets are {', '.join(PRESETS)}")


def _baseline(c: KernelConfig) -> bool:
    """A configuration at the dimensions every family has: no cluster, the direct
    epilogue, the cooperative schedule, the default raster group, the full persistent grid."""
    return ((c.cluster_m, c.cluster_n, c.epilogue, c.schedule, c.group_m, c.persistent_ctas, c.split_k, c.stream_k)
            == (1, 1, "direct", "cooperative", DEFAULT_GROUP_M, 0, 1, False))


def _with_variants(fam, gpu, picks: list[KernelConfig]) -> list[KernelConfig]:
    """``picks``, then each with the TMA-store epilogue and with it on 2x1 clusters, where
    the family has them and they are legal (a pick whose ring leaves no room for the
    staging buffers is measured without them)."""
    if "tma" not in fam.epilogues:
        return picks
    variants = [dict(epilogue="tma"), dict(epilogue="tma", cluster_m=2)]
    extra = [c.replace(**v) for v in variants for c in picks]
    return picks + [c for c in extra if fam.check_legal(c, gpu) is None]


def shared_k_picks(fam, configs: list[KernelConfig], gpu, shape: Shape) -> list[KernelConfig]:
    """The split-K and stream-K configurations among ``configs`` (the family's
    ``shared_k_configs``) that the presets measure on ``shape``: those the family's rule
    finds worth it (``WsHopper.shares_k_usefully``). Sharing a tile's K pays only when
    the tiles alone leave SMs idle, so only where the tile count T = ceil(M / TM) *
    ceil(N / TN) is below the GPU's SMs; then, with KT = ceil(K / TK) k-blocks a tile,
    split-K S when S <= KT (every split has a k-block) and T * S <= 2 * SMs (the splits
    fill the GPU at most twice over; more CTAs only add partial tiles to reduce), and
    stream-K when KT >= 2 (its persistent CTAs then share the T * KT iterations evenly).
    """
    return [c for c in configs if fam.shares_k_usefully(c, shape.m, shape.n, shape.k, gpu.sms)]


def dtype_skips(gpu, families: list[str], dtype: str) -> dict[str, str]:
    """Family -> why it is skipped: those among ``families`` that run on ``gpu`` but have
    no kernel for ``dtype`` (ws-ampere and fp8), with the family's dtypes as the reason.
    A UserError when no family asked for is left, or when the only family asked for is
    skipped: then the user asked for something no kernel does."""
    runs = families_on(gpu, families)
    skips = {f.name: f"{f.dtype_reason()}, not {dtype}" for f in runs if f.dtype_for(dtype) not in f.dtypes}
    if runs and len(skips) == len(runs):
        raise UserError(f"--dtype {dtype}: no kernel of {', '.join(families)} takes it ({'; '.join(skips.values())})")
    return skips


def families_for(gpu, families: list[str], dtype: str) -> list:
    """The families among ``families`` that run on ``gpu`` and take ``dtype`` (simt
    computes fp32 whichever dtype is asked); see ``dtype_skips``."""
    skips = dtype_skips(gpu, families, dtype)
    return [f for f in families_on(gpu, families) if f.name not in skips]


def tasks_for(shapes: list[Shape], gpu, families: list[str], dtype: str, preset: str,
              sample: tuple[int, int] = (SAMPLE_COUNT, SAMPLE_SEED)) -> list[dict]:
    """Tasks ordered by shape, so the worker reuses its input buffers: each shape with
    each family's ``sweep_configs`` and, except for the paper preset, its
    ``shared_k_picks``; under the sample preset, ``sample`` = (count, seed) of each
    family's stratified sample (bench.sample). Families without a kernel for ``dtype``
    are left out (``dtype_skips``)."""
    fams = families_for(gpu, families, dtype)
    if preset == "sample":
        picks = {f.name: sample_configs(f, gpu, f.dtype_for(dtype), shapes, *sample) for f in fams}
        return [{"m": s.m, "n": s.n, "k": s.k, **c.as_dict()} for s in shapes for f in fams for c in picks[f.name][s]]
    per_family = {f.name: sweep_configs(f.name, gpu, f.dtype_for(dtype), preset) for f in fams}
    shared = {f.name: [] if preset == "paper" else f.shared_k_configs(gpu, f.dtype_for(dtype)) for f in fams}
    tasks = []
    for s in shapes:
        for fam in fams:
            for c in per_family[fam.name] + shared_k_picks(fam, shared[fam.name], gpu, s):
                tasks.append({"m": s.m, "n": s.n, "k": s.k, **c.as_dict()})
    return tasks


def configs_of(tasks: list[dict]) -> list[KernelConfig]:
    """The distinct kernel configurations of ``tasks``, in order."""
    out = {}
    for t in tasks:
        cfg = KernelConfig(**{f: t[f] for f in KernelConfig.__dataclass_fields__})
        out.setdefault(cfg.key(), cfg)
    return list(out.values())


def compile_pending(arch: str, pending: list[dict]) -> None:
    """Compile the kernels of the pending tasks into the disk cache, with progress; the
    worker then loads them from the cache (a kernel that fails is recorded when measured)."""
    build_all(configs_of(pending), arch, jobs=COMPILE_JOBS)


def _standin_factory(spec: str, gpu, settings: dict):
    """The measure function of the stand-in ``module:function`` (top level: picklable)."""
    module, _, name = spec.partition(":")
    return getattr(importlib.import_module(module), name)(gpu, **settings)


def measurer(gpu, settings: dict, prepare: bool = True):
    """(factory, context, prepare) of a sweep on this machine's GPU, or of the stand-in
    named by GEMMPERF_MEASURE_STANDIN (``module:function(gpu, **settings) -> measure``;
    for tests and dry runs of the workflow without a GPU). Without a CUDA driver or
    device this stops with the one-line "no GPU" message (hardware.NoGPU)."""
    spec = os.environ.get(STANDIN_ENV, "").strip()
    if spec:
        if not re.fullmatch(r"[A-Za-z_][\w.]*:[A-Za-z_]\w*", spec):
            raise UserError(f"{STANDIN_ENV}={spec!r}: expected module:function")
        context = {"gpu": gpu.slug, "device": gpu.name, "driver": "stand-in", "cuda": "stand-in"}
        return partial(_standin_factory, spec, gpu, settings), context, None
    arch = local_arch()
    context = measurement_context(gpu)
    return partial(Measurer, gpu, **settings), context, (partial(compile_pending, arch) if prepare else None)


def table_rows(tasks: list[dict], journal: str | Path, context: dict) -> list[dict]:
    """The journal's winning row of each task measured under ``context``, in task order."""
    rows, _ = read_rows(journal)
    best = best_rows(r for r in rows if all(r.get(k, "") == norm(v) for k, v in context.items()))
    return [best[k] for k in dict.fromkeys(task_key(t) for t in tasks) if k in best]


def default_journal(out: str | Path) -> Path:
    """The journal of a collect writing ``out`` when none is named: ``X.csv`` -> ``X.journal.csv``."""
    out = Path(out)
    return out.with_name(f"{out.stem}.journal{out.suffix or '.csv'}")


def run_collect(gpu, testlist, out, families: list[str], dtype: str, preset: str = "default",
                shard_of: tuple[int, int] = (0, 1), warm_l2: bool = False, rel_spread: float = 0.02,
                max_seconds: float = 2.0, timeout_s: float = 120.0, limit: int = 0,
                journal: str | Path | None = None, retry_failed: bool = False,
                sample: tuple[int, int] = (SAMPLE_COUNT, SAMPLE_SEED)) -> tuple[dict, int, int]:
    """Measure shard ``shard_of`` = (i, n) of a testlist into its journal (appends,
    resumes), then write ``out`` from the journal: the winning row of every task measured.
    A journal that does not exist yet starts from the rows of an existing ``out``.

    Returns (status counts of the rows measured now, tasks in this shard, rows in ``out``)."""
    i, n = shard_of
    shapes = read_testlist(testlist, dtype)
    # the sample is drawn over the whole list (its balance spans the shapes), then sharded
    mine = {(s.m, s.n, s.k) for s in shard(shapes, i, n)}
    tasks = [t for t in tasks_for(shapes, gpu, families, dtype, preset, sample) if (t["m"], t["n"], t["k"]) in mine]
    journal = Path(journal) if journal else default_journal(out)
    if journal.resolve() == Path(out).resolve():
        raise UserError(f"--journal {journal}: must not be the output (the output is rewritten from the journal)")
    seed(journal, out)
    settings = {"warm_l2": warm_l2, "rel_spread": rel_spread, "max_seconds": max_seconds}
    factory, context, prepare = measurer(gpu, settings)
    context = {**context, "warm_l2": warm_l2}
    counts = run_sweep(tasks, journal, factory, timeout_s=timeout_s, context=context, limit=limit,
                       retry_failed=retry_failed, prepare=prepare)
    written = write_table(table_rows(tasks, journal, context), out)
    return counts, len(tasks), written
