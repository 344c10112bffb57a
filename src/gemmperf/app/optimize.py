"""``gemmperf optimize``: the best configuration of one shape (one line), or a testlist's table."""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

import polars as pl

from ..errors import UserError
from ..kernels import families_on, get_family
from ..fit.residual import Correction
from ..optimize import DEFAULT_MODEL, FIELDS, MODELS, shortlist, solve
from ..optimize.shortlist import RERANK, reranked
from ..optimize.tilings import mean_regret, tilings_table
from ..problem import EPILOGUES, FAMILIES, RASTERS, SCHEDULES, check_dtype, parse_shape, read_testlist
from ..tables import read_measurements, valid_rows
from . import answers
from .answerband import FAMILY as BAND_FAMILY
from .answerband import band_clause, band_path, band_sentence, load_band
from .explain import fmt_config, measured_best, one_line, us
from .modelparams import (add_gpu_flags, add_transfer_flag, carried_correction, default_params_path,
                          resolve_correction, resolve_params, transferred_params)
from .resolve import RESULTS, output_path, parse_families, parse_ints, resolve_gpu, run_name

EPILOG = """examples:
  gemmperf optimize --gpu h100-sxm5-80gb --shape 4096x4096x4096
  gemmperf optimize --gpu h100-sxm5-80gb --shape 4096x4096x4096 --explain
  gemmperf optimize --gpu h100-sxm5-80gb --shape 8192x1024x4096 --family ws-hopper --tile 128x256x64 --json
  gemmperf optimize --gpu h100-sxm5-80gb --testlist testlists/dsv3.csv --out tilings/dsv3.csv
  gemmperf optimize --gpu h100-sxm5-80gb --shape 64x7168x2048 --family ws-hopper --split-k 4
  gemmperf optimize --gpu h100-sxm5-80gb --shape 64x7168x2048 --family ws-hopper --no-stream-k --split-k 1
  gemmperf optimize --gpu h100-sxm5-80gb --shape 4096x4096x4096 --dtype fp8
  gemmperf optimize --gpu h100-sxm5-80gb --shape 2440x5879x541 --top 8
  gemmperf optimize --gpu h100-sxm5-80gb --shape 2440x5879x541 --corrected --top 4
  gemmperf optimize --gpu h200-sxm-141gb --transfer-from h100-sxm5-80gb --shape 2440x5879x541 --corrected

With --shape the answer is one line: the best configuration over the families solved, its
predicted time and limiter, the fastest measurement of that shape in
results/<gpu>/measurements (or the shipped ones), and where the parameters came from.
--explain prints each family's optimum with its breakdown, runner-up and solve time.
--top N lists, under the answer, the model's N best configurations of the answer's family
(the answer first) with their predicted times: a shortlist to time on the GPU, which finds
a faster kernel than the single answer more often than not where the model errs
(benchmarks/optimizer_picks.py measures how often). --corrected (or --correction FILE)
re-ranks the model's 64 best by the residual correction the workflow fitted
(results/<gpu>/correction.json): a second line gives the corrected best and its
corrected time, and --top lists the re-ranked order. --transfer-from GPU answers for --gpu
from GPU's fit carried over (as `gemmperf predict --transfer-from` does; --corrected then
re-ranks by GPU's correction): the tiling to run on the GPU you are moving to, no GEMM
measured on it.
With --testlist it writes one row per shape and family (tilings CSV), with the measured
time of the choice and the regret where measurements exist.

The space includes split-K (K of a tile shared by 2 to 16 CTAs) and stream-K where the
family has them (ws-hopper); --split-k S and --stream-k / --no-stream-k pin them like
--epilogue or --schedule (--split-k 1 --no-stream-k: K never shared). --dtype fp8 is
e4m3 in, bf16 out; the defaults for a dtype other than bf16 (parameters, measurements,
output) are under results/<gpu>/<dtype>/, where the workflow writes that dtype's files.
"""


def _fix(a) -> dict:
    """The pinned parts of the configuration (--tile, --stages, --cluster, --raster,
    --group-m, --epilogue, --schedule, --split-k, --stream-k)."""
    fix = {}
    if a.tile:
        tm, tn, tk = parse_ints(a.tile, "--tile", 3)
        fix.update(tile_m=tm, tile_n=tn, tile_k=tk)
    if a.stages is not None:
        if a.stages < 1:
            raise UserError(f"--stages {a.stages}: must be >= 1")
        fix["stages"] = a.stages
    if a.cluster:
        cm, cn = parse_ints(a.cluster, "--cluster", 2)
        fix.update(cluster_m=cm, cluster_n=cn)
    if a.split_k is not None and a.split_k < 1:
        raise UserError(f"--split-k {a.split_k}: must be >= 1 (1: K not split)")
    for name in ("raster", "group_m", "epilogue", "schedule", "split_k", "stream_k"):
        if getattr(a, name) is not None:
            fix[name] = getattr(a, name)
    return fix


