"""Issue 18's transfer: one GPU's fit carried to another with no GEMM measured on it.

For each direction (source -> target), the target's measured ws-hopper rows (every
development list; the held-out list is not read) predicted by:

- catalog defaults: the target's descriptor alone, nothing measured;
- the target's microbenchmarks alone (no GEMM fit);
- the source's fitted parameters as they are, on the target's descriptor;
- transfer (``fit.transfer``): the source's fit expressed against its microbenchmarks and
  descriptor, applied to the target's microbenchmarks and descriptor;
- the source's measured time of the same configuration, reused;
- the transfer anchored on it: the source's measured time times the ratio of the
  transfer's prediction to the source fit's on the source (``fit.transfer.anchored``);
- the transfer corrected by the source's residual correction (``fit.transfer.score``'s
  ``correction``, the one the source's workflow fits: in bf16 it also learned from the
  source's timed optimizer answers; in another dtype (fp8) from the source's bf16 rows and
  answers besides, each predicted with bf16's constants fitted in the same fit, as the
  workflow's teacher rows are since issue 17 step 44; ``--without-teacher``: fp8's rows
  alone, as this script did until then);
- for scale, the target's own fit, leave one testlist out (what measuring GEMMs on the
  target buys).

The source is fitted (constants and correction) on all its development rows, which are
the same shapes and configurations the target's rows hold: what the source measured of
them enters the transfer. ``--loto`` adds the figure for shapes neither GPU measured: for
each testlist, the source fitted without it, its transfer and corrected transfer scored on
the target's rows of that list (six fits per direction; bf16 in all about 10 minutes at
--jobs 2). Data: results/<gpu>/shipped/, or the lists of a sweep still under
results/<gpu>/incoming/ (its hardware.json and <dtype>-microbench.csv there).

    python benchmarks/transfer.py [--gpus h100-sxm5-80gb,h200-sxm-141gb] [--dtype bf16] [--jobs 2]
        [--microbench H100.csv,H200.csv] [--loto] [--without-teacher]

``--microbench`` names each GPU's microbenchmark file in the order of ``--gpus`` (fp8's
are not shipped: benchmarks/results/microbench/ has both GPUs').

Prints one table per direction (model x shape class) and the issue's targets, for the
transfer, the corrected transfer and the anchored transfer, each against the reused times.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TARGETS = {"mape_pct": 7.0, "regret_mean_pct": 1.5}  # issue 18, the transfer

def gpu_files(slug: str, dtype: str) -> tuple[Path, Path]:
    """(hardware.json, microbenchmarks) of a GPU: shipped, else a sweep's incoming/."""
    shipped = ROOT / "results" / slug / "shipped"
    if shipped.is_dir():
        return shipped / "hardware.json", shipped / "microbench.csv"
    incoming = ROOT / "results" / slug / "incoming"
    return incoming / "hardware.json", incoming / f"{dtype}-microbench.csv"


def gpu_side(slug: str, dtype: str, microbench: str | None = None, family: str = "ws-hopper",
             teacher: bool = False) -> dict:
    """One GPU's side of a transfer: its descriptor ``gpu``, its development rows ``dev``
    (every shipped list of ``dtype``; the held-out list is never read), its microbenchmark
    parameters ``base`` and copy rates ``rates`` (``microbench``: another CSV than its own),
    and with ``teacher`` outside bf16 its bf16 development rows ``teacher`` (None in bf16
    or without), ``base`` then holding bf16's microbenchmark parameters too.
    src/ and benchmarks/ on the import path, as main() puts them."""
    from accuracy_protocol import TEACHER_DTYPE, development_rows
    from gemmperf import tables
    from gemmperf.fit.microbench import fit_paramset, with_dtypes
    from gemmperf.fit.transfer import microbench_figures
    from gemmperf.hardware import load_gpu

    hw, mb = gpu_files(slug, dtype)
    mb = Path(microbench) if microbench else mb
    gpu = load_gpu(hw)
    base = fit_paramset(gpu, str(mb), [family], dtype)
    rows = None
    if teacher and dtype != TEACHER_DTYPE:
        rows = development_rows(slug, TEACHER_DTYPE)
        base = with_dtypes(base, str(gpu_files(slug, TEACHER_DTYPE)[1]), [family], [TEACHER_DTYPE])
    return {"gpu": gpu, "dev": development_rows(slug, dtype), "base": base, "teacher": rows,
            "rates": microbench_figures(tables.read_measurements(mb, required=tables.MICROBENCH_REQUIRED))}


