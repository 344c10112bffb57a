"""Issue 17's accuracy protocol on the H100 reference data, ws-hopper: leave-one-testlist-out
(the headline) and grouped by weight matrix (n, k), per model and shape class, with
nvMatmulHeuristics' estimate and pick on the same rows where the `nvmmh` extra is installed.

Development data: the shipped measurements (results/<gpu>/shipped/measurements/*.csv:
random, dsv3, paper-grid, squares, decode, llm, sealed -- llm since issue 17, the first
sealed list since both GPUs scored it, 2026-11-25 and 2026-12-05), or a reference sweep's
lists still under results/<gpu>/incoming/<dtype>/. The held-out list
(testlists/holdout.csv, measured in results/<gpu>/holdout/<dtype>/holdout.csv) is read only
with ``--holdout``, which fits on all the development data and scores the held-out list:
run it once, at the end, and report what it prints.

In bf16 each fold's residual correction also learns from the GPU's timed optimizer answers
(benchmarks/optimizer_picks.py's committed sets and re-timed rounds, shapes no testlist
holds), as the workflow's does: the correction then learns the region of the space the
optimizer ranks in. ``--without-answers``: the correction of the testlists' rows alone
(what the workflow shipped before the fifty-first session). The constants are fitted on
the testlists' rows alone either way.

In another dtype (fp8) each fold's correction also learns from the GPU's bf16 rows and
answers (teacher rows, ``fit.accuracy``), as the workflow's does since the fifty-third
session: those of the left-out list and its shapes (by (n, k) in the nk split) dropped,
each predicted with bf16's own constants fitted in the same fold. ``--without-teacher``:
the fp8 rows alone.

    python benchmarks/accuracy_protocol.py [--gpu h100-sxm5-80gb] [--dtype bf16] [--jobs 2]
        [--grouping testlist,nk] [--out DIR] [--holdout] [--without-answers]
        [--without-teacher]

Prints one table per split (model x class: rows, shapes, MAPE, p95, Spearman, regret)
and the targets; with --out writes the predictions (parquet) and the summaries (CSV).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
HOLDOUT = "holdout"  # the held-out list: testlists/holdout.csv, results/<gpu>/holdout/<dtype>/holdout.csv
TEACHER_DTYPE = "bf16"  # another dtype's correction also learns from this one's rows and answers
# issue 17's targets, leave-one-testlist-out, ws-hopper
TARGETS = {"ws-pipelined+fit": {"mape_pct": 7.0},
           "ws-pipelined+fit+residual": {"mape_pct": 4.0, "p95_ape_pct": 12.0, "spearman_mean": 0.95,
                                         "regret_mean_pct": 1.0}}


def measurement_files(gpu: str, dtype: str) -> dict[str, Path]:
    """testlist -> measured table: the shipped lists, a list of a reference sweep still
    under way (results/<gpu>/incoming/<dtype>/) replacing its shipped table; the held-out
    list from results/<gpu>/holdout/<dtype>/."""
    base = ROOT / "results" / gpu
    shipped = base / "shipped" / "measurements" if dtype == "bf16" else base / "shipped" / dtype / "measurements"
    files = {p.stem: p for p in sorted(shipped.glob("*.csv"))}
    for p in sorted((base / "incoming" / dtype).glob("*.journal.csv")):
        files[p.name.removesuffix(".journal.csv")] = p
    files.pop(HOLDOUT, None)  # a sweep's journal of the held-out list is never development data
    held = base / HOLDOUT / dtype / f"{HOLDOUT}.csv"
    if held.is_file():
        files[HOLDOUT] = held
    return files


def development_rows(gpu: str, dtype: str):
    """Every development list of ``gpu`` (a slug) in ``dtype`` as one table
    (``protocol.development``), never the held-out list. src/ on the import path."""
    from gemmperf import tables
    from gemmperf.fit import protocol as P

    files = measurement_files(gpu, dtype)
    files.pop(HOLDOUT, None)
    return P.development({name: tables.read_measurements(path) for name, path in files.items()})


def answer_rows(gpu: str):
    """The timed optimizer answers of ``gpu`` (a slug) as task rows with ``time_us``: every
    verified run of optimizer_picks.py's committed sets and their re-timed rounds (bf16),
    as the workflow's fit reads them."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    import optimizer_picks

    key = {slug: key for key, slug in optimizer_picks.GPUS.items()}[gpu]
    return optimizer_picks.answer_rows(key).drop("set", "kinds")


