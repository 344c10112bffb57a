"""``gemmperf predict`` (every model on one configuration, a CSV of them, or a
testlist's legal configurations) and ``gemmperf simulate`` (ws-stage's event timeline).

Both refuse a configuration no kernel implements (with the legality check's reason) and a
shape whose operands do not fit in the GPU's memory; ``--what-if`` answers anyway and
flags each such row. Every answer says where its parameters came from.
"""

from __future__ import annotations

import argparse
import json
import sys

import polars as pl

from .. import configs
from ..errors import UserError, where
from ..fit.transfer import anchored
from ..intervals import is_band
from ..kernels import get_family
from ..models import MODELS, ws_stage
from ..predictions import candidate_table, predict_all
from ..problem import (DEFAULT_GROUP_M, EPILOGUES, FAMILIES, RASTERS, SCHEDULES, KernelConfig, parse_shape,
                       read_testlist)
from ..tables import CONFIG_KEY, FITTED_CORRECTED_MODEL, FITTED_MODEL, read_measurements, valid_rows
from . import answers
from .explain import explain_row, us
from .modelparams import (add_gpu_flags, add_transfer_flag, carried_correction, resolve_correction, resolve_params,
                          transferred_params)
from .resolve import RESULTS, output_path, parse_families, parse_ints, resolve_gpu, run_name

ANCHORED = "ws-pipelined anchored"
SHOWN = ("model", "m", "n", "k", "tile_m", "tile_n", "stages", "predicted_us", "limiter", "what_if")
OUTPUT_SUFFIXES = (".csv", ".parquet", ".json")
# simulate emits W * (3 S + 1) events (W waves, S k-blocks); more than this is refused
# before any work starts (a 1x1x1 tile on 4096^3 would be 1.6e9 events, gigabytes).
MAX_EVENTS = 200_000

PREDICT_EPILOG = """examples:
  gemmperf predict --gpu h100-sxm5-80gb --shape 4096x4096x4096
  gemmperf predict --gpu h100-sxm5-80gb --shape 4096x4096x4096 --tile 128x256x64 --explain
  gemmperf predict --gpu h100-sxm5-80gb --shape 4096x4096x4096 --tile 128x256x64 --cluster 2x1 --epilogue tma \
      --persistent --raster grouped
  gemmperf predict --gpu h100-sxm5-80gb --shape 8192x8192x8192 --model all --json
  gemmperf predict --gpu a100-sxm4-80gb --family ws-ampere --shape 4096x4096x4096 --stages 3
  gemmperf predict --gpu h100-sxm5-80gb --input configs.csv --output out/predictions.parquet
  gemmperf predict --gpu h100-sxm5-80gb --testlist testlists/llm.csv --output llm.parquet
  gemmperf predict --gpu h100-sxm5-80gb --shape 4096x4096x4096 --tile 256x256x64 --stages 8 --what-if
  gemmperf predict --gpu h100-sxm5-80gb --shape 64x7168x2048 --tile 64x128x64 --epilogue tma --split-k 4
  gemmperf predict --gpu h100-sxm5-80gb --shape 64x7168x2048 --epilogue tma --persistent --raster grouped \
      --stream-k
  gemmperf predict --gpu h100-sxm5-80gb --shape 4096x4096x4096 --dtype fp8 --explain
  gemmperf predict --gpu h200-sxm-141gb --transfer-from h100-sxm5-80gb --shape 4096x4096x4096
  gemmperf predict --gpu h200-sxm-141gb --transfer-from h100-sxm5-80gb --shape 4096x4096x4096 --corrected
  gemmperf predict --gpu h200-sxm-141gb --transfer-from h100-sxm5-80gb \
      --input results/h100-sxm5-80gb/shipped/measurements/llm.csv \
      --anchor results/h100-sxm5-80gb/shipped/measurements/llm.csv

A configuration no kernel implements (tile, stages, shared memory, registers, dtype,
architecture, clusters, a mode other than full) and a shape whose A, B and C do not fit
in the GPU's memory are refused with the reason; --what-if predicts them anyway and
flags each such row (column what_if). The parameters are results/<gpu>/params.json when
it exists (written by gemmperf fit; results/<gpu>/<dtype>/params.json for a dtype other
than bf16), else the GPU descriptor's defaults: the answer says which. --transfer-from GPU
predicts --gpu from GPU's fit instead, carried over by the units of each value onto --gpu's
microbenchmarks (shipped, or the workflow's results/<gpu>/microbench.csv), or onto its
descriptor where either GPU has none: no GEMM measured on --gpu enters (issue 18's transfer;
benchmarks/transfer.py scores it); with --corrected, GPU's residual correction (its
correction.json) corrects the carried prediction. With --anchor (that GPU's measurement CSVs), a
configuration it measured is also answered by its measured time times the model's ratio
of the two GPUs (model "ws-pipelined anchored on <GPU>"): what the model gets wrong about
the kernel on both GPUs cancels (fit.transfer.anchored).

--split-k S shares each tile's K among S CTAs (ws-hopper: 2, 3, 4, 6, 8 or 16), --stream-k
lets a persistent kernel's CTAs share the (tile, k-block) iterations evenly; both run the
cooperative schedule at the default raster group, and they exclude each other. --dtype
fp8 is e4m3 in, bf16 out (tile K 128, the default tile's K in fp8). Only ws-pipelined
sees split-K and stream-K; the other models predict the same tiling without them.
"""

