"""Answers in words: why a prediction is what it is (``predict --explain``), the one-line
answer of ``optimize --shape``, and the measured best of a shape where results hold it."""

from __future__ import annotations

from pathlib import Path

import polars as pl

from ..errors import UserError
from ..hardware import GPU
from ..problem import CONFIG_COLUMNS, DEFAULT_GROUP_M, OUT_DTYPES, KernelConfig
from ..tables import read_measurements, valid_rows
from .resolve import RESULTS, pairs_dtype, run_name, shipped_data_dir

# What each limiter name of the models means, in words.
LIMITER_WORDS = {
    "load": "load bound: moving the A and B k-blocks from DRAM sets the pace",
    "dram": "DRAM bound: reading A and B and writing C at the GPU's bandwidth sets the pace",
    "dma": "load bound: the DMA warp's transfers set the pace",
    "l2": "L2 bound: the L2 bandwidth the wave's CTAs share sets the pace of the loads",
    "math": "math bound: the multiply-accumulates set the pace",
    "smem": "shared-memory bound: the ring's reads and writes outpace the tensor cores",
    "latency": "latency bound: the ring is too shallow to hide a slot's round trip (more stages would help)",
    "epilogue": "epilogue bound: storing a C tile takes longer than its K loop",
    "writes": "write bound: C's stores wait for the DRAM's write rate longer than a tile's K loop hides them "
              "(C's bytes over the write rate are the floor)",
}
# The element type of an input dtype whose name does not say it (fp8 is e4m3).
ELEMENT_TYPES = {"fp8": "e4m3"}
# ws-pipelined's (and ws-stage's) terms of the kernel time, in words
TERMS = (("mainloop_us", "main loop"), ("epilogue_us", "epilogue"), ("fill_us", "exposed prologue fill"),
         ("reduction_us", "partial-tile reduction (split-K, stream-K)"), ("overhead_us", "per-wave overhead"),
         ("power_us", "the power cap's clock drop (long, busy runs)"), ("init_us", "launch"))


def dtype_words(dtype: str) -> str:
    """An input dtype in words, naming the output where it differs: 'bf16', 'fp8 (e4m3 in,
    bf16 out)'."""
    out = OUT_DTYPES.get(dtype, dtype)
    return dtype if out == dtype else f"{dtype} ({ELEMENT_TYPES.get(dtype, dtype)} in, {out} out)"


def k_sharing_words(split_k: int, stream_k: bool) -> list[str]:
    """How a configuration shares a tile's K among CTAs, in words: ['split-K 4'],
    ['stream-K'], or [] when it does not."""
    return [f"split-K {split_k}"] * (split_k > 1) + ["stream-K"] * bool(stream_k)


def _k_shared(row: dict) -> str:
    """What sharing K means for the time, when a row does."""
    split, stream = int(row.get("split_k") or 1), row.get("stream_k") in (True, "true", 1)
    if split > 1:
        return (f"Each tile's K is split among {split} CTAs; their fp32 partial tiles go through a workspace "
                "and the last CTA to arrive adds them up and stores C. ")
    if stream:
        return ("Stream-K: the persistent CTAs share the (tile, k-block) iterations evenly; a tile begun by one "
                "CTA and finished by another is summed through an fp32 workspace. ")
    return ""


def _waves(row: dict, gpu: GPU) -> str:
    """'1024 tiles on 132 SMs: 8 waves, ...'; with split-K the CTAs are the tiles' K splits
    (the model's ``work_items``): '56 tiles in 224 work items on 132 SMs: 2 waves, ...';
    with stream-K, '56 tiles shared by 132 CTAs on 132 SMs: 1 wave ...'."""
    tiles, waves = row.get("tiles"), row.get("waves")
    if tiles is None or waves is None:
        return ""
    items = row.get("work_items") or tiles
    what = f"{tiles} tiles" + (f" in {items} work items" if items != tiles else "")
    if row.get("stream_k") in (True, "true", 1):
        what = f"{tiles} tiles shared by {items} CTAs"
    last = items - (waves - 1) * gpu.sms if waves else 0
    tail = f", the last with {last} of {gpu.sms} SMs busy" if waves > 1 and 0 < last < gpu.sms else ""
    single = f" ({min(items, gpu.sms)} of {gpu.sms} SMs busy)" if waves == 1 else ""
    return f"{what} on {gpu.sms} SMs: {waves} wave{'s' if waves != 1 else ''}{single}{tail}. "


def _terms(row: dict) -> str:
    total = row["predicted_us"]
    parts = [(row[c], words) for c, words in TERMS if row.get(c) is not None]
    if not parts:
        return ""
    parts.sort(key=lambda p: -p[0])
    return "Where the time goes: " + ", ".join(f"{words} {v:.3g} us ({v / total:.0%})" for v, words in parts) + "."


