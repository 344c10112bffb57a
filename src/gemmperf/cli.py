"""Command line: ``gemmperf <command> ...`` (also ``python -m gemmperf``).

User errors print one line and exit with status 2, never a traceback.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from . import __version__
from .errors import UserError

RESULTS = Path("results")


# ------------------------------------------------------------------- helpers


def resolve_gpu(spec: str):
    """'auto' (probe the local GPU), a catalog slug, or a hardware.json path."""
    from .hardware import CATALOG, NoGPU, get_gpu, load_gpu, probe

    if spec == "auto":
        try:
            return probe()
        except NoGPU as err:
            raise UserError(f"{err}; pass --gpu with one of: {', '.join(CATALOG)}") from None
    if spec.endswith(".json"):
        return load_gpu(spec)
    shipped = RESULTS / spec / "hardware.json"
    if spec not in CATALOG and shipped.is_file():
        return load_gpu(shipped)
    return get_gpu(spec)


def resolve_params(gpu, params_path: str | None, overrides: list[str] | None = None):
    """Fitted parameters from --params or results/<gpu>/params.json, else descriptor defaults."""
    from .params import PARAM_NAMES, ParamSet

    path = Path(params_path) if params_path else RESULTS / gpu.slug / "params.json"
    if params_path and not path.is_file():
        raise UserError(f"{path}: parameters file not found")
    pset = ParamSet.load(path, gpu) if path.is_file() else ParamSet(gpu)
    for item in overrides or []:
        name, _, value = item.partition("=")
        if name not in PARAM_NAMES:
            raise UserError(f"--set {item!r}: unknown parameter; known: {', '.join(PARAM_NAMES)}")
        try:
            pset.overrides[name] = float(value)
        except ValueError:
            raise UserError(f"--set {item!r}: {value!r} is not a number") from None
    return pset


def _pair(text: str, what: str, n: int) -> list[int]:
    try:
        values = [int(v) for v in text.lower().split("x")]
    except ValueError:
        values = []
    if len(values) != n or min(values) < 1:
        raise UserError(f"{what} {text!r}: expected {'x'.join(['N'] * n)} with positive integers")
    return values


def _config_from_flags(a):
    from .problem import KernelConfig, parse_shape

    shape = parse_shape(a.shape, a.dtype)
    tm, tn, tk = _pair(a.tile, "--tile", 3)
    cm, cn = _pair(a.cluster, "--cluster", 2)
    cfg = KernelConfig(
        family=a.family, dtype=a.dtype, tile_m=tm, tile_n=tn, tile_k=tk, stages=a.stages,
        cluster_m=cm, cluster_n=cn, persistent=a.persistent, raster=a.raster,
    )
    return shape, cfg


def _add_config_flags(p, shape_required=True):
    from .problem import FAMILIES, RASTERS

    p.add_argument("--shape", required=shape_required, help="problem MxNxK, e.g. 4096x4096x4096")
    p.add_argument("--dtype", default="bf16", help="input dtype (default bf16)")
    p.add_argument("--family", default="ws-hopper", choices=FAMILIES)
    p.add_argument("--tile", default="128x128x64", help="tile TMxTNxTK (default 128x128x64)")
    p.add_argument("--stages", type=int, default=4, help="shared-memory buffer depth (default 4)")
    p.add_argument("--cluster", default="1x1", help="cluster MxN (default 1x1)")
    p.add_argument("--persistent", action="store_true", help="persistent kernel (grid = SMs)")
    p.add_argument("--raster", default="row", choices=RASTERS)


def _add_gpu_flags(p):
    p.add_argument("--gpu", default="auto", help="catalog slug, hardware.json, or auto (probe)")
    p.add_argument("--params", help="parameters JSON (default results/<gpu>/params.json if present)")
    p.add_argument("--set", action="append", metavar="NAME=VALUE", help="override one parameter")


def _print_table(df, as_json: bool) -> None:
    if as_json:
        print(json.dumps(df.to_dicts(), indent=2, default=str))
    else:
        import polars as pl

        with pl.Config(tbl_rows=50, tbl_cols=40, tbl_width_chars=200, float_precision=3):
            print(df)


# ------------------------------------------------------------------- commands


def cmd_gpus(a) -> int:
    from .hardware import CATALOG, NoGPU, probe

    rows = [g.to_dict() for g in CATALOG.values()]
    try:
        local = probe()
        rows.insert(0, local.to_dict())
        note = f"local GPU: {local.name} ({local.slug})"
    except NoGPU as err:
        note = f"{err}"
    if a.json:
        print(json.dumps({"gpus": rows, "local": note}, indent=2))
        return 0
    print(f"{'slug':18} {'source':8} {'SMs':>4} {'MHz':>6} {'DRAM TB/s':>9} {'L2 MB':>6} {'bf16 TF':>8}  name")
    for r in rows:
        from .hardware import GPU

        g = GPU.from_dict(r)
        bf16 = g.peak_flops("bf16") / 1e12 if g.supports("bf16") else float("nan")
        print(
            f"{g.slug:18} {g.source:8} {g.sms:>4} {g.sm_clock_mhz:>6.0f} {g.dram_bytes_per_s / 1e12:>9.2f}"
            f" {g.l2_bytes / 2**20:>6.0f} {bf16:>8.0f}  {g.name}"
        )
    print(note)
    return 0


def cmd_hardware(a) -> int:
    from .hardware import NoGPU, get_gpu, probe

    try:
        gpu = probe()
    except NoGPU as err:
        if a.gpu == "auto":
            raise
        gpu = get_gpu(a.gpu)
        print(f"{err}; using the catalog entry for {gpu.slug}", file=sys.stderr)
    text = json.dumps(gpu.to_dict(), indent=2) + "\n"
    if a.out:
        Path(a.out).parent.mkdir(parents=True, exist_ok=True)
        Path(a.out).write_text(text)
    else:
        print(text, end="")
    return 0


def cmd_predict(a) -> int:
    from . import configs
    from .models import MODELS, predict

    gpu = resolve_gpu(a.gpu)
    pset = resolve_params(gpu, a.params, a.set)
    if a.input:
        table = configs.read_configs(a.input)
    elif a.shape:
        shape, cfg = _config_from_flags(a)
        table = configs.cross([shape], [cfg])
    else:
        raise UserError("predict: give --shape (one configuration) or --input CSV")
    from .predictions import predict_all

    names = list(MODELS) if a.model == "all" else [a.model]
    correction = None
    if a.corrected:
        from .fit.residual import load_correction

        correction = load_correction(RESULTS, gpu.slug)
        names = [n for n in names if n != "ws-pipelined"] if a.model == "all" else []
    out = predict_all(table, pset, names, correction)
    if a.output:
        out.write_csv(a.output)
        print(f"wrote {out.height} predictions to {a.output}", file=sys.stderr)
        return 0
    if a.json:
        print(json.dumps(out.to_dicts(), indent=2, default=str))
        return 0
    keep = [c for c in ("model", "m", "n", "k", "tile_m", "tile_n", "stages", "predicted_us", "limiter") if c in out.columns]
    _print_table(out.select(keep), False)
    return 0


def cmd_simulate(a) -> int:
    from .models import ws_stage

    gpu = resolve_gpu(a.gpu)
    pset = resolve_params(gpu, a.params, a.set)
    shape, cfg = _config_from_flags(a)
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


# ------------------------------------------------------------------- parser


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="gemmperf", description=__doc__.splitlines()[0])
    parser.add_argument("--version", action="version", version=f"gemmperf {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("gpus", help="the GPU catalog and the probed local GPU")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_gpus)

    p = sub.add_parser("hardware", help="write the descriptor of the local GPU (or a catalog one)")
    p.add_argument("--gpu", default="auto", help="catalog slug to use when no GPU is present")
    p.add_argument("--out", help="output JSON (default: stdout)")
    p.set_defaults(func=cmd_hardware)

    p = sub.add_parser("predict", help="predict kernel time for one configuration or a CSV of them")
    _add_config_flags(p, shape_required=False)
    _add_gpu_flags(p)
    p.add_argument("--model", default="ws-pipelined",
                   help="sol, sync, ws-stage, ws-persistent, ws-pipelined, or all (default ws-pipelined)")
    p.add_argument("--input", help="CSV of configurations (m,n,k + config columns)")
    p.add_argument("--output", help="CSV to write (default: print)")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.add_argument("--corrected", action="store_true",
                   help="ws-pipelined with the residual correction of results/<gpu>/correction.json")
    p.set_defaults(func=cmd_predict)

    p = sub.add_parser("simulate", help="the ws-stage event timeline of one configuration")
    _add_config_flags(p)
    _add_gpu_flags(p)
    p.add_argument("--format", choices=("csv", "json"), default="csv")
    p.add_argument("--out", help="file to write (default: stdout)")
    p.set_defaults(func=cmd_simulate)

    # stage commands, each defined next to its stage
    from . import gpuslot
    from .bench import collect, microbench
    from .fit import cli as fit_cli
    from .optimize import cli as optimize_cli

    collect.add_parser(sub)
    microbench.add_parser(sub)
    fit_cli.add_parser(sub)
    optimize_cli.add_parser(sub)
    gpuslot.add_parser(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return args.func(args)
    except UserError as err:
        print(f"gemmperf {args.command}: {err}", file=sys.stderr)
        return 2
    except BrokenPipeError:
        return 0
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