SIMULATE_EPILOG = """examples:
  gemmperf simulate --gpu h100-sxm5-80gb --shape 256x256x1024 --stages 3
  gemmperf simulate --gpu h100-sxm5-80gb --shape 4096x4096x4096 --max-waves 1 --format json --out t.json

Every event is one bar of the Gantt chart: warp (DMA-A, DMA-B, MATH, EPILOGUE), wave,
stage, start_us, end_us. The work is bounded before it starts: more than %d events
(waves x (3 k-blocks + 1)) is refused; --max-waves N simulates the first N waves only
(all waves are alike). ws-stage does not model K shared among CTAs: with --split-k or
--stream-k the configuration is checked, and each tile's whole K loop is shown.
""" % MAX_EVENTS


def default_tile(family: str, dtype: str) -> str:
    """--tile's default: 128x128 with tile K 64, or the family's only tile K of ``dtype``
    where 64 is not one (fp8 on ws-hopper: 128)."""
    ks = sorted({t[2] for t in get_family(family).tiles(dtype)}) if family in FAMILIES else []
    return f"128x128x{64 if 64 in ks or not ks else ks[0]}"


def config_from_flags(a):
    """(Shape, KernelConfig) of the configuration flags (add_config_flags)."""
    shape = parse_shape(a.shape, a.dtype)
    tm, tn, tk = parse_ints(a.tile or default_tile(a.family, a.dtype), "--tile", 3)
    cm, cn = parse_ints(a.cluster, "--cluster", 2)
    cfg = KernelConfig(
        family=a.family, dtype=a.dtype, tile_m=tm, tile_n=tn, tile_k=tk, stages=a.stages,
        cluster_m=cm, cluster_n=cn, persistent=a.persistent, raster=a.raster, epilogue=a.epilogue,
        schedule=a.schedule, group_m=a.group_m, persistent_ctas=a.persistent_ctas, split_k=a.split_k,
        stream_k=a.stream_k,
    )
    return shape, cfg


