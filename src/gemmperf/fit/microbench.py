"""Model parameters per (family, dtype) for one GPU, fitted from its microbenchmarks.

From the microbenchmarks (the kernels' own ablation modes, one CTA per SM, all SMs
busy), by least squares over every measured size rather than the paper's two points:

- T_INIT: the ``empty`` kernel's time per launch.
- load: ``load-only`` runs of S stages; time = t0 + S * (bytes_per_stage / BW + 2 * latency)
  (two loads per stage, A and B), so a linear fit on [1, S*bytes, S] gives 1/BW and the latency.
- math: ``math-only`` runs; time = t0 + S * (flops_per_stage / throughput + latency).
- T_EPILOGUE: ``epilogue-only`` time minus T_INIT.

Each parameter carries a one-sigma uncertainty from the fit's covariance (or the
spread of repeats), and each fit its R^2 and number of points.
"""

from __future__ import annotations

import numpy as np
import polars as pl

from ..errors import UserError
from ..hardware import GPU
from ..params import ParamSet, Params, default_params
from ..kernels import families_on
from ..problem import DTYPE_BYTES
from ..tables import MICROBENCH_REQUIRED, read_measurements


def default_paramset(gpu: GPU, families: list[str], dtype: str) -> ParamSet:
    """Descriptor-derived parameters for every family that runs on ``gpu``, marked default."""
    entries = {}
    for fam in families_on(gpu, families):
        fd = fam.dtype_for(dtype)
        entries[(fam.name, fd)] = default_params(gpu, fam.name, fd)
    return ParamSet(gpu=gpu, entries=entries)


def linear_fit(X: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray, float]:
    """Least squares y ~ X @ beta: coefficients, their standard errors, and R^2."""
    beta, *_ = np.linalg.lstsq(X, y, rcond=None)
    resid = y - X @ beta
    dof = max(len(y) - X.shape[1], 1)
    sigma2 = float(resid @ resid) / dof
    try:
        cov = sigma2 * np.linalg.inv(X.T @ X)
        se = np.sqrt(np.clip(np.diag(cov), 0, None))
    except np.linalg.LinAlgError:
        se = np.full(X.shape[1], np.nan)
    ss_tot = float(((y - y.mean()) ** 2).sum())
    r2 = 1.0 - float(resid @ resid) / ss_tot if ss_tot > 0 else 1.0
    return beta, se, r2


def fit_family(mb: pl.DataFrame, gpu: GPU, family: str, dtype: str) -> Params:
    """Fit one (family, dtype) from its microbenchmark rows (status ok only)."""
    rows = mb.filter((pl.col("family") == family) & (pl.col("dtype") == dtype) & (pl.col("status") == "ok"))
    base = default_params(gpu, family, dtype)
    by_kind = {kind: rows.filter(pl.col("kind") == kind) for kind in ("init", "epilogue", "load", "math")}
    missing = [k for k, df in by_kind.items() if df.height == 0]
    if missing:
        raise UserError(f"microbenchmarks of {family}/{dtype} lack {', '.join(missing)} rows")
    unc, quality = {}, {}

    init = by_kind["init"]["time_us"].to_numpy()
    t_init = float(np.median(init))
    unc["t_init_us"] = float(np.std(init, ddof=1)) if init.size > 1 else float("nan")

    epi = by_kind["epilogue"]["time_us"].to_numpy()
    t_epi = max(float(np.median(epi)) - t_init, 0.0)
    unc["t_epilogue_us"] = float(np.hypot(np.std(epi, ddof=1) if epi.size > 1 else 0.0, unc["t_init_us"]))

    nbytes = DTYPE_BYTES[dtype]
    ld = by_kind["load"]
    S = ld["k_stages"].to_numpy().astype(float)
    stage_bytes = ((ld["tile_m"] + ld["tile_n"]) * ld["tile_k"]).to_numpy() * nbytes
    beta, se, r2 = linear_fit(np.column_stack([np.ones_like(S), S * stage_bytes, S]), ld["time_us"].to_numpy())
    if beta[1] <= 0:
        raise UserError(f"load microbenchmarks of {family}/{dtype} do not grow with bytes: cannot fit a bandwidth")
    load_bw = 1.0 / beta[1]
    load_lat = max(beta[2] / 2.0, 0.0)
    unc["load_bytes_per_us"] = float(se[1] / beta[1] ** 2)
    unc["load_latency_us"] = float(se[2] / 2.0)
    quality["load_r2"], quality["load_points"] = r2, float(ld.height)

    mt = by_kind["math"]
    S = mt["k_stages"].to_numpy().astype(float)
    stage_flops = (2 * mt["tile_m"] * mt["tile_n"] * mt["tile_k"]).to_numpy().astype(float)
    beta, se, r2 = linear_fit(np.column_stack([np.ones_like(S), S * stage_flops, S]), mt["time_us"].to_numpy())
    if beta[1] <= 0:
        raise UserError(f"math microbenchmarks of {family}/{dtype} do not grow with FLOPs: cannot fit a throughput")
    math_thr = 1.0 / beta[1]
    math_lat = max(beta[2], 0.0)
    unc["math_flops_per_us"] = float(se[1] / beta[1] ** 2)
    unc["math_latency_us"] = float(se[2])
    quality["math_r2"], quality["math_points"] = r2, float(mt.height)

    return base.replace(
        t_init_us=t_init,
        t_epilogue_us=t_epi,
        load_bytes_per_us=float(load_bw),
        load_latency_us=float(load_lat),
        math_flops_per_us=float(math_thr),
        math_latency_us=float(math_lat),
        source="fitted",
        uncertainty=unc,
        quality=quality,
    )


def fit_paramset(gpu: GPU, microbench_csv: str, families: list[str], dtype: str, log=print) -> ParamSet:
    """Fitted parameters for every family with microbenchmarks; defaults for the rest
    (``log``: where each family's line goes)."""
    mb = read_measurements(microbench_csv, required=MICROBENCH_REQUIRED)
    pset = default_paramset(gpu, families, dtype)
    for (family, fd) in list(pset.entries):
        if mb.filter((pl.col("family") == family) & (pl.col("dtype") == fd)).height:
            pset.entries[(family, fd)] = fit_family(mb, gpu, family, fd)
            p = pset.entries[(family, fd)]
            log(f"fitted {family}/{fd} from microbenchmarks: t_init {p.t_init_us:.2f} us, t_epilogue "
                  f"{p.t_epilogue_us:.2f} us, load {p.load_bytes_per_us / 1e3:.1f} GB/s per SM, math "
                  f"{p.math_flops_per_us / 1e6:.2f} TFLOP/s per SM")
        else:
            log(f"no microbenchmarks for {family}/{fd}: keeping descriptor defaults")
    return pset


def with_dtypes(pset: ParamSet, microbench_csv: str | None, families: list[str], dtypes) -> ParamSet:
    """``pset`` with the parameters of ``families`` in ``dtypes`` added where it has none:
    fitted from ``microbench_csv``, descriptor defaults without one (a fit with teacher rows
    of another dtype fits their constants from these)."""
    entries = dict(pset.entries)
    for dtype in dtypes:
        more = (fit_paramset(pset.gpu, microbench_csv, families, dtype) if microbench_csv
                else default_paramset(pset.gpu, families, dtype))
        entries.update({key: p for key, p in more.entries.items() if key not in entries})
    return ParamSet(pset.gpu, entries, dict(pset.overrides))
