"""``gemmperf predict`` (every model on one configuration, a CSV of them, or a
testlist's legal configurations) and ``gemmperf simulate`` (ws-stage's event timeline)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import polars as pl

from .. import configs
from ..errors import UserError
from ..fit.residual import Correction, load_correction
from ..models import MODELS, ws_stage
from ..predictions import candidate_table, predict_all
from ..problem import FAMILIES, RASTERS, KernelConfig, parse_shape, read_testlist
from .modelparams import add_gpu_flags, resolve_params
from .resolve import RESULTS, parse_families, parse_ints, resolve_gpu

SHOWN = ("model", "m", "n", "k", "tile_m", "tile_n", "stages", "predicted_us", "limiter")


def config_from_flags(a):
    """(Shape, KernelConfig) of the configuration flags (add_config_flags)."""
    shape = parse_shape(a.shape, a.dtype)
    tm, tn, tk = parse_ints(a.tile, "--tile", 3)
    cm, cn = parse_ints(a.cluster, "--cluster", 2)
    cfg = KernelConfig(
        family=a.family, dtype=a.dtype, tile_m=tm, tile_n=tn, tile_k=tk, stages=a.stages,
        cluster_m=cm, cluster_n=cn, persistent=a.persistent, raster=a.raster,
    )
    return shape, cfg


def add_config_flags(p, shape_required: bool = True) -> None:
    p.add_argument("--shape", required=shape_required, help="problem MxNxK, e.g. 4096x4096x4096")
    p.add_argument("--dtype", default="bf16", help="input dtype (default bf16)")
    p.add_argument("--family", default="ws-hopper", choices=FAMILIES)
    p.add_argument("--tile", default="128x128x64", help="tile TMxTNxTK (default 128x128x64)")
    p.add_argument("--stages", type=int, default=4, help="shared-memory buffer depth (default 4)")
    p.add_argument("--cluster", default="1x1", help="cluster MxN (default 1x1)")
    p.add_argument("--persistent", action="store_true", help="persistent kernel (grid = SMs)")
    p.add_argument("--raster", default="row", choices=RASTERS)


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
    """The configurations to predict: --input CSV, --testlist's legal ones, or the flags'."""
    if a.input:
        return configs.read_configs(a.input)
    if a.testlist:
        shapes = read_testlist(a.testlist)
        table = candidate_table(shapes, gpu, parse_families(a.families), a.dtype)
        print(f"{table.height} legal configurations of {len(shapes)} shapes", file=sys.stderr)
        return table
    if a.shape:
        shape, cfg = config_from_flags(a)
        return configs.cross([shape], [cfg])
    raise UserError("predict: give --shape (one configuration), --input CSV or --testlist CSV")


def _write(out, path: str) -> None:
    if path.endswith(".parquet"):
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        out.write_parquet(path)
    else:
        out.write_csv(path)
    print(f"wrote {out.height} predictions to {path}", file=sys.stderr)


def cmd_predict(a) -> int:
    gpu = resolve_gpu(a.gpu)
    pset = resolve_params(gpu, a.params, a.set)
    table = _table(a, gpu)
    names = _model_names(a.model)
    correction = Correction.load(a.correction) if a.correction else None
    if a.corrected:
        correction = correction or load_correction(RESULTS, gpu.slug)
        names = [n for n in names if n != "ws-pipelined"] if a.model == "all" else []
    out = predict_all(table, pset, names, correction)
    if a.output:
        _write(out, a.output)
    elif a.json:
        print(json.dumps(out.to_dicts(), indent=2, default=str))
    else:
        print_table(out.select([c for c in SHOWN if c in out.columns]), False)
    return 0


def cmd_simulate(a) -> int:
    gpu = resolve_gpu(a.gpu)
    pset = resolve_params(gpu, a.params, a.set)
    shape, cfg = config_from_flags(a)
    events = ws_stage.timeline(cfg, pset, shape)
    if a.format == "json":
        text = json.dumps(events, indent=2) + "\n"
    else:
        cols = list(events[0].keys()) if events else []
        text = ",".join(cols) + "\n" + "".join(",".join(str(e[c]) for c in cols) + "\n" for e in events)
    if a.out:
        Path(a.out).write_text(text)
        print(f"wrote {len(events)} events to {a.out}", file=sys.stderr)
    else:
        print(text, end="")
    return 0


def add_parsers(sub) -> None:
    p = sub.add_parser("predict", help="predict kernel time: one configuration, a CSV of them, or a testlist")
    add_config_flags(p, shape_required=False)
    add_gpu_flags(p)
    p.add_argument("--model", default="ws-pipelined",
                   help=f"comma-separated models ({', '.join(MODELS)}) or all (default ws-pipelined)")
    p.add_argument("--input", nargs="?", help="CSV of configurations (m,n,k + config columns); "
                   "the flag alone: none (then --testlist)")
    p.add_argument("--testlist", help="testlist CSV: every legal configuration of --families (default sweep)")
    p.add_argument("--families", default="ws-hopper,ws-ampere,simt", help="with --testlist: kernel families")
    p.add_argument("--output", help="CSV or .parquet to write (default: print)")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.add_argument("--correction", nargs="?",
                   help="correction.json: also predict the corrected ws-pipelined (the flag alone: none)")
    p.add_argument("--corrected", action="store_true",
                   help="only the corrected ws-pipelined (correction from --correction or "
                   "results/<gpu>/correction.json)")
    p.set_defaults(func=cmd_predict)

    p = sub.add_parser("simulate", help="the ws-stage event timeline of one configuration")
    add_config_flags(p)
    add_gpu_flags(p)
    p.add_argument("--format", choices=("csv", "json"), default="csv")
    p.add_argument("--out", help="file to write (default: stdout)")
    p.set_defaults(func=cmd_simulate)