def add_config_flags(p, shape_required: bool = True) -> None:
    p.add_argument("--shape", required=shape_required, help="problem MxNxK, e.g. --shape 4096x4096x4096")
    p.add_argument("--dtype", default="bf16",
                   help="input dtype (default bf16; simt computes fp32; fp8: e4m3 in, bf16 out), e.g. --dtype fp8")
    p.add_argument("--family", default="ws-hopper", choices=FAMILIES,
                   help="kernel family (default ws-hopper), e.g. --family ws-ampere")
    p.add_argument("--tile", help="tile TMxTNxTK (default 128x128x64; 128x128x128 in fp8), e.g. --tile 128x256x64")
    p.add_argument("--stages", type=int, default=4, help="shared-memory ring depth (default 4), e.g. --stages 3")
    p.add_argument("--cluster", default="1x1", help="thread-block cluster MxN (default 1x1; ws-hopper: 1x1, 2x1, "
                   "1x2, 2x2), e.g. --cluster 2x1")
    p.add_argument("--persistent", action="store_true", help="persistent kernel (grid = SMs)")
    p.add_argument("--persistent-ctas", type=int, default=0, metavar="N",
                   help="cap a persistent grid at N CTAs (default 0: one per SM), e.g. --persistent-ctas 128")
    p.add_argument("--raster", default="row", choices=RASTERS, help="tile order (default row), e.g. --raster grouped")
    p.add_argument("--group-m", type=int, default=DEFAULT_GROUP_M, metavar="G",
                   help=f"tile rows per group of the grouped raster (default {DEFAULT_GROUP_M}), e.g. --group-m 4")
    p.add_argument("--epilogue", default="direct", choices=EPILOGUES,
                   help="direct stores from registers, or tma through shared memory (default direct)")
    p.add_argument("--schedule", default="cooperative", choices=SCHEDULES,
                   help="consumer warpgroups on one tile (cooperative) or on a tile each (pingpong)")
    p.add_argument("--split-k", type=int, default=1, metavar="S",
                   help="share each tile's K among S CTAs, reducing their fp32 partial tiles (default 1: "
                   "no split; ws-hopper: 2, 3, 4, 6, 8, 16), e.g. --split-k 4")
    p.add_argument("--stream-k", action="store_true",
                   help="stream-K: a persistent kernel's CTAs share the (tile, k-block) iterations evenly")
    p.add_argument("--what-if", action="store_true",
                   help="answer for configurations no kernel implements and shapes beyond the GPU's "
                   "memory too, flagging each such row (column what_if)")


def print_table(df: pl.DataFrame, as_json: bool) -> None:
    if as_json:
        print(json.dumps(df.to_dicts(), indent=2, default=str))
        return
    with pl.Config(tbl_rows=50, tbl_cols=40, tbl_width_chars=200, float_precision=3):
        print(df)


def _model_names(text: str) -> list[str]:
    if text == "all":
        return list(MODELS)
    names = [n.strip() for n in text.split(",") if n.strip()]
    unknown = [n for n in names if n not in MODELS]
    if unknown or not names:
        raise UserError(f"--model {text!r}: unknown {', '.join(unknown)}; known: {', '.join(MODELS)}, all")
    return names


def _table(a, gpu):
    """(configurations to predict, where row i comes from): --input CSV, --testlist's
    legal ones, or the flags'."""
    if a.input:
        table, lines = configs.read_configs(a.input, with_lines=True)
        return table, lambda i: where(a.input, lines[i])
    if a.testlist:
        shapes = read_testlist(a.testlist, a.dtype)
        table = candidate_table(shapes, gpu, parse_families(a.families), a.dtype)
        print(f"{table.height} legal configurations of {len(shapes)} shapes", file=sys.stderr)
        return table, lambda i: f"{a.testlist}: {table['m'][i]}x{table['n'][i]}x{table['k'][i]}"
    if a.shape:
        shape, cfg = config_from_flags(a)
        return configs.cross([shape], [cfg]), lambda i: f"{answers.describe(cfg)} on {gpu.slug}"
    raise UserError("give --shape (one configuration), --input CSV or --testlist CSV")


def checked(table: pl.DataFrame, origin, gpu, what_if: bool) -> pl.DataFrame:
    """``table`` if every row is one a kernel implements and fits; with ``what_if``, the
    table with a ``what_if`` column (the reason, null where none); else the first
    offending row is refused, named by ``origin(i)``."""
    reasons = answers.row_reasons(table, gpu)
    bad = [i for i, r in enumerate(reasons) if r]
    if bad and not what_if:
        more = f" (and {len(bad) - 1} more row(s))" if len(bad) > 1 else ""
        raise UserError(f"{origin(bad[0])}: {reasons[bad[0]]}{more} {answers.WHAT_IF_HINT}")
    answers.check_arithmetic(table)
    if what_if:
        return table.with_columns(pl.Series("what_if", reasons, dtype=pl.Utf8))
    return table


def _write(out: pl.DataFrame, path: str) -> None:
    target = output_path(path, OUTPUT_SUFFIXES)
    try:
        if target.suffix.lower() == ".parquet":
            out.write_parquet(target)
        elif target.suffix.lower() == ".json":
            target.write_text(json.dumps(out.to_dicts(), indent=2, default=str) + "\n")
        else:
            out.write_csv(target)
    except OSError as err:
        raise UserError(f"{path}: cannot write ({err.strerror})") from None
    print(f"wrote {out.height} predictions to {path}", file=sys.stderr)