def _families(a, gpu) -> list[str]:
    """--family: 'all' (every family that runs on the GPU) or a comma-separated list."""
    if a.family != "all":
        return parse_families(a.family)  # solve() explains if one does not run on the GPU
    fams = [f.name for f in families_on(gpu, FAMILIES)]
    if not fams:
        raise UserError(f"no kernel family runs on {gpu.slug} ({gpu.arch})")
    return fams


def _print_solution(s, gpu) -> None:
    print(f"{s.family} on {gpu.slug}, {s.shape}, model {s.model} "
          f"({s.n_configs} configurations, {s.n_classes} tiles)")
    print(f"  optimum:   {fmt_config(s.config)}")
    print(f"             predicted {s.predicted_us:.3f} us, MATH wait {s.math_wait_us:.3f} us, "
          f"limiter {s.breakdown.get('limiter')}")
    skip = {"predicted_us", "limiter", "math_wait_us"}
    parts = [f"{k}={v:.3f}" if isinstance(v, float) else f"{k}={v}"
             for k, v in s.breakdown.items() if k not in skip]
    print(f"             {', '.join(parts)}")
    if s.runner_up is not None:
        r = s.runner_up
        print(f"  runner-up: {fmt_config(r.config)}: predicted {r.predicted_us:.3f} us "
              f"(+{(r.predicted_us / s.predicted_us - 1) * 100:.2f}%)")
    print(f"  solve:     {s.solve_s * 1e3:.1f} ms (runner-up {s.runner_up_s * 1e3:.1f} ms)")


def _shape_reason(shape, gpu, family: str | None = None) -> str | None:
    """Why ``shape`` has no answer on ``gpu`` (in the dtype ``family`` computes), or None."""
    dtype = get_family(family).dtype_for(shape.dtype) if family else shape.dtype
    return answers.shape_reason(shape.m, shape.n, shape.k, dtype, gpu) or \
        answers.arithmetic_reason(shape.m, shape.n, shape.k)


def _check_shape(shape, gpu, origin: str = "") -> None:
    """A shape whose operands do not fit in the GPU's memory has no answer."""
    reason = _shape_reason(shape, gpu)
    if reason:
        raise UserError(f"{origin}{reason}")


def _check_solutions(sols) -> None:
    for s in sols:
        if not (math.isfinite(s.predicted_us) and s.predicted_us > 0):
            raise UserError(f"internal error: {s.family} {s.model} gave predicted_us = {s.predicted_us} for "
                            f"{s.shape} (please report it); no answer given")


def optimize_shape(a, gpu, pset, fams, fix, carried_from=None) -> int:
    """One shape's answer; ``carried_from``: the GPU whose fit ``pset`` carries (--transfer-from)."""
    shape = parse_shape(a.shape, a.dtype)
    _check_shape(shape, gpu)
    sols, errors, skipped = [], [], []
    for f in fams:
        try:
            computed = get_family(f).dtype_for(shape.dtype)
            if a.family == "all" and computed != shape.dtype:  # never answer another dtype's question
                raise UserError(f"{f}: computes {computed}, not {shape.dtype}")
            reason = _shape_reason(shape, gpu, f)
            if reason:
                raise UserError(f"{f}: {reason}")
            sols.append(solve(shape, f, gpu, pset, a.model, fix=fix or None))
        except UserError as err:
            if a.family != "all":
                raise
            errors.append(str(err))  # e.g. a dtype one family has no kernel for
            skipped.append(f)
    if not sols:
        raise UserError("; ".join(errors))
    _check_solutions(sols)
    source = answers.params_source(pset, [(s.family, s.shape.dtype) for s in sols])
    correct = _correction(a, gpu, carried_from)
    top = {id(s): _listed(s, gpu, pset, fix, a.top, correct) for s in sols} if a.top or correct else {}
    best = min(sols, key=lambda s: s.predicted_us)
    band, how_long = _how_long(a, gpu, best, top.get(id(best)), fix, carried_from)
    if a.json:
        print(json.dumps([{**s.to_dict(), "params_source": source, **_top_dict(top.get(id(s)), a.top),
                           **({"how_long": how_long} if s is best and how_long else {})} for s in sols],
                         indent=2, default=str))
        return 0
    pairs = [(s.family, s.shape.dtype) for s in sols]
    measured = measured_best(gpu, (shape.m, shape.n, shape.k), pairs)
    if not a.explain:
        print(one_line(sols, gpu, measured, answers.params_source(pset, pairs, short=True), skipped)
              + band_clause(how_long.get("answer")))
    else:
        for s in sols:
            _print_solution(s, gpu)
        for err in errors:
            print(f"skipped: {err}")
        print(one_line(sols, gpu, measured, source) + band_clause(how_long.get("answer")))
    if top:
        _print_listed(best, top[id(best)], a.top, band_clause(how_long.get("corrected")))
    if correct is not None and carried_from is not None:
        print(f"corrected {carried_correction(carried_from, gpu)}")
    if a.explain and how_long:
        for name, entry in how_long.items():
            print(band_sentence(entry, name == "corrected"))
        print(f"  (the answer band: {band})")
    return 0


