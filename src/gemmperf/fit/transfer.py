"""Transfer: one GPU's fitted ws-pipelined parameters carried to another GPU, with no
GEMM measured on the other.

The fit on the source GPU moved each value away from what its microbenchmarks or its
descriptor said; the transfer keeps that factor and applies it to what the target GPU's
microbenchmarks and descriptor say, each value by its unit:

- ``math_flops_per_us``, ``t_epilogue_us`` (``BY_MICROBENCH``): the fit's factor on the
  source's microbenchmark value, times the target's (the math rate at most the target's
  peak, ``constants.ceilings``). The epilogue goes by the whole epilogue-only kernel
  (``microbench_ratio``: its t_epilogue_us + t_init_us), not by its difference from the
  empty kernel, which would carry the empty kernel's difference (below) into it;
- ``t_init_us`` and ``load_latency_us`` (``AS_IS``): carried as they are. The launch
  microbenchmark times back-to-back empty kernels, 1.05 us on the H100 and 0.72 us on the
  H200, but kernels that do work do not show that difference: the math-only
  microbenchmarks (2-16 k-blocks, nothing from memory) take 1.008x the H100's time on the
  H200, the epilogue-only ones 1.007x (medians over the same tiles, bf16); the launch a
  GEMM pays is the same SM's at the same clock. The microbenchmarks' load latency is the
  intercept of an unloaded load sweep (0.09-0.14 us on the H100 and H200), the fit's the
  loaded TMA latency (0.35-0.41 us in the fits of step 26, the ring's extra latency
  apart): a ratio of the two means nothing;
- ws-pipelined's constants: the fit's factor on the source's descriptor default, times the
  target's default (per SM clock: the clock ratio; a fixed default: as it is). A constant
  a microbenchmark measures (``constants.scales_with``) scales with the ratio of the two
  GPUs' figures (``microbench_figures``) where both have them, else with its defaults':
  the DRAM and L2 rates with the measured copy rates (microbenchmark rows ``dram`` and
  ``l2``), ``cluster_sync_us`` with the measured cost of clusters (rows ``cluster``: on
  the H100 and the H200 the two fits' values, 1.36 and 0.64 us, are in the ratio the
  probe measured, 1.52 and 0.72 us). One that names a microbenchmarked parameter
  (``t_epilogue_us``: the epilogue's per-thread and TMA-store costs) scales with the
  same ratio as that parameter (the H200's epilogue-only kernels take 1.007x the H100's
  time in bf16). The DRAM rate stays at most the target's datasheet rate
  (``constants.ceilings``), as a fit on the target would keep it.

Where the source GPU measured a configuration, ``anchored`` gives a second answer: its
measured time times the ratio of the transfer's prediction to the source fit's, so only
the model's account of the change between the GPUs enters, not its error on the kernel.

The source's residual correction (``fit.residual``) carries too (``score``'s
``correction``): it learned where the analytical model is off for a kernel and a shape,
from configuration and model features that mean the same on another GPU of the same
architecture (tiles, waves, the ring's and the epilogue's shares), applied to the
transfer's prediction. Still no GEMM measured on the target.
"""

from __future__ import annotations

import dataclasses

import polars as pl

from ..errors import UserError
from ..models import ws_pipelined as W
from ..params import Params, ParamSet
from ..tables import CONFIG_KEY
from . import protocol as P
from .constants import ceilings
from .residual import Correction

BY_MICROBENCH = ("math_flops_per_us", "t_epilogue_us")
AS_IS = ("t_init_us", "load_latency_us")


def microbench_figures(microbench: pl.DataFrame | None) -> dict[str, float]:
    """What a GPU's microbenchmarks say about the constants that scale with them
    (``constants.scales_with``): "dram" and "l2", the fastest valid copy rate of that kind
    (B/us, read + written); "cluster", what running in clusters of two CTAs adds to one
    wave of one-k-block tiles (us: the mean over the cluster shapes of the time less the
    same tiles' alone, ``bench.microbench.cluster_tasks``). Figures without valid rows are
    absent."""
    if microbench is None or "kind" not in microbench.columns:
        return {}
    ok = microbench.filter((pl.col("status") == "ok") & (pl.col("time_us") > 0))
    copies = ok.filter(pl.col("kind").is_in(["dram", "l2"]))
    out = {kind: float(r.select((pl.col("bytes") / pl.col("time_us")).max()).item())
           for (kind,), r in copies.group_by("kind")}
    cost = _cluster_cost(ok.filter(pl.col("kind") == "cluster"))
    if cost is not None:
        out["cluster"] = cost
    return out