def _what_if_note(out: pl.DataFrame) -> str | None:
    if "what_if" not in out.columns:
        return None
    flagged = out.filter(pl.col("what_if").is_not_null())
    if not flagged.height:
        return "what-if: every row is a configuration a kernel implements"
    reasons = flagged.get_column("what_if").unique(maintain_order=True).to_list()
    return f"what-if: {flagged.height} of {out.height} row(s) no kernel implements: {'; '.join(reasons[:3])}"


def _anchored(table: pl.DataFrame, pset, fitted, files: list[str]) -> tuple[pl.DataFrame, str]:
    """(rows of model ``ANCHORED``, a note): the configurations of ``table`` that the
    source GPU's measurement ``files`` hold, timed by the transfer anchored on them
    (``fit.transfer.anchored``)."""
    pred = predict_all(table, pset, ["ws-pipelined"])
    measured = pl.concat([valid_rows(read_measurements(f)) for f in files], how="diagonal_relaxed")
    measured = measured.join(pred.select(CONFIG_KEY), on=list(CONFIG_KEY), how="semi")
    out = anchored(pred, measured, fitted).filter(pl.col("anchored_us").is_not_null())
    name = f"{ANCHORED} on {fitted.gpu.slug}"
    note = (f"anchored: {out.height} of {pred.height} configuration(s) measured on {fitted.gpu.slug} in "
            f"{len(files)} file(s): its measured time x ws-pipelined's ratio of the two GPUs")
    rows = out.with_columns(pl.col("anchored_us").alias("predicted_us"), pl.lit(name).alias("model"))
    return rows.drop("anchored_us", "source_model_us"), note


def cmd_predict(a) -> int:
    gpu = resolve_gpu(a.gpu)
    if a.anchor and not a.transfer_from:
        raise UserError("--anchor: give --transfer-from GPU too (the GPU the measurements were taken on)")
    fitted = None
    if a.transfer_from:
        pset, fitted = transferred_params(gpu, a.transfer_from, a.params, a.set, a.dtype)
    else:
        pset = resolve_params(gpu, a.params, a.set, a.params_any_gpu, a.dtype)
    table, origin = _table(a, gpu)
    table = checked(table, origin, gpu, a.what_if)
    names = _model_names(a.model)
    # a transfer is corrected by the correction learned where its fit was (fit.transfer)
    carried_from = fitted.gpu if fitted is not None else None
    correction = resolve_correction(a.correction, a.corrected, gpu, a.dtype, carried_from)
    if a.corrected:
        names = [n for n in names if n != "ws-pipelined"] if a.model == "all" else []
    out = predict_all(table, pset, names, correction)
    anchor_note = None
    if a.anchor:
        rows, anchor_note = _anchored(table, pset, fitted, a.anchor)
        out = pl.concat([out, rows], how="diagonal_relaxed")
    answers.check_times(out)
    source = answers.params_source(pset, answers.table_pairs(table))
    out = out.with_columns(pl.lit(source).alias("params_source"))
    bands = loto_bands(a, gpu, pset)
    out = _with_bands(out, bands)
    carried_note = (f"corrected: {carried_correction(carried_from, gpu)}"
                    if correction is not None and carried_from is not None else None)
    note = "\n".join(n for n in (_what_if_note(out), anchor_note, carried_note) if n) or None
    if a.output:
        _write(out, a.output)
        print(f"parameters: {source}", file=sys.stderr)
        if note:
            print(note, file=sys.stderr)
    elif a.json:
        rows = out.to_dicts()
        if a.explain:
            rows = [{**r, "explanation": explain_row(r, gpu)} for r in rows]
        print(json.dumps(rows, indent=2, default=str))
    else:
        print_table(out.select([c for c in SHOWN if c in out.columns]), False)
        if a.explain:
            for row in out.head(20).iter_rows(named=True):
                print(explain_row(row, gpu))
        print(f"parameters: {source}")
        if note:
            print(note)
        for line in _band_lines(out, bands):
            print(line)
    return 0


# the leave-one-testlist-out band of each model predict names (headline.json's "bands")
BANDED = {"ws-pipelined": FITTED_MODEL, "ws-pipelined+residual": FITTED_CORRECTED_MODEL}


