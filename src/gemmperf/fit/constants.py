"""Fit ws-pipelined's remaining constants on kernel measurements (training folds only).

The microbenchmarks fix T_INIT, T_EPILOGUE and the load/math rates (``fit.microbench``);
what they cannot see (shared DRAM and L2 bandwidth, the shared-memory rate, per-tile
and per-CTA overheads, the L2 window) is fitted here, by robust nonlinear least squares
on log(predicted / measured) over ``status == ok`` full-mode rows.

Each fitted quantity q is q0 * exp(theta) with q0 its current value (microbench fit or
descriptor default); theta is bounded to +-ln(8) and pulled to 0 by a ridge prior of
weight ``prior`` per parameter, so constants the data do not constrain stay at their
physical defaults instead of wandering. A rate with a hard physical ceiling stays under it
(``ceilings``: the tensor cores' peak at the descriptor's clock). One-sigma uncertainties come from the Jacobian
at the optimum (Gauss-Newton covariance scaled by the residual variance).

Only ever call this with training rows: ``fit.accuracy`` calls it inside each fold and,
for the shipped parameters, on every row except the held-out testlist.
"""

from __future__ import annotations

import numpy as np
import polars as pl

from ..errors import UserError
from ..models import ws_pipelined as W
from ..params import PARAM_NAMES, ParamSet, default_params
from ..progress import bar
from ..tables import canonical_order, valid_rows

# the microbenchmark parameters the kernel data refit, then every constant of the model
# marked fitted, in the order of PipelinedConstants' fields
FIT_NAMES = ("math_flops_per_us", "t_epilogue_us", "load_latency_us", "t_init_us") + W.FITTED
BOUND = float(np.log(8.0))
# rows per model evaluation in the Jacobian's batches (_residuals): larger batches no
# longer save per-call cost and start to leave the CPU's caches
BATCH_ROWS = 65536


def ceilings(pset: ParamSet, family: str, dtype: str) -> dict[str, float]:
    """Fitted values no kernel can exceed, by name: ``math_flops_per_us`` at most the
    descriptor's peak (tensor-core, or FMA for simt, FLOP per clock per SM x the maximum
    SM clock), ``dram_eff_bytes_per_us`` at most the descriptor's DRAM rate. Above them
    the fit would be buying accuracy with an impossible rate, paid back by other terms
    (issue 17 steps 9 and 12)."""
    out = {"dram_eff_bytes_per_us": pset.gpu.dram_bytes_per_s / 1e6}
    try:
        out["math_flops_per_us"] = default_params(pset.gpu, family, dtype).math_flops_per_us
    except UserError:  # no rate of this dtype on this GPU: no math ceiling to keep
        pass
    return out


def _bounds(names, base: dict, ceiling: dict) -> tuple[np.ndarray, np.ndarray]:
    """(lo, hi) of theta per name: +-BOUND, hi lowered to a ceiling (and lo with it where
    the starting value is already above the ceiling)."""
    hi = np.array([min(BOUND, float(np.log(ceiling[n] / base[n]))) if n in ceiling else BOUND for n in names])
    lo = np.minimum(np.full(len(names), -BOUND), hi - 1e-9)
    return lo, hi


def _current(pset: ParamSet, family: str, dtype: str) -> dict[str, float]:
    p = pset.get(family, dtype)
    values = {name: float(getattr(p, name)) for name in PARAM_NAMES}
    values.update(W.constants_for(pset, family, dtype).as_dict())
    return values


def with_values(pset: ParamSet, family: str, dtype: str, values: dict[str, float],
                uncertainty: dict | None = None, quality: dict | None = None) -> ParamSet:
    """A copy of ``pset`` whose (family, dtype) entry carries ``values``."""
    p = pset.get(family, dtype)
    core = {k: float(v) for k, v in values.items() if k in PARAM_NAMES}
    constants = {**(p.constants or {}), **{k: float(v) for k, v in values.items() if k in W.CONSTANTS}}
    unc = {**p.uncertainty, **(uncertainty or {})}
    qual = {**p.quality, **(quality or {})}
    entries = dict(pset.entries)
    entries[(family, dtype)] = p.replace(**core, constants=constants, uncertainty=unc, quality=qual)
    return ParamSet(gpu=pset.gpu, entries=entries, overrides=dict(pset.overrides))