def figures(rates: dict[str, float]) -> str:
    """fit.transfer.microbench_figures as text: copy rates in TB/s, the cost of clusters in us."""
    return ", ".join(f"{k} {v:.2f} us" if k == "cluster" else f"{k} {v / 1e6:.3f} TB/s" for k, v in sorted(rates.items()))


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--gpus", default="h100-sxm5-80gb,h200-sxm-141gb", help="two GPU slugs")
    p.add_argument("--dtype", default="bf16")
    p.add_argument("--jobs", type=int, default=2)
    p.add_argument("--microbench", default="", help="each GPU's microbenchmark CSV, in the order of --gpus")
    p.add_argument("--loto", action="store_true", help="also each testlist left out of the source's fit")
    p.add_argument("--without-teacher", action="store_true",
                   help="outside bf16: the source's correction of this dtype's rows alone, not taught the bf16 rows")
    args = p.parse_args(argv)
    sys.path.insert(0, str(ROOT / "src"))
    sys.path.insert(0, str(ROOT / "benchmarks"))
    import polars as pl

    from accuracy_protocol import answer_rows, show
    from residual_sweep import run_tasks
    from gemmperf.fit import protocol as P
    from gemmperf.fit.accuracy import fit_all, with_teacher
    from gemmperf.fit.transfer import baselines, corrected_name, score, transfer
    from gemmperf.tables import CONFIG_KEY as KEYS

    family = "ws-hopper"
    side = {}
    slugs = args.gpus.split(",")
    given = args.microbench.split(",") if args.microbench else []
    if given and len(given) != len(slugs):
        p.error(f"--microbench: {len(given)} files for {len(slugs)} GPUs")
    for i, slug in enumerate(slugs):
        side[slug] = s = gpu_side(slug, args.dtype, given[i] if given else None, family, not args.without_teacher)
        # the source's workflow correction also learns from its timed answers (bf16's, so in
        # another dtype with the bf16 rows as teacher rows)
        s["answers"] = answer_rows(slug) if args.dtype == "bf16" or s["teacher"] is not None else None
        # every row of the source is training here: no tested rows to keep its teacher rows from
        s["fitted"], s["correction"], _ = fit_all(with_teacher(s["dev"], s["teacher"], s["dev"].clear()), s["base"],
                                                  correction_rows=s["answers"])
        taught = f", teacher rows {s['teacher'].height}" if s["teacher"] is not None else ""
        print(f"{slug}: {s['dev'].height} {args.dtype} rows{taught}, answers "
              f"{0 if s['answers'] is None else s['answers'].height}")
    slugs = list(side)
    for source, target in ((slugs[0], slugs[1]), (slugs[1], slugs[0])):
        s, t = side[source], side[target]
        rows = t["dev"]
        tr = transfer(s["fitted"], s["base"], t["base"], s["rates"], t["rates"])
        models = baselines(s["fitted"], s["base"], t["base"], tr)
        preds, _ = score(models, rows, s["dev"], source, source_fit=s["fitted"], correction=s["correction"])
        corrected = corrected_name(s["fitted"], models)
        own = P.evaluate(rows, t["base"], "testlist", residual=False, jobs=args.jobs)
        own = own.select(*KEYS, "testlist", pl.col("fitted_us").alias(f"{target} own fit, leave one testlist out"))
        preds = preds.join(own, on=[*KEYS, "testlist"], how="left")
        columns = {name: name for name in [*models, corrected, f"{source} measured, reused",
                                          f"transfer anchored on {source} measured",
                                          f"{target} own fit, leave one testlist out"]}
        paired = preds
        summary = P.summary(paired, columns=columns)
        show(summary, f"{source} -> {target} ({args.dtype}, {paired.height} of {rows.height} {target} rows "
                      f"paired with a {source} row)")
        print(f"\nmicrobenchmark figures {source}: {figures(s['rates'])}; {target}: {figures(t['rates'])}")
        every = summary.filter(pl.col("class") == "all")
        reused = every.filter(pl.col("model") == f"{source} measured, reused")
        for model in (f"transfer {source} -> {target}", corrected, f"transfer anchored on {source} measured"):
            done = every.filter(pl.col("model") == model)
            for name, limit in TARGETS.items():
                value, other = done.get_column(name).item(), reused.get_column(name).item()
                print(f"target: {model}: {name} {value:.2f} <= {limit}: {'met' if value <= limit else 'NOT met'}; "
                      f"{'beats' if value < other else 'does not beat'} reused times ({other:.2f})")
        if args.loto:
            lists = sorted(rows.get_column("testlist").unique())
            tasks = [(s["dev"].filter(pl.col("testlist") != name), rows.filter(pl.col("testlist") == name), s["base"],
                      t["base"], s["rates"], t["rates"], s["answers"], s["teacher"]) for name in lists]
            held = pl.concat(run_tasks(heldout_transfer, tasks, args.jobs), how="diagonal_relaxed")
            show(P.summary(held, columns={name: name for name in HELDOUT}),
                 f"{source} -> {target}, each testlist left out of {source}'s fit ({held.height} rows)")
    return 0


HELDOUT = ("transfer", "transfer + source correction")


def heldout_transfer(task):
    """The target's rows of one testlist predicted by the transfer, and the corrected
    transfer, of a source fit (constants and correction) that did not see that list (the
    correction also taught the source's timed answers, less any of the list's shapes, and
    outside bf16 its bf16 rows less the list's and its shapes')."""
    from gemmperf.fit.accuracy import HELD_KEYS, fit_all, outside, single_thread_blas, with_teacher
    from gemmperf.fit.transfer import transfer
    from gemmperf.models import ws_pipelined as W

    train, test, source_base, target_base, source_rates, target_rates, answers, teacher = task
    with single_thread_blas():
        fitted, correction, _ = fit_all(with_teacher(train, teacher, test, HELD_KEYS), source_base,
                                        correction_rows=outside(answers, test))
    moved = W.predict(test, transfer(fitted, source_base, target_base, source_rates, target_rates))
    corrected = correction.onto(target_base.gpu.sms)(moved)
    return test.with_columns(moved.get_column("predicted_us").alias(HELDOUT[0]),
                             corrected.get_column("corrected_us").alias(HELDOUT[1]))


if __name__ == "__main__":
    sys.exit(main())