def loto_bands(a, gpu, pset) -> dict:
    """Model -> its leave-one-testlist-out band (fit.protocol.bands, in the workflow's
    results/<run>/headline.json) where the rows are predicted with the GPU's own workflow
    fit (``pset`` fitted; no --params, --set or --transfer-from), the corrected model's
    with the workflow's own correction (not --correction FILE); else {}."""
    path = RESULTS / run_name(gpu.slug, a.dtype) / "headline.json"
    fitted = any(p.source == "fitted" for (family, _), p in pset.entries.items() if family == "ws-hopper")
    if a.transfer_from or a.set or a.params or not fitted or not path.is_file():
        return {}
    try:
        found = json.loads(path.read_text()).get("bands") or {}
    except (OSError, ValueError, AttributeError) as err:
        raise UserError(f"{path}: cannot read the headline accuracy ({err}); run the workflow again") from None
    out = {model: found[name] for model, name in BANDED.items() if isinstance(found.get(name), dict)}
    for model, band in out.items():
        if not is_band(band):
            raise UserError(f"{path}: bands {BANDED[model]} = {band!r}: not a band (n, median, low, high, level); "
                            "run the workflow again")
    if a.correction:
        out.pop("ws-pipelined+residual", None)
    return out


def _with_bands(out: pl.DataFrame, bands: dict) -> pl.DataFrame:
    """``out`` with the band's times (how_long_low_us, how_long_expect_us, how_long_high_us)
    on the ws-hopper rows of each banded model (the protocol scores ws-hopper)."""
    if not bands:
        return out
    cols = {name: pl.lit(None, pl.Float64) for name in ("low", "median", "high")}
    for model, band in bands.items():
        hit = (pl.col("model") == model) & (pl.col("family") == "ws-hopper")
        cols = {name: pl.when(hit).then(pl.col("predicted_us") * band[name]).otherwise(expr)
                for name, expr in cols.items()}
    return out.with_columns(how_long_low_us=cols["low"], how_long_expect_us=cols["median"],
                            how_long_high_us=cols["high"])


def _band_lines(out: pl.DataFrame, bands: dict) -> list[str]:
    """One line per banded model among ``out``'s ws-hopper rows: its band, and with one
    such row its times."""
    lines = []
    for model, b in bands.items():
        rows = out.filter((pl.col("model") == model) & (pl.col("family") == "ws-hopper"))
        if rows.height == 0:
            continue
        times = ""
        if rows.height == 1:
            t = rows.item(0, "predicted_us")
            times = f": {us(t * b['low'])} to {us(t * b['high'])}, median {us(t * b['median'])}"
        lines.append(f"how long ({model}): {b['level']:.0%} of its leave-one-testlist-out predictions ({b['n']} "
                     f"ws-hopper configurations, each testlist predicted by a fit that saw none of it) ran "
                     f"{b['low']:.2f}-{b['high']:.2f}x the prediction{times}")
    return lines