def fit_constants(meas: pl.DataFrame, pset: ParamSet, names=FIT_NAMES, prior: float = 0.02,
                  model_options: dict | None = None, loss: str = "soft_l1",
                  progress: bool = False) -> tuple[ParamSet, dict]:
    """Fit ``names`` per (family, dtype) of ``meas``; returns (new ParamSet, report).

    The report maps "family/dtype" to {values, uncertainty, rmse_log, n}. ``progress``:
    a bar of the model evaluations (the tiles and waves, ``W.grid_of``, are computed
    once per (family, dtype): only the constants vary).
    """
    from scipy.optimize import least_squares

    rows = canonical_order(valid_rows(meas))
    if rows.height == 0:
        raise UserError("fit_constants: no valid (status ok, full mode) measurements to fit")
    names = tuple(names)
    unknown = [n for n in names if n not in PARAM_NAMES and n not in W.CONSTANTS]
    if unknown:
        raise UserError(f"fit_constants: unknown constant(s) {', '.join(unknown)}")
    report = {}
    out = pset
    evals = bar(desc="fit constants", unit="eval") if progress else None
    for family, dtype in rows.select("family", "dtype").unique().sort("family", "dtype").iter_rows():
        sub = rows.filter((pl.col("family") == family) & (pl.col("dtype") == dtype))
        _, arr = W.prepare(sub, out)
        grid = W.grid_of(arr)  # the constants vary, the tiles and waves do not
        y = np.log(sub.get_column("time_us").to_numpy().astype(float))
        base = _current(out, family, dtype)
        # a constant that enters no row's prediction (split-K's on rows without it) keeps its value
        fit_names = [n for n in names if base.get(n, 0.0) > 0 and (n not in W.CONSTANTS or W.rows_of(n, arr))]

        residuals, batch = _residuals(arr, grid, y, base, fit_names, prior, model_options, evals)
        lo, hi = _bounds(fit_names, base, ceilings(out, family, dtype))
        # start inside the bounds: least_squares does not move a parameter started on one
        x0 = np.maximum(np.minimum(0.0, hi - 0.01), (lo + hi) / 2)
        res = least_squares(residuals, x0, bounds=(lo, hi), loss=loss, f_scale=0.05,
                            x_scale=1.0, diff_step=1e-3, max_nfev=200 * max(len(fit_names), 1), workers=batch)
        r = res.fun[: len(y)]
        values = {name: base[name] * float(np.exp(t)) for name, t in zip(fit_names, res.x)}
        dof = max(len(y) - len(fit_names), 1)
        s2 = float(r @ r) / dof
        try:
            cov = np.linalg.pinv(res.jac.T @ res.jac) * s2
            sd = np.sqrt(np.clip(np.diag(cov), 0, None))
        except np.linalg.LinAlgError:
            sd = np.full(len(fit_names), np.nan)
        unc = {name: values[name] * float(s) for name, s in zip(fit_names, sd)}
        quality = {"kernel_fit_rmse_log": float(np.sqrt(np.mean(r**2))), "kernel_fit_points": float(len(y))}
        out = with_values(out, family, dtype, values, unc, quality)
        report[f"{family}/{dtype}"] = {"values": values, "uncertainty": unc, **quality, "nfev": int(res.nfev),
                                       "fitted_from": "training measurements"}
    if evals is not None:
        evals.close()
    return out, report


def _residuals(arr: dict, grid, y: np.ndarray, base: dict, fit_names: list[str], prior: float, model_options,
               evals=None):
    """(residuals of one theta, least_squares' ``workers``): the log errors of the rows
    ``arr`` (tile grid ``grid``, measured log times ``y``) with the constants ``fit_names``
    at base * exp(theta), then the ridge prior's sqrt(prior) * theta.

    The finite-difference Jacobian evaluates one theta per constant. Every row's
    prediction depends on its own inputs only, so ``workers(fun, thetas)`` (equal to
    ``map(fun, thetas)``) evaluates them all at once, the rows repeated once per theta:
    one model evaluation of (constants x rows) instead of one per constant, which is most
    of a fit's time on small training sets, where numpy's per-call cost dominates."""
    n = len(y)
    tiled = {1: (arr, grid)}

    def of(thetas: np.ndarray) -> np.ndarray:
        p = len(thetas)
        if p not in tiled:
            # the grid is row-wise: the repeated rows' grid is the rows' grid, taken
            copies = {name: np.tile(v, p) for name, v in arr.items()}
            tiled[p] = (copies, W.take(grid, np.tile(np.arange(n), p)))
        a, g = tiled[p]
        a = dict(a)
        for j, name in enumerate(fit_names):
            a[name] = np.repeat(base[name] * np.exp(thetas[:, j]), n)
        pred = W.evaluate(**a, grid=g, model_options=model_options)["predicted_us"].reshape(p, n)
        if evals is not None:
            evals.update(p)
        return np.hstack([np.log(np.maximum(pred, 1e-9)) - y, np.sqrt(prior) * thetas])

    def residuals(theta):
        return of(np.asarray(theta, dtype=float)[None, :])[0]

    def batch(fun, thetas):
        thetas = np.array([np.asarray(t, dtype=float) for t in thetas]).reshape(-1, len(fit_names))
        per = max(BATCH_ROWS // max(n, 1), 1)  # thetas per evaluation
        return [r for i in range(0, len(thetas), per) for r in of(thetas[i:i + per])]

    return residuals, batch