def explain_row(row: dict, gpu: GPU) -> str:
    """One prediction row in words: time, waves, limiter, the stage times, what is exposed."""
    shared = k_sharing_words(int(row.get("split_k") or 1), row.get("stream_k") in (True, "true", 1))
    cfg = (f"{row['family']} {dtype_words(row['dtype'])} {row['tile_m']}x{row['tile_n']}x{row['tile_k']}, "
           f"{row['stages']} stages{', persistent' if row.get('persistent') else ''}"
           + "".join(f", {w}" for w in shared))
    head = f"{row.get('model', '')}: {row['m']}x{row['n']}x{row['k']} with {cfg}: {us(row['predicted_us'])}. "
    why = LIMITER_WORDS.get(row.get("limiter"), f"limiter {row.get('limiter')}")
    stages = ""
    if row.get("stage_math_us") is not None:
        load = row.get("stage_load_us")
        if load is None and row.get("stage_load_a_us") is not None:
            load = row["stage_load_a_us"] + row["stage_load_b_us"]
        period = row.get("stage_period_us")
        stages = (f" (per k-block: load {load:.3g} us, math {row['stage_math_us']:.3g} us"
                  + (f", period {period:.3g} us" if period is not None else "")
                  + (f", {row['k_stages']} k-blocks" if row.get("k_stages") is not None else "") + ")")
    what_if = f" What-if: {row['what_if']}." if row.get("what_if") else ""
    return head + _waves(row, gpu) + _k_shared(row) + f"It is {why}{stages}. " + _terms(row) + what_if


# ------------------------------------------------------------------ optimize's answer


def measurement_files(gpu: GPU, dtype: str = "bf16") -> list[Path]:
    """The workflow's measurements of ``dtype`` (results/<gpu>/measurements/*.csv, for a
    dtype other than bf16 results/<gpu>/<dtype>/measurements/), else the shipped ones."""
    for root in (RESULTS / run_name(gpu.slug, dtype), shipped_data_dir(gpu.slug, dtype)):
        files = sorted((root / "measurements").glob("*.csv"))
        if files:
            return files
    return []


def measured_best(gpu: GPU, shape, pairs) -> dict | None:
    """The fastest valid measurement of ``shape`` (m, n, k) among (family, dtype) ``pairs``
    in the GPU's measurement files: its row plus ``file``; None if none holds it."""
    best = None
    for path in measurement_files(gpu, pairs_dtype(pairs)):
        try:
            df = valid_rows(read_measurements(path))
        except UserError:
            continue  # an unreadable file holds no measured best; `gemmperf fit` says why
        keys = pl.DataFrame(list(pairs), schema=["family", "dtype"], orient="row")
        df = df.filter((pl.col("m") == shape[0]) & (pl.col("n") == shape[1]) & (pl.col("k") == shape[2]))
        df = df.join(keys, on=["family", "dtype"], how="semi")
        if df.height:
            row = df.sort("time_us").row(0, named=True)
            if best is None or row["time_us"] < best["time_us"]:
                best = {**row, "file": str(path)}
    return best


def fmt_config(c) -> str:
    """'128x256x64, 4 stages, cluster 2x1, TMA epilogue, ping-pong, split-K 4, persistent on
    128 CTAs, grouped raster in groups of 4': the dimensions at their defaults are left out."""
    words = [f"{c.tile_m}x{c.tile_n}x{c.tile_k}", f"{c.stages} stages"]
    words += [f"cluster {c.cluster_m}x{c.cluster_n}"] if (c.cluster_m, c.cluster_n) != (1, 1) else []
    words += ["TMA epilogue"] if c.epilogue == "tma" else []
    words += ["ping-pong"] if c.schedule == "pingpong" else []
    words += k_sharing_words(c.split_k, c.stream_k)
    persistent = "persistent" if c.persistent else "non-persistent"
    words.append(persistent + (f" on {c.persistent_ctas} CTAs" if c.persistent_ctas else ""))
    group = f" in groups of {c.group_m}" if c.raster == "grouped" and c.group_m != DEFAULT_GROUP_M else ""
    words.append(f"{c.raster} raster{group}")
    return ", ".join(words)


def _fmt_row(r: dict) -> str:
    """A measured row's configuration in words (fmt_config), its absent columns at their defaults."""
    values = {k: r[k] for k in CONFIG_COLUMNS if r.get(k) not in (None, "")}
    for k in ("persistent", "stream_k"):
        values[k] = values.get(k) in (True, "true", "True", 1)
    for k in ("tile_m", "tile_n", "tile_k", "stages", "cluster_m", "cluster_n", "group_m", "persistent_ctas",
              "split_k"):
        if k in values:
            values[k] = int(values[k])
    return f"{r['family']} {fmt_config(KernelConfig(**values))}"


def us(value: float) -> str:
    """A time for a sentence: 157.1 us, 3.45 us, 3193012.3 us."""
    return f"{value:.1f} us" if value >= 10 else f"{value:.3g} us"


def one_line(sols, gpu: GPU, measured: dict | None, source: str, skipped=()) -> str:
    """optimize's default answer: the best configuration over the families solved, its
    predicted time and limiter, the measured best (or 'no measurement'), the parameters,
    and the families ``skipped`` (no kernel for the request) if any."""
    s = min(sols, key=lambda s: s.predicted_us)
    skip = f" (skipped {', '.join(skipped)}: --explain says why)" if skipped else ""
    meas = (f"measured best {us(measured['time_us'])} ({_fmt_row(measured)}; {measured['file']})"
            if measured else "no measurement")
    return (f"{s.shape.m}x{s.shape.n}x{s.shape.k} {dtype_words(s.shape.dtype)} on {gpu.slug}: {s.family}{skip} "
            f"{fmt_config(s.config)}: "
            f"{us(s.predicted_us)} ({s.model}, limiter {s.breakdown.get('limiter')}); {meas}; params: {source}")