def _how_long(a, gpu, best, listed, fix: dict, carried_from) -> tuple[Path | None, dict]:
    """(the band's file, {"answer": ..., "corrected": ...}) of the answer band
    (``answerband``): each band with the time to expect (``expect_us``, ``low_us``,
    ``high_us``) of the answer and of --corrected's pick, where results/<run>/answer_band.json
    was computed with the very parameters (and correction) answering: the GPU's own fit, no
    --set, --transfer-from or pins (the band's answers were searched over the whole space),
    ws-pipelined, the band's family. None of that: (None, {})."""
    if carried_from is not None or fix or a.set or a.model != "ws-pipelined" or best.family != BAND_FAMILY:
        return None, {}
    params = Path(a.params) if a.params else default_params_path(gpu, a.dtype)
    corrected = listed is not None and listed[0][2] is not None
    correction = (Path(a.correction) if a.correction else RESULTS / run_name(gpu.slug, a.dtype) / "correction.json"
                  ) if corrected else None
    path = band_path(gpu.slug, a.dtype)
    found = load_band(path, params, None, correction)
    if found is None or found.get("gpu") != gpu.slug or found.get("dtype") != a.dtype:
        return None, {}
    entries = {}
    for name, predicted in (("answer", best.predicted_us), ("corrected", listed[0][2] if corrected else None)):
        b = found.get(name)
        if predicted is not None and b:
            entries[name] = {**b, "expect_us": predicted * b["median"], "low_us": predicted * b["low"],
                             "high_us": predicted * b["high"]}
    return path, entries


def _listed(sol, gpu, pset, fix: dict, count: int | None, correct) -> list[tuple]:
    """(configuration, predicted us, corrected us or None) of ``sol``'s family: with a
    correction the model's RERANK best (at least ``count``) re-ranked by it, else the
    shortlist of ``count`` (the answer first)."""
    if correct is None:
        return [(c, t, None) for c, t in shortlist(sol, gpu, pset, count, fix or None)]
    return reranked(shortlist(sol, gpu, pset, max(RERANK, count or 0), fix or None), sol.shape, pset, correct)


def _print_listed(best, listed: list[tuple], count: int | None, how_long: str = "") -> None:
    """Under the answer: the corrected best (with a correction; ``how_long`` after it),
    then ``count`` of the list."""
    corrected = listed[0][2] is not None
    if corrected:
        c, fitted_us, corrected_us = listed[0]
        answer = next(x[2] for x in listed if x[0] == best.config)
        print(f"corrected: {best.family} {fmt_config(c)}: {us(corrected_us)} (ws-pipelined+residual, the best of "
              f"the model's {len(listed)} best; fitted {us(fitted_us)}; the answer above corrected: {us(answer)})"
              + how_long)
    if count:
        order = "re-ranked by the residual correction" if corrected else "the answer first"
        print(f"the model's {min(count, len(listed))} best {best.family} configurations ({order}), to time:")
        for i, (c, fitted_us, corrected_us) in enumerate(listed[:count], 1):
            times = (f"corrected {corrected_us:.2f} us, fitted {fitted_us:.2f} us" if corrected else
                     f"{fitted_us:.2f} us (+{(fitted_us / best.predicted_us - 1) * 100:.2f}%)")
            print(f"  {i:2d}. {fmt_config(c)}: {times}")


