"""What every answer of ``predict``, ``simulate`` and ``optimize`` is checked for before
it is given: a configuration some kernel implements (or an explicit what-if, flagged), a
shape whose operands fit in the GPU's memory, finite positive times; and the statement of
where its parameters came from.
"""

from __future__ import annotations

import math
import os
from datetime import datetime, timezone

import polars as pl

from ..errors import UserError
from ..hardware import GPU
from ..kernels import check_legal
from ..params import ParamSet
from ..problem import CONFIG_COLUMNS, DEFAULT_GROUP_M, DTYPE_BYTES, KernelConfig
from .explain import dtype_words
from .resolve import RESULTS, pairs_dtype, run_name

# The models count tiles and k-blocks in 64-bit integers; M*N*K beyond this would
# overflow them (a what-if past the GPU's memory is still held to it).
ARITHMETIC_LIMIT = 2**62
WHAT_IF_HINT = "(--what-if predicts it anyway, flagged)"


# ------------------------------------------------------------------ legality and sizes


def config_reason(cfg: KernelConfig, gpu: GPU) -> str | None:
    """None if a kernel implements ``cfg`` on ``gpu`` and the models can time it, else why not."""
    if cfg.mode != "full":
        return f"mode {cfg.mode}: the models time the whole kernel (mode full), not an ablation mode"
    return check_legal(cfg, gpu)


def operand_bytes(m: int, n: int, k: int, dtype: str, out_dtype: str | None = None) -> int:
    """Bytes of A (MxK), B (NxK) and C (MxN) at their dtypes, exact for any size."""
    half = lambda d: int(DTYPE_BYTES[d] * 2)  # noqa: E731 -- half-bytes per element (fp4 is 0.5 B)
    return ((m * k + n * k) * half(dtype) + m * n * half(out_dtype or dtype)) // 2


def shape_reason(m: int, n: int, k: int, dtype: str, gpu: GPU, out_dtype: str | None = None) -> str | None:
    """None if A, B and C of the shape fit in the GPU's memory, else why not."""
    need = operand_bytes(m, n, k, dtype, out_dtype)
    if need > gpu.memory_bytes:
        return (f"shape {m}x{n}x{k} {dtype}: A, B and C need {need / 1e9:.4g} GB, more than the "
                f"{gpu.memory_bytes / 1e9:.4g} GB of {gpu.slug}")
    return None


def arithmetic_reason(m: int, n: int, k: int) -> str | None:
    """None if the models' integer arithmetic holds the shape, else why not (even in what-if)."""
    if m * n * k > ARITHMETIC_LIMIT:
        return f"shape {m}x{n}x{k}: M*N*K exceeds 2^62, beyond the models' 64-bit arithmetic"
    return None


def describe(cfg: KernelConfig) -> str:
    """Short name of a configuration for messages: 'ws-hopper bf16 128x128x64, 4 stages',
    'ws-hopper fp8 (e4m3 in, bf16 out) 64x128x128, 4 stages, TMA epilogue, split-K 4'."""
    extra = [f"cluster {cfg.cluster_m}x{cfg.cluster_n}"] if (cfg.cluster_m, cfg.cluster_n) != (1, 1) else []
    extra += ["TMA epilogue"] if cfg.epilogue == "tma" else []
    extra += ["ping-pong"] if cfg.schedule == "pingpong" else []
    extra += ["persistent"] if cfg.persistent else []
    extra += [f"{cfg.persistent_ctas} CTAs"] if cfg.persistent_ctas else []
    extra += [f"groups of {cfg.group_m}"] if cfg.raster == "grouped" and cfg.group_m != DEFAULT_GROUP_M else []
    extra += [f"split-K {cfg.split_k}"] if cfg.split_k > 1 else []
    extra += ["stream-K"] if cfg.stream_k else []
    extra += [f"mode {cfg.mode}"] if cfg.mode != "full" else []
    return (f"{cfg.family} {dtype_words(cfg.dtype)} {cfg.tile_m}x{cfg.tile_n}x{cfg.tile_k}, {cfg.stages} stages"
            + "".join(f", {e}" for e in extra))