def _timeline(a, gpu, pset):
    """(events, what_if reason or None) of the flags' configuration, bounded first."""
    shape, cfg = config_from_flags(a)
    table = checked(configs.cross([shape], [cfg]), lambda i: f"{answers.describe(cfg)} on {gpu.slug}",
                    gpu, a.what_if)
    reason = table.get_column("what_if")[0] if "what_if" in table.columns else None
    k_blocks = -(-shape.k // cfg.tile_k)
    tiles = -(-shape.m // cfg.tile_m) * -(-shape.n // cfg.tile_n)
    waves = -(-tiles // gpu.sms)
    shown = waves if a.max_waves is None else min(waves, a.max_waves)
    events = shown * (3 * k_blocks + 1)
    if events > MAX_EVENTS:
        raise UserError(f"{events:,} events ({shown:,} waves x (3 x {k_blocks:,} k-blocks + 1)) exceed the "
                        f"limit of {MAX_EVENTS:,}; give --max-waves N (all waves are alike) or a smaller shape")
    return ws_stage.timeline(cfg, pset, shape, max_waves=a.max_waves), reason


def cmd_simulate(a) -> int:
    if a.max_waves is not None and a.max_waves < 1:
        raise UserError(f"--max-waves {a.max_waves}: must be >= 1")
    gpu = resolve_gpu(a.gpu)
    pset = resolve_params(gpu, a.params, a.set, a.params_any_gpu, a.dtype)
    target = output_path(a.out) if a.out else None
    events, reason = _timeline(a, gpu, pset)
    if a.split_k > 1 or a.stream_k:
        print("note: ws-stage does not model K shared among CTAs: the timeline shows each tile's whole K loop "
              "(gemmperf predict --model ws-pipelined models split-K and stream-K)", file=sys.stderr)
    answers.check_events(events)
    source = answers.params_source(pset, [(a.family, a.dtype)])
    if a.format == "json":
        text = json.dumps({"params_source": source, "what_if": reason, "events": events}, indent=2) + "\n"
    else:
        cols = list(events[0].keys()) if events else []
        text = ",".join(cols) + "\n" + "".join(",".join(str(e[c]) for c in cols) + "\n" for e in events)
    if target:
        try:
            target.write_text(text)
        except OSError as err:
            raise UserError(f"{a.out}: cannot write ({err.strerror})") from None
        print(f"wrote {len(events)} events to {a.out}", file=sys.stderr)
    else:
        print(text, end="")
    print(f"parameters: {source}", file=sys.stderr)
    if reason:
        print(f"what-if: no kernel implements this: {reason}", file=sys.stderr)
    return 0


def add_parsers(sub) -> None:
    fmt = argparse.RawDescriptionHelpFormatter
    p = sub.add_parser("predict", help="predict kernel time: one configuration, a CSV of them, or a testlist",
                       description="Predict kernel time with the analytical models (default ws-pipelined).",
                       epilog=PREDICT_EPILOG, formatter_class=fmt)
    add_config_flags(p, shape_required=False)
    add_gpu_flags(p)
    add_transfer_flag(p, "predict")
    p.add_argument("--anchor", nargs="+", metavar="CSV",
                   help="with --transfer-from: that GPU's measurement CSVs; each configuration measured there "
                   "is also answered by its measured time x ws-pipelined's ratio of the two GPUs (model "
                   f"'{ANCHORED} on <GPU>'), e.g. --anchor results/h100-sxm5-80gb/shipped/measurements/llm.csv")
    p.add_argument("--model", default="ws-pipelined",
                   help=f"comma-separated models ({', '.join(MODELS)}) or all (default ws-pipelined), "
                   "e.g. --model sol,ws-pipelined")
    p.add_argument("--input", nargs="?", help="CSV of configurations (m,n,k + config columns, e.g. a "
                   "measurement CSV); the flag alone: none (then --testlist)")
    p.add_argument("--testlist", help="testlist CSV (m,n,k): every configuration of --families' default sweep, "
                   "e.g. --testlist testlists/llm.csv")
    p.add_argument("--families", default="ws-hopper,ws-ampere,simt",
                   help="with --testlist: comma-separated kernel families (default all three)")
    p.add_argument("--output", help="file to write, by suffix .csv, .parquet or .json (its folder is "
                   "created); default: print")
    p.add_argument("--json", action="store_true", help="print JSON rows (every breakdown column)")
    p.add_argument("--explain", action="store_true",
                   help="say in words why: limiter, waves (CTAs / SMs), what is exposed")
    p.add_argument("--correction", nargs="?",
                   help="correction.json: also predict the corrected ws-pipelined (the flag alone: none)")
    p.add_argument("--corrected", action="store_true",
                   help="only the corrected ws-pipelined (correction from --correction or "
                   "results/<gpu>/correction.json, with --transfer-from that GPU's; results/<gpu>/<dtype>/ "
                   "for a dtype other than bf16)")
    p.set_defaults(func=cmd_predict)

    p = sub.add_parser("simulate", help="the ws-stage event timeline of one configuration",
                       description="Step ws-stage's recurrence event by event: the Gantt bars of one "
                       "configuration's waves.", epilog=SIMULATE_EPILOG, formatter_class=fmt)
    add_config_flags(p)
    add_gpu_flags(p)
    p.add_argument("--format", choices=("csv", "json"), default="csv",
                   help="csv (default) or json (with params_source and what_if), e.g. --format json")
    p.add_argument("--out", help="file to write (its folder is created; default: stdout), e.g. --out t.csv")
    p.add_argument("--max-waves", type=int, help="simulate only the first N waves, e.g. --max-waves 1")
    p.set_defaults(func=cmd_simulate)