def _cluster_cost(rows: pl.DataFrame) -> float | None:
    """The mean, over the clustered rows, of their time less that of the unclustered row of
    the same family and dtype (None without a pair, or where clusters came out no slower)."""
    if rows.height == 0 or not {"cluster_m", "cluster_n"} <= set(rows.columns):
        return None
    size = pl.col("cluster_m") * pl.col("cluster_n")
    alone = rows.filter(size == 1).group_by("family", "dtype").agg(pl.col("time_us").mean().alias("alone_us"))
    pairs = rows.filter(size > 1).join(alone, on=["family", "dtype"])
    if pairs.height == 0:
        return None
    cost = float(pairs.select((pl.col("time_us") - pl.col("alone_us")).mean()).item())
    return cost if cost > 0 else None


def transfer(fitted: ParamSet, source_base: ParamSet, target_base: ParamSet,
             source_rates: dict[str, float] | None = None,
             target_rates: dict[str, float] | None = None) -> ParamSet:
    """``target_base`` (the target GPU's microbenchmark parameters, or its descriptor
    defaults) with every entry of ``fitted`` carried over as the module docstring says:
    ``source_base`` is what the fit started from on the source GPU (its microbenchmark
    parameters, or its descriptor defaults where the target has no microbenchmarks);
    ``*_rates``: ``microbench_figures`` of each GPU's microbenchmarks. The entries come out with
    source "transferred"."""
    if not fitted.entries:
        raise UserError(f"transfer: no fitted parameters of {fitted.gpu.slug} to carry over")
    d_src = W.default_constants(fitted.gpu).as_dict()
    d_dst = W.default_constants(target_base.gpu).as_dict()
    source_rates, target_rates = source_rates or {}, target_rates or {}
    figures = W.scales_with()
    by_param = {name: figure for name, figure in figures.items() if figure in BY_MICROBENCH}
    scale = {}
    for name, figure in figures.items():
        if figure is not None and figure in source_rates and figure in target_rates:
            scale[name] = target_rates[figure] / source_rates[figure]
        else:
            scale[name] = d_dst[name] / d_src[name] if d_src[name] > 0 else 1.0
    entries = dict(target_base.entries)
    for family, dtype in fitted.entries:
        src, base = fitted.get(family, dtype), source_base.get(family, dtype)
        dst = target_base.get(family, dtype)
        values = {name: getattr(src, name) * microbench_ratio(dst, base, name) for name in BY_MICROBENCH}
        values.update({name: getattr(src, name) for name in AS_IS})
        # a constant of the path a microbenchmarked parameter times scales with its ratio
        scale_here = {**scale, **{name: microbench_ratio(dst, base, figure) for name, figure in by_param.items()}}
        constants = {name: value * scale_here.get(name, 1.0) for name, value in src.constants.items()}
        for name, ceiling in ceilings(target_base, family, dtype).items():  # the target's peaks, as in a fit
            for held in (values, constants):
                if name in held:
                    held[name] = min(held[name], ceiling)
        entries[(family, dtype)] = dataclasses.replace(dst, **values, constants=constants, source="transferred",
                                                       quality={}, uncertainty={})
    return ParamSet(gpu=target_base.gpu, entries=entries)


def microbench_ratio(target: Params, source: Params, name: str) -> float:
    """What the target's microbenchmarks say of ``name`` over what the source's say (1
    where the source's gave 0). ``t_epilogue_us``: the epilogue-only kernel's whole time,
    t_epilogue_us + t_init_us (fit.microbench subtracts the empty kernel from it)."""
    if name == "t_epilogue_us":
        return _ratio(target.t_epilogue_us + target.t_init_us, source.t_epilogue_us + source.t_init_us)
    return _ratio(getattr(target, name), getattr(source, name))


def _ratio(value: float, base: float) -> float:
    return value / base if base > 0 else 1.0



def transfer_name(fitted: ParamSet, models: dict) -> str:
    """The transfer's name among ``baselines``' models (the one ``anchored`` scales)."""
    return next(name for name in models if name.startswith(f"transfer {fitted.gpu.slug} -> "))