def show(summary, title: str, key: str = "class") -> None:
    print(f"\n## {title}\n")
    print(f"| model | {key} | rows | shapes | MAPE % | p95 % | geomean pred/meas | Spearman | regret % |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for r in summary.iter_rows(named=True):
        rho = "--" if r["spearman_mean"] is None else f"{r['spearman_mean']:.3f}"
        print(f"| {r['model']} | {r[key]} | {r['n']} | {r['shapes']} | {r['mape_pct']:.1f} | "
              f"{r['p95_ape_pct']:.1f} | {r['geomean_ratio']:.3f} | {rho} | {r['regret_mean_pct']:.2f} |")


def verdict(summary) -> None:
    print("\ntargets (class 'all'):")
    overall = {}
    for r in summary.filter(summary["class"] == "all").iter_rows(named=True):
        overall[r["model"]] = r["mape_pct"]
        for key, bound in TARGETS.get(r["model"], {}).items():
            ok = r[key] >= bound if key == "spearman_mean" else r[key] <= bound
            print(f"  {r['model']:<28} {key:<16} {r[key]:7.3f} {'>=' if key == 'spearman_mean' else '<='} "
                  f"{bound:<5} {'met' if ok else 'NOT met'}")
    for r in summary.filter(summary["class"] != "all").iter_rows(named=True):
        if r["model"] in TARGETS and r["mape_pct"] > 2 * overall[r["model"]]:
            print(f"  {r['model']:<28} class {r['class']!r}: MAPE {r['mape_pct']:.1f}% > 2 x overall "
                  f"{overall[r['model']]:.1f}%")


def libraries() -> str:
    """Python's and the fitting libraries' versions, printed with the figures: a run repeats
    itself exactly here, yet a rerun on another day's installation once differed in the
    third digit (MODEL_ACCURACY.md, thirty-seventh session) and its versions were unknown."""
    import platform
    from importlib.metadata import PackageNotFoundError, version

    found = [f"python {platform.python_version()}"]
    for name in ("numpy", "scipy", "scikit-learn", "polars", "nvidia-matmul-heuristics"):
        try:
            found.append(f"{name} {version(name)}")
        except PackageNotFoundError:
            found.append(f"{name} absent")
    return ", ".join(found)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--gpu", default="h100-sxm5-80gb")
    p.add_argument("--dtype", default="bf16")
    p.add_argument("--grouping", default="testlist,nk")
    p.add_argument("--jobs", type=int, default=0, help="worker processes (0: every core)")
    p.add_argument("--out", default="", help="folder for predictions.parquet and summaries")
    p.add_argument("--holdout", action="store_true", help="score the held-out list (once, at the end)")
    p.add_argument("--without-answers", action="store_true",
                   help="the correction of the testlists' rows alone, not taught the timed optimizer answers")
    p.add_argument("--without-teacher", action="store_true",
                   help="outside bf16: the correction of this dtype's rows alone, not taught the bf16 rows")
    args = p.parse_args(argv)
    held_out = measurement_files(args.gpu, args.dtype).get(HOLDOUT)
    if args.holdout and held_out is None:
        print(f"accuracy_protocol.py: --holdout: {ROOT / 'results' / args.gpu / HOLDOUT / args.dtype / (HOLDOUT + '.csv')}"
              " does not exist: this GPU has not measured the held-out list in this dtype", file=sys.stderr)
        return 2
    sys.path.insert(0, str(ROOT / "src"))
    import polars as pl

    from gemmperf import tables
    from gemmperf.fit import protocol as P
    from gemmperf.fit.accuracy import available_cores
    from gemmperf.fit.microbench import fit_paramset, with_dtypes
    from gemmperf.hardware import load_gpu

    gpu = load_gpu(ROOT / "results" / args.gpu / "shipped" / "hardware.json")
    microbench = str(ROOT / "results" / args.gpu / "shipped" / "microbench.csv")
    pset = fit_paramset(gpu, microbench, ["ws-hopper"], args.dtype)
    dev = development_rows(args.gpu, args.dtype)
    print(f"development: {dev.height} ws-hopper rows, {dev.get_column('shape').n_unique()} shapes, "
          f"{dev.get_column('nk').n_unique()} weight matrices, testlists "
          + ", ".join(f"{t} {n}" for t, n in dev.group_by("testlist").len().sort("testlist").iter_rows()))
    print(f"libraries: {libraries()}")
    # the timed answers are bf16: another dtype's correction learns from them with the bf16 rows
    teacher = None
    if args.dtype != TEACHER_DTYPE and not args.without_teacher:
        teacher = development_rows(args.gpu, TEACHER_DTYPE)
        pset = with_dtypes(pset, microbench, ["ws-hopper"], [TEACHER_DTYPE])
        print(f"each fold's correction also learns from {teacher.height} {TEACHER_DTYPE} rows (teacher rows)")
    answers = (answer_rows(args.gpu) if (args.dtype == TEACHER_DTYPE or teacher is not None)
               and not args.without_answers else None)
    if answers is not None:
        print(f"each fold's correction also learns from {answers.height} timed optimizer answers "
              f"({answers.select('m', 'n', 'k').unique().height} shapes no testlist holds)")
    out = Path(args.out) if args.out else None
    if out:
        out.mkdir(parents=True, exist_ok=True)
    jobs = args.jobs or available_cores()
    splits = [HOLDOUT] if args.holdout else args.grouping.split(",")
    for grouping in splits:
        start = time.monotonic()
        if grouping == HOLDOUT:
            held = P.development({HOLDOUT: tables.read_measurements(held_out)})
            preds = P.score_heldout(dev, held, pset, teacher=teacher)
        else:
            preds = P.evaluate(dev, pset, grouping, jobs=jobs, correction_rows=answers, teacher=teacher)
        preds, why = P.with_nvmmh(preds, gpu)
        columns = {**P.COLUMNS, **({P.NVMMH: "nvmmh_us"} if why is None else {})}
        summary = P.summary(preds, columns=columns)
        show(summary, f"{grouping} ({time.monotonic() - start:.0f} s)" + (f"; nvMatmulHeuristics: {why}" if why else ""))
        if grouping == "testlist":
            show(P.summary(preds, by="testlist", columns=columns).filter(pl.col("class") == "all"), "per left-out testlist",
                 key="testlist")
        verdict(summary)
        if out:
            preds.write_parquet(out / f"{grouping}.parquet")
            summary.write_csv(out / f"{grouping}.csv")
    return 0


if __name__ == "__main__":
    sys.exit(main())
