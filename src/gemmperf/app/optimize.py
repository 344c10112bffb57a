"""``gemmperf optimize``: the Z3-optimal configuration of one shape, or a testlist's table.

    gemmperf optimize --gpu h100-sxm5-80gb --shape 4096x4096x4096 [--dtype bf16]
                      [--family ws-hopper|ws-ampere|simt|all] [--model ws-pipelined|ws-stage|ws-persistent]
                      [--tile 128x256x64] [--stages 4] [--json]
    gemmperf optimize --gpu h100-sxm5-80gb --testlist testlists/dsv3.csv [--family ws-hopper,simt]
                      [--measurements results/<gpu>/measurements/dsv3.csv] [--out CSV]

The default model is the workflow's (config ``optimize.model``): ws-pipelined.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from ..errors import UserError
from ..kernels import families_on
from ..optimize import DEFAULT_MODEL, MODELS, solve
from ..optimize.tilings import mean_regret, tilings_table
from ..problem import FAMILIES, RASTERS, check_dtype, parse_shape, read_testlist
from .modelparams import add_gpu_flags, resolve_params
from ..tables import read_measurements
from .resolve import RESULTS, parse_families, parse_ints, resolve_gpu

def _fix(a) -> dict:
    """The pinned parts of the configuration (--tile, --stages, --raster)."""
    fix = {}
    if a.tile:
        tm, tn, tk = parse_ints(a.tile, "--tile", 3)
        fix.update(tile_m=tm, tile_n=tn, tile_k=tk)
    if a.stages is not None:
        if a.stages < 1:
            raise UserError(f"--stages {a.stages}: must be >= 1")
        fix["stages"] = a.stages
    if a.raster:
        fix["raster"] = a.raster
    return fix


def _families(a, gpu) -> list[str]:
    """--family: 'all' (every family that runs on the GPU) or a comma-separated list."""
    if a.family != "all":
        return parse_families(a.family)  # solve() explains if one does not run on the GPU
    fams = [f.name for f in families_on(gpu, FAMILIES)]
    if not fams:
        raise UserError(f"no kernel family runs on {gpu.slug} ({gpu.arch})")
    return fams


def _fmt_cfg(c) -> str:
    cl = f" cluster {c.cluster_m}x{c.cluster_n}" if (c.cluster_m, c.cluster_n) != (1, 1) else ""
    return (f"{c.tile_m}x{c.tile_n}x{c.tile_k}, {c.stages} stages{cl}, "
            f"{'persistent' if c.persistent else 'non-persistent'}, {c.raster} raster")


def _print_solution(s, gpu) -> None:
    print(f"{s.family} on {gpu.slug}, {s.shape}, model {s.model} "
          f"({s.n_configs} configurations, {s.n_classes} tiles)")
    print(f"  optimum:   {_fmt_cfg(s.config)}")
    print(f"             predicted {s.predicted_us:.3f} us, MATH wait {s.math_wait_us:.3f} us, "
          f"limiter {s.breakdown.get('limiter')}")
    skip = {"predicted_us", "limiter", "math_wait_us"}
    parts = [f"{k}={v:.3f}" if isinstance(v, float) else f"{k}={v}"
             for k, v in s.breakdown.items() if k not in skip]
    print(f"             {', '.join(parts)}")
    if s.runner_up is not None:
        r = s.runner_up
        print(f"  runner-up: {_fmt_cfg(r.config)}: predicted {r.predicted_us:.3f} us "
              f"(+{(r.predicted_us / s.predicted_us - 1) * 100:.2f}%)")
    print(f"  solve:     {s.solve_s * 1e3:.1f} ms (runner-up {s.runner_up_s * 1e3:.1f} ms)")


def optimize_shape(a, gpu, pset, fams, fix) -> int:
    shape = parse_shape(a.shape, a.dtype)
    sols, errors = [], []
    for f in fams:
        try:
            sols.append(solve(shape, f, gpu, pset, a.model, fix=fix or None))
        except UserError as err:
            if a.family != "all":
                raise
            errors.append(str(err))  # e.g. a dtype one family has no kernel for
    if not sols:
        raise UserError("; ".join(errors))
    if a.json:
        print(json.dumps([s.to_dict() for s in sols], indent=2, default=str))
        return 0
    for s in sols:
        _print_solution(s, gpu)
    return 0


def optimize_testlist(a, gpu, pset, fams) -> int:
    path = Path(a.testlist)
    shapes = read_testlist(path, a.dtype)
    if a.measurements is None:  # not given: the default file, if there is one
        default = RESULTS / gpu.slug / "measurements" / f"{path.stem}.csv"
        meas = read_measurements(default) if default.is_file() else None
    else:  # given; the flag alone (an empty value) means none
        meas = read_measurements(a.measurements) if a.measurements else None
    table = tilings_table(shapes, gpu, pset, fams, a.model, meas, a.space)
    out = Path(a.out) if a.out else RESULTS / gpu.slug / "tilings" / f"{path.stem}.csv"
    out.parent.mkdir(parents=True, exist_ok=True)
    table.write_csv(out)
    if a.json:
        print(json.dumps(table.to_dicts(), indent=2, default=str))
    solve = table.get_column("solve_s")
    msg = (f"wrote {table.height} tilings under {a.model} to {out}; solve median "
           f"{solve.median() * 1e3:.1f} ms, max {solve.max() * 1e3:.1f} ms")
    reg = mean_regret(table)
    if reg is not None:
        msg += f"; mean regret {reg * 100:.2f}%"
    print(msg, file=sys.stderr)
    return 0


def cmd_optimize(a) -> int:
    if bool(a.shape) == bool(a.testlist):
        raise UserError("optimize: give --shape MxNxK or --testlist CSV (one of them)")
    check_dtype(a.dtype, "--dtype")
    gpu = resolve_gpu(a.gpu)
    pset = resolve_params(gpu, a.params, a.set)
    fams = _families(a, gpu)
    fix = _fix(a)
    if a.shape:
        return optimize_shape(a, gpu, pset, fams, fix)
    if fix:
        raise UserError("optimize: --tile/--stages/--raster apply to one --shape, not a testlist")
    return optimize_testlist(a, gpu, pset, fams)


def add_parsers(sub) -> None:
    p = sub.add_parser(
        "optimize", help="Z3-optimal tiling of a shape (or a testlist) under a model, with runner-up and regret")
    add_gpu_flags(p)
    p.add_argument("--shape", help="problem MxNxK, e.g. 4096x4096x4096")
    p.add_argument("--testlist", help="testlist CSV: write a tilings table instead")
    p.add_argument("--dtype", default="bf16", help="input dtype (default bf16; simt is fp32)")
    p.add_argument("--family", default="all",
                   help="kernel family, comma-separated families, or all (default: every family that runs "
                   f"on the GPU); known: {', '.join(FAMILIES)}")
    p.add_argument("--model", default=DEFAULT_MODEL, choices=MODELS, help=f"default {DEFAULT_MODEL}")
    p.add_argument("--tile", help="pin the tile TMxTNxTK")
    p.add_argument("--stages", type=int, help="pin the number of stages")
    p.add_argument("--raster", choices=RASTERS, help="pin the raster order")
    p.add_argument("--measurements", nargs="?", const="",
                   help="measurements CSV/parquet for the regret (testlist mode); default "
                   "results/<gpu>/measurements/<testlist>.csv if present; the flag alone: none")
    p.add_argument("--space", default="auto", choices=("auto", "legal", "measured"),
                   help="testlist mode: search the legal space or the measured configurations")
    p.add_argument("--out", help="testlist mode: CSV to write (default results/<gpu>/tilings/<testlist>.csv)")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(func=cmd_optimize)