def corrected_name(fitted: ParamSet, models: dict) -> str:
    """The name of the transfer with the source's residual correction (``score``)."""
    return f"{transfer_name(fitted, models)} + {fitted.gpu.slug} correction"


def baselines(fitted: ParamSet, source_base: ParamSet, target_base: ParamSet, transferred: ParamSet) -> dict:
    """name -> ParamSet of the transfer and what it is compared with, on the target GPU:
    its descriptor alone, its microbenchmarks alone, the source's fit as it is, the transfer."""
    src, dst = fitted.gpu.slug, target_base.gpu.slug
    return {
        "catalog defaults": ParamSet(gpu=target_base.gpu),
        f"{dst} microbenchmarks alone": target_base,
        f"{src} fitted parameters as they are": ParamSet(gpu=target_base.gpu, entries=dict(fitted.entries)),
        f"transfer {src} -> {dst}": transferred,
    }


def anchored(target: pl.DataFrame, source_rows: pl.DataFrame, source_fit: ParamSet,
             column: str = "predicted_us") -> pl.DataFrame:
    """``target`` (rows predicted for the target GPU in ``column``) with, for each
    configuration the source GPU measured (``source_rows``: time_us), ``source_us`` (its
    mean measured time), ``source_model_us`` (``source_fit``'s prediction on the source)
    and ``anchored_us``: the measured time times the model's ratio of the two GPUs,

        anchored = source measured x (target model / source model),

    no GEMM measured on the target. The model need not be right about either GPU, only
    about how the configuration's time changes from one to the other: what it gets wrong
    on both (the same kernel, the same shape) cancels. Nulls where the source did not
    measure the configuration."""
    src = W.predict(source_rows, source_fit)
    per_config = src.group_by(list(CONFIG_KEY)).agg(pl.col("time_us").mean().alias("source_us"),
                                                    pl.col("predicted_us").mean().alias("source_model_us"))
    out = target.join(per_config, on=list(CONFIG_KEY), how="left")
    return out.with_columns((pl.col("source_us") * pl.col(column) / pl.col("source_model_us")).alias("anchored_us"))


def score(models: dict[str, ParamSet], target_rows: pl.DataFrame, source_rows: pl.DataFrame | None = None,
          source: str = "source", source_fit: ParamSet | None = None,
          correction: Correction | None = None) -> tuple[pl.DataFrame, pl.DataFrame]:
    """(predictions, summary): the target's development rows (``fit.protocol.development``)
    predicted by ws-pipelined under each of ``models`` (name -> ParamSet), and where
    ``source_rows`` are given the source GPU's measured time of the same configuration
    ("<source> measured, reused") and, with ``source_fit`` (the source's fitted set, on
    its own GPU), the transfer of ``baselines`` anchored on it (``anchored``: "transfer
    anchored on <source> measured"); with ``source_fit`` and ``correction`` (the source's
    residual correction), the transfer corrected by it (``corrected_name``); scored on the
    rows every model answers (paired with a source row where there are source rows) per
    shape class (``protocol.summary``)."""
    tables = {name: W.predict(target_rows, pset) for name, pset in models.items()}
    preds = target_rows.with_columns([table.get_column("predicted_us").alias(name) for name, table in tables.items()])
    columns = {name: name for name in models}
    if correction is not None:
        if source_fit is None:
            raise UserError("transfer: a carried correction needs the source's fit (source_fit)")
        moved = transfer_name(source_fit, models)
        name = corrected_name(source_fit, models)
        corrected = correction.onto(models[moved].gpu.sms)(tables[moved])
        preds = preds.with_columns(corrected.get_column("corrected_us").alias(name))
        columns[name] = name
    if source_rows is not None:
        name = f"{source} measured, reused"
        reused = source_rows.group_by(list(CONFIG_KEY)).agg(pl.col("time_us").mean().alias(name))
        preds = preds.join(reused, on=list(CONFIG_KEY), how="left").filter(pl.col(name).is_not_null())
        columns[name] = name
        if source_fit is not None:
            name = f"transfer anchored on {source} measured"
            preds = anchored(preds, source_rows, source_fit, column=transfer_name(source_fit, models)).rename(
                {"anchored_us": name}).drop("source_us", "source_model_us")
            columns[name] = name
    return preds, P.summary(preds, columns=columns)
