"""Tilings table: the Z3 choice per shape and family, next to measurements and nvMMH.

``tilings_table(shapes, gpu, pset, families, model, measurements)`` has one row per
(shape, family that runs on the GPU): the Z3-optimal configuration, its predicted time,
MATH wait and limiter, the runner-up tiling, the solve time, and where measurements
exist the measured time of the choice, the measured best configuration and

    regret = measured(choice) / measured(best) - 1.

Measurements are the measure stage's table (columns m, n, k, family, dtype, tile_m,
tile_n, tile_k, stages, cluster_m, cluster_n, persistent, raster, mode, status,
time_us, ...): only rows with status == "ok" (and mode == "full" where a mode column
exists) count; repeated rows of one configuration are reduced to their median.

Search space per row (``space``): "legal" is the family's whole legal space;
"measured" is the configurations measured ok for that shape (so that the choice has a
measured time and the regret is defined); "auto" (the default) is "measured" where the
shape has measurements and "legal" elsewhere. The ``space`` column says which one.

A progress bar over the shapes (``gemmperf.progress.bar``) shows where a long testlist
stands; a shape listed twice is solved once.

If NVIDIA's nvMatmulHeuristics answers (the optional extra ``nvmmh``, never required;
``models.nvmmh`` calls it), its own top configuration for the shape and family and its
runtime estimate are added as nvmmh_* columns (``NVMMH_COLUMNS``), empty where it has none.
"""

from __future__ import annotations

import polars as pl

from ..errors import UserError
from ..hardware import GPU
from ..kernels import families_on, get_family
from ..models import nvmmh
from ..params import ParamSet
from ..problem import FAMILIES, KernelConfig, Shape
from ..progress import bar
from ..tables import TILING_COLUMNS, measured_configs
from .encode import skeleton
from .pipelined import pipelined_tables
from .solver import solve
from .space import DEFAULT_MODEL, family_space

SPACES = ("auto", "legal", "measured")


# ------------------------------------------------------------------ measurements


def _config_of(row: dict, family: str, dtype: str) -> KernelConfig:
    return KernelConfig(family=family, dtype=dtype, **{k: row[k] for k in TILING_COLUMNS})


def regret_row(choice: KernelConfig, meas: pl.DataFrame | None) -> dict:
    """measured_us (choice), best measured config and time, regret, for one shape x family.

    ``meas``: measured_configs() rows of that shape and family (or None / empty).
    """
    out = {"measured_us": None, "best_measured_us": None, "regret": None, "n_measured": 0,
           **{f"best_{k}": None for k in TILING_COLUMNS}}
    if meas is None or meas.height == 0:
        return out
    out["n_measured"] = meas.height
    best = meas.sort(["time_us", *TILING_COLUMNS]).row(0, named=True)
    out["best_measured_us"] = best["time_us"]
    out.update({f"best_{k}": best[k] for k in TILING_COLUMNS})
    hit = meas.filter(*(pl.col(k) == getattr(choice, k) for k in TILING_COLUMNS))
    if hit.height:
        out["measured_us"] = hit.get_column("time_us")[0]
        out["regret"] = out["measured_us"] / out["best_measured_us"] - 1.0
    return out


def mean_regret(table: pl.DataFrame) -> float | None:
    """Average regret over the rows that have one (None if none)."""
    if "regret" not in table.columns:
        return None
    r = table.get_column("regret").drop_nulls()
    return float(r.mean()) if r.len() else None


# ------------------------------------------------------------------ nvMatmulHeuristics (optional)

NVMMH_COLUMNS = ("nvmmh_cta", "nvmmh_cluster", "nvmmh_stages", "nvmmh_kernel", "nvmmh_runtime_us")


def nvmmh_available() -> bool:
    """Whether nvMatmulHeuristics answers here (models.nvmmh owns the library)."""
    return nvmmh.unavailable() is None


def nvmmh_top(shape: Shape, gpu: GPU, family: str = "ws-hopper") -> dict | None:
    """nvMatmulHeuristics' top configuration for ``shape`` and ``family`` on ``gpu`` and
    its runtime estimate (``models.nvmmh.top_configs``), or None where it has no answer
    (package absent, a GPU, family or dtype it does not model)."""
    top = nvmmh.top_configs(shape, gpu, family)
    if isinstance(top, nvmmh.Unavailable) or not top:
        return None
    t = top[0]
    return {"nvmmh_cta": f"{t['tile_m']}x{t['tile_n']}x{t['tile_k']}",
            "nvmmh_cluster": f"{t['cluster_m']}x{t['cluster_n']}", "nvmmh_stages": t["stages"],
            "nvmmh_kernel": t["kernel"], "nvmmh_runtime_us": t["nvmmh_us"]}


# ------------------------------------------------------------------ the table