def _correction(a, gpu, carried_from=None) -> Correction | None:
    """--correction FILE or --corrected (results/<gpu>/correction.json; with --transfer-from,
    the GPU ``carried_from``'s, carried onto ``gpu``'s SMs): the residual correction that
    re-ranks the model's best (None: neither given)."""
    if not (a.correction or a.corrected):
        return None
    if a.model != "ws-pipelined":
        raise UserError(f"--corrected: the residual correction corrects ws-pipelined, not --model {a.model}")
    return resolve_correction(a.correction, a.corrected, gpu, a.dtype, carried_from)


def _top_dict(top, count: int | None) -> dict:
    """A solution's lists for --json: "top", its ``count`` first (with --top), and
    "corrected", the re-ranked first (with a correction); each {fields..., predicted_us
    [, corrected_us]}."""
    if top is None:
        return {}

    def entry(c, fitted_us, corrected_us):
        out = {**{f: getattr(c, f) for f in FIELDS}, "predicted_us": fitted_us}
        return out if corrected_us is None else {**out, "corrected_us": corrected_us}

    out = {"top": [entry(*x) for x in top[:count]]} if count else {}
    return {**out, "corrected": entry(*top[0])} if top[0][2] is not None else out


def _measurements(a, gpu, path: Path):
    """The measurements for the regret (None: none); --space measured requires some."""
    if a.measurements is None:  # not given: the default file, if there is one
        looked = RESULTS / run_name(gpu.slug, a.dtype) / "measurements" / f"{path.stem}.csv"
        meas = read_measurements(looked) if looked.is_file() else None
    else:  # given; the flag alone (an empty value) means none
        looked = a.measurements or "(none: --measurements given without a file)"
        meas = read_measurements(a.measurements) if a.measurements else None
    if a.space == "measured" and (meas is None or valid_rows(meas).height == 0):
        raise UserError(f"--space measured: no valid measurements (looked for {looked}); "
                        "give --measurements CSV or --space legal")
    return meas


def _taking_dtype(fams: list[str], dtype: str) -> list[str]:
    """The families among ``fams`` with a kernel for ``dtype`` (simt computes fp32 for
    any); the others are skipped with a line on stderr, and none left is an error."""
    keep = [f for f in fams if get_family(f).dtype_for(dtype) in get_family(f).dtypes]
    reasons = [f"{get_family(f).dtype_reason()}, not {dtype}" for f in fams if f not in keep]
    if not keep:
        raise UserError(f"--dtype {dtype}: no kernel of {', '.join(fams)} takes it ({'; '.join(reasons)})")
    for reason in reasons:
        print(f"optimize: skipping {reason.split(' ', 1)[0]}: {reason}", file=sys.stderr)
    return keep


def optimize_testlist(a, gpu, pset, fams) -> int:
    path = Path(a.testlist)
    fams = _taking_dtype(fams, a.dtype)
    shapes = read_testlist(path, a.dtype)
    for s in shapes:
        _check_shape(s, gpu, f"{path}: ")
    meas = _measurements(a, gpu, path)
    default = RESULTS / run_name(gpu.slug, a.dtype) / "tilings" / f"{path.stem}.csv"
    out = output_path(a.out, (".csv",)) if a.out else default
    table = tilings_table(shapes, gpu, pset, fams, a.model, meas, a.space)
    answers.check_times(table)
    source = answers.params_source(pset, answers.table_pairs(table))
    table = table.with_columns(pl.lit(source).alias("params_source"))
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
    print(msg + f"; parameters: {source}", file=sys.stderr)
    return 0


def cmd_optimize(a) -> int:
    if bool(a.shape) == bool(a.testlist):
        raise UserError("optimize: give --shape MxNxK or --testlist CSV (one of them)")
    check_dtype(a.dtype, "--dtype")
    gpu = resolve_gpu(a.gpu)
    carried_from = None
    if a.transfer_from:
        pset, fitted = transferred_params(gpu, a.transfer_from, a.params, a.set, a.dtype)
        carried_from = fitted.gpu
    else:
        pset = resolve_params(gpu, a.params, a.set, a.params_any_gpu, a.dtype)
    fams = _families(a, gpu)
    fix = _fix(a)
    if a.top is not None and a.top < 1:
        raise UserError(f"--top {a.top}: expected a positive count of configurations")
    if a.shape:
        given = [f for f, v in (("--space", a.space != "auto"), ("--measurements", a.measurements is not None),
                                ("--out", a.out)) if v]
        if given:
            raise UserError(f"{', '.join(given)}: testlist mode only (with --testlist, not --shape)")
        return optimize_shape(a, gpu, pset, fams, fix, carried_from)
    if a.top:
        raise UserError(f"--top {a.top}: one shape's shortlist (with --shape, not --testlist)")
    if a.corrected or a.correction:
        raise UserError("--corrected / --correction: re-ranks one shape's best (with --shape, not --testlist)")
    if fix:
        raise UserError("optimize: the pins (--tile, --stages, --raster, --split-k, ...) apply to one --shape, "
                        "not a testlist")
    return optimize_testlist(a, gpu, pset, fams)