def row_reasons(table: pl.DataFrame, gpu: GPU) -> list[str | None]:
    """Per row of a configuration table: None, or why no kernel implements it or its
    operands do not fit (configurations and shapes are each checked once)."""
    by_config: dict[tuple, str | None] = {}
    by_shape: dict[tuple, str | None] = {}
    cols = [c for c in CONFIG_COLUMNS if c in table.columns]
    out_dtype = table.get_column("out_dtype") if "out_dtype" in table.columns else table.get_column("dtype")
    reasons = []
    for (m, n, k, *values), od in zip(table.select("m", "n", "k", *cols).iter_rows(), out_dtype):
        key = tuple(values)
        if key not in by_config:
            by_config[key] = config_reason(KernelConfig(**dict(zip(cols, values))), gpu)
        fields = dict(zip(cols, values))
        skey = (m, n, k, fields.get("dtype", "bf16"), od)
        if skey not in by_shape:
            by_shape[skey] = shape_reason(m, n, k, skey[3], gpu, od)
        both = [r for r in (by_config[key], by_shape[skey]) if r]
        reasons.append("; ".join(both) if both else None)
    return reasons


def check_arithmetic(table: pl.DataFrame) -> None:
    """Refuse (even in what-if) a shape the models' arithmetic cannot hold."""
    for m, n, k in table.select("m", "n", "k").unique().iter_rows():
        reason = arithmetic_reason(m, n, k)
        if reason:
            raise UserError(reason)


def check_times(out: pl.DataFrame) -> None:
    """Every predicted_us is finite and > 0; else one line naming the model and row
    (an internal error of a model, never an answer)."""
    t = pl.col("predicted_us")
    bad = out.filter(t.is_null() | ~t.is_finite() | (t <= 0))
    if bad.height:
        r = bad.row(0, named=True)
        raise UserError(f"internal error: model {r.get('model', '?')} gave predicted_us = {r['predicted_us']} "
                        f"for {r['m']}x{r['n']}x{r['k']} (please report it); no answer given")


# ------------------------------------------------------------------ parameter source


def _when(pset: ParamSet) -> str:
    """The fit's date: its fitted_at, else the file's modification time (said so)."""
    if pset.fitted_at:
        try:
            return datetime.fromisoformat(pset.fitted_at).strftime("%Y-%m-%d %H:%M UTC")
        except ValueError:
            return pset.fitted_at
    try:
        mtime = os.path.getmtime(pset.origin)
    except OSError:
        return "an unknown date"
    stamp = datetime.fromtimestamp(mtime, timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    return f"{stamp} (the file's date; it records none)"


def params_source(pset: ParamSet, pairs=None, short: bool = False) -> str:
    """Where the parameters of ``pairs`` ((family, dtype); default all entries) came from:
    'fitted on DATE from FILE', 'transferred: ...' (``fit.transfer``), 'descriptor defaults
    (no results/<gpu>/params.json)', or several named per family; ``--set`` overrides appended."""
    pairs = sorted(set(pairs)) if pairs is not None else sorted(pset.entries)
    fitted = [p for p in pairs if p in pset.entries and pset.entries[p].source == "fitted"]
    moved = [p for p in pairs if p in pset.entries and pset.entries[p].source == "transferred"]
    written = [p for p in pairs if p in pset.entries and p not in fitted and p not in moved]
    missing = [p for p in pairs if p not in pset.entries]
    names = lambda ps: ", ".join(f"{f} {d}" for f, d in ps)  # noqa: E731
    parts = []
    if fitted:
        parts.append(f"fitted on {_when(pset)} from {pset.origin}"
                     + (f" ({names(fitted)})" if written or missing else ""))
    if moved:
        parts.append(f"transferred: {pset.origin}" + (f" ({names(moved)})" if written or missing or fitted else ""))
    if written:
        parts.append(f"descriptor defaults written to {pset.origin} on {_when(pset)} ({names(written)})")
    if missing or not pairs:
        where = (f"{pset.origin} has no entry for {names(missing)}" if pset.origin
                 else f"no {RESULTS / run_name(pset.gpu.slug, pairs_dtype(pairs)) / 'params.json'}")
        parts.append(f"descriptor defaults ({where})")
    if pset.overrides:
        parts.append("--set " + " ".join(f"{k}={v:g}" for k, v in sorted(pset.overrides.items())))
    text = "; ".join(parts)
    if short:
        text = text.replace(" (the file's date; it records none)", "")
    return text


def table_pairs(table: pl.DataFrame) -> list[tuple[str, str]]:
    return [tuple(r) for r in table.select("family", "dtype").unique().iter_rows()]


def check_events(events: list[dict]) -> None:
    """Every simulated bar starts at a finite time >= 0 and ends no earlier."""
    for e in events:
        if not (math.isfinite(e["start_us"]) and math.isfinite(e["end_us"]) and 0 <= e["start_us"] <= e["end_us"]):
            raise UserError(f"internal error: the simulation gave a bar {e} (please report it); no answer given")