def tilings_table(shapes: list[Shape], gpu: GPU, pset: ParamSet, families: list[str] | None = None,
                  model: str = DEFAULT_MODEL, measurements: pl.DataFrame | None = None,
                  space: str = "auto", dtype: str | None = None, runner_up: bool = True,
                  nvmmh: bool | None = None) -> pl.DataFrame:
    """One row per shape x family (families that run on ``gpu``): see the module doc."""
    if space not in SPACES:
        raise UserError(f"space {space!r}: expected one of {', '.join(SPACES)}")
    families = list(families or FAMILIES)
    unknown = [f for f in families if f not in FAMILIES]
    if unknown:
        raise UserError(f"family {unknown[0]!r}: known families are {', '.join(FAMILIES)}")
    fams = [f.name for f in families_on(gpu, families)]
    if not fams:
        raise UserError(f"none of the families {', '.join(families)} runs on {gpu.slug} ({gpu.arch})")
    meas = measured_configs(measurements) if measurements is not None else None
    by_shape: dict = {}
    if meas is not None:
        for key, part in meas.partition_by(["m", "n", "k", "family", "dtype"], as_dict=True).items():
            by_shape[key] = part
    use_nv = nvmmh_available() if nvmmh is None else nvmmh
    rows, done = [], {}
    with bar(total=len(shapes), desc=f"optimize {model}", unit="shape") as progress:
        for lo in range(0, len(shapes), CHUNK):
            jobs = [_job(shape, fam, dtype, gpu, space, by_shape) for shape in shapes[lo:lo + CHUNK] for fam in fams]
            tables = _legal_tables(jobs, gpu, pset, model, done)
            for shp, fam, cand, label, m_rows in jobs:
                key = (shp, fam, None if cand is None else tuple(cand))
                sol = done.get(key) or solve(shp, fam, gpu, pset, model, space=cand, runner_up=runner_up,
                                             table=tables.get((shp, fam)))
                done[key] = sol  # a shape listed twice is solved once
                rows.append(_row(sol, label, m_rows, gpu, use_nv))
            progress.update(len(shapes[lo:lo + CHUNK]))
    return pl.DataFrame(rows, infer_schema_length=None)


CHUNK = 32  # shapes whose ws-pipelined tables are built together
# configurations x shapes of one evaluate() call at most (ws-hopper's 20616 configurations:
# 7 shapes a call; measured, 32 shapes a call were 1.5-2x slower per shape)
TABLE_CONFIGS = 150_000


def _job(shape: Shape, fam: str, dtype: str | None, gpu: GPU, space: str, by_shape: dict) -> tuple:
    """(shape in the family's dtype, family, searched configurations (None: the legal
    space), the space's label, the shape's measured rows) of one table row."""
    d = get_family(fam).dtype_for(dtype or shape.dtype)
    shp = Shape(shape.m, shape.n, shape.k, d)
    m_rows = by_shape.get((shp.m, shp.n, shp.k, fam, d))
    cand, label = None, "legal"
    if space in ("auto", "measured") and m_rows is not None and m_rows.height:
        legal = set(family_space(fam, gpu, d))
        cand = [c for c in (_config_of(r, fam, d) for r in m_rows.iter_rows(named=True)) if c in legal]
        label = "measured"
        if not cand:
            cand, label = None, "legal"
    return shp, fam, cand, label, m_rows


def _legal_tables(jobs: list, gpu: GPU, pset: ParamSet, model: str, done: dict) -> dict:
    """ws-pipelined: the tables of the jobs that search the legal space, one evaluate()
    call per family and dtype ({(shape, family): PipeTable})."""
    if model != "ws-pipelined":
        return {}
    todo: dict = {}
    for shp, fam, cand, _, _ in jobs:
        if cand is None and (shp, fam, None) not in done:
            todo.setdefault((fam, shp.dtype), []).append(shp)
    out = {}
    for (fam, d), shps in todo.items():
        space = family_space(fam, gpu, d)
        index = skeleton(space, model, gpu.smem_per_block).index
        shps = list(dict.fromkeys(shps))
        step = max(1, TABLE_CONFIGS // len(space))  # a big space's arrays stay in cache
        for lo in range(0, len(shps), step):
            part = shps[lo:lo + step]
            out.update({(s, fam): t for s, t in zip(part, pipelined_tables(part, space, pset, index))})
    return out


def _row(sol, label: str, m_rows, gpu: GPU, use_nv: bool) -> dict:
    shp, c, r = sol.shape, sol.config, sol.runner_up
    row = {"m": shp.m, "n": shp.n, "k": shp.k, "dtype": shp.dtype, "family": sol.family, "model": sol.model,
           **{k: getattr(c, k) for k in TILING_COLUMNS},
           "predicted_us": sol.predicted_us, "math_wait_us": sol.math_wait_us,
           "limiter": sol.breakdown.get("limiter"),
           "runner_up_tile": None if r is None else f"{r.config.tile_m}x{r.config.tile_n}x{r.config.tile_k}",
           "runner_up_stages": None if r is None else r.config.stages,
           "runner_up_us": None if r is None else r.predicted_us,
           "solve_s": sol.solve_s, "runner_up_s": sol.runner_up_s,
           "space": label, "n_configs": sol.n_configs}
    row.update(regret_row(c, m_rows))
    if use_nv:
        row.update(nvmmh_top(shp, gpu, sol.family) or dict.fromkeys(NVMMH_COLUMNS))
    return row