def add_parsers(sub) -> None:
    p = sub.add_parser(
        "optimize", help="the best configuration of a shape (one line), or a testlist's tilings table",
        description="The Z3-optimal configuration under a model (default ws-pipelined) over the kernel "
        "families that run on the GPU.", epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_gpu_flags(p)
    add_transfer_flag(p, "optimize for")
    p.add_argument("--shape", help="problem MxNxK: one line with the best configuration, e.g. --shape 4096x4096x4096")
    p.add_argument("--testlist", help="testlist CSV: write a tilings table instead, e.g. --testlist testlists/dsv3.csv")
    p.add_argument("--dtype", default="bf16", help="input dtype (default bf16; simt computes fp32; fp8: e4m3 in, "
                   "bf16 out), e.g. --dtype fp8")
    p.add_argument("--family", default="all",
                   help="kernel family, comma-separated families, or all (default: every family that runs "
                   f"on the GPU); known: {', '.join(FAMILIES)}; e.g. --family ws-hopper")
    p.add_argument("--model", default=DEFAULT_MODEL, choices=MODELS,
                   help=f"the model optimized (default {DEFAULT_MODEL}), e.g. --model ws-stage")
    p.add_argument("--tile", help="pin the tile TMxTNxTK, e.g. --tile 128x256x64")
    p.add_argument("--stages", type=int, help="pin the number of stages, e.g. --stages 4")
    p.add_argument("--raster", choices=RASTERS, help="pin the raster order, e.g. --raster grouped")
    p.add_argument("--cluster", help="pin the thread-block cluster MxN, e.g. --cluster 2x1")
    p.add_argument("--group-m", type=int, help="pin the grouped raster's group (tile rows), e.g. --group-m 4")
    p.add_argument("--epilogue", choices=EPILOGUES, help="pin the epilogue, e.g. --epilogue tma")
    p.add_argument("--schedule", choices=SCHEDULES, help="pin the consumer schedule, e.g. --schedule pingpong")
    p.add_argument("--split-k", type=int, metavar="S",
                   help="pin the K split: S CTAs per tile (1: no split), e.g. --split-k 4")
    p.add_argument("--stream-k", action=argparse.BooleanOptionalAction, default=None,
                   help="pin stream-K on (--stream-k) or off (--no-stream-k)")
    p.add_argument("--explain", action="store_true",
                   help="with --shape: every family's optimum, breakdown, runner-up and solve time")
    p.add_argument("--top", type=int, metavar="N",
                   help="with --shape: also list the model's N best configurations of the answer's family, the "
                   "answer first, to time on the GPU, e.g. --top 8")
    p.add_argument("--corrected", action="store_true",
                   help=f"with --shape: re-rank the model's {RERANK} best by the residual correction "
                   "(results/<gpu>/correction.json; results/<gpu>/<dtype>/ for a dtype other than bf16) and "
                   "give the corrected best and its corrected time")
    p.add_argument("--correction", metavar="FILE",
                   help="with --shape: as --corrected, with this correction.json, e.g. --correction "
                   "results/h100-sxm5-80gb/correction.json")
    p.add_argument("--measurements", nargs="?", const="",
                   help="testlist mode: measurements CSV/parquet for the regret; default "
                   "results/<gpu>/measurements/<testlist>.csv if present (results/<gpu>/<dtype>/... for a "
                   "dtype other than bf16); the flag alone: none")
    p.add_argument("--space", default="auto", choices=("auto", "legal", "measured"),
                   help="testlist mode: search the legal space, the measured configurations (an error "
                   "without measurements), or auto: measured where a shape has some (default)")
    p.add_argument("--out", help="testlist mode: CSV to write, its folder created "
                   "(default results/<gpu>/tilings/<testlist>.csv; results/<gpu>/<dtype>/... for a dtype "
                   "other than bf16)")
    p.add_argument("--json", action="store_true", help="print JSON (every family's solution, or the table)")
    p.set_defaults(func=cmd_optimize)
