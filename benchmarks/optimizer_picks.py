"""Benchmark: the optimizer's answer on shapes nobody measured, timed on the GPU.

The question users bring is "what is the best tiling for this shape, and how long?". The
accuracy protocol scores the model on the sampled configurations of measured shapes;
this scores the answer itself, on shapes no testlist holds: COUNT shapes of
``shapegen.random_shapes`` with seed SEED (a seed no list uses; shapes of any testlist
dropped), the model fitted as the workflow fits it (ws-pipelined's constants and the
residual correction on every H100 bf16 development row; the sealed list never read).

``--plan`` (development machine: polars, scikit-learn, z3) fits, then for each shape
asks the optimizer for ws-hopper's best configuration (``optimize.solve``, Z3-certified
under the fitted model: what ``gemmperf optimize`` answers) and lists the runs to time:
the answer, the fitted model's TOP best configurations of the whole legal space, the
CORRECTED_TOP best after the residual correction re-ranks the fitted model's RERANK
best, and SAMPLE configurations of the stratified sample the reference data use
(``bench.sample``, the model's choice left out: what timing a few configurations
without a model finds). Each run carries its fitted and corrected prediction. The
GPU run (numpy + cuda-python only) compiles the plan's kernels in parallel, then
verifies each run against float64 and times it as a sweep does. ``--summary run.csv``
scores the answer: its time against the best timed for the shape (regret), the
predicted time against the measured one, and the same for the corrected pick, the
best of the fitted TOP and the best of the sample.

The reference for regret is the best of the runs timed for the shape, not the best of
the whole space (20,616 configurations): a regret here is a lower bound.

    python benchmarks/optimizer_picks.py --plan
    PYTHONPATH=src:benchmarks python3 benchmarks/optimizer_picks.py [--out run.csv] [--shard i/n]
    python benchmarks/optimizer_picks.py --summary run.csv
"""

from __future__ import annotations

import math
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PLAN = ROOT / "benchmarks" / "results" / "optimizer_picks" / "plan_h100.csv"
GPU = "h100-sxm5-80gb"
FAMILY = "ws-hopper"
SEED = 20261128  # drawn on this date; testlists/random.csv is 17017, sealed.csv 92863
COUNT = 40
TOP = 8  # the fitted model's best configurations timed per shape
RERANK = 64  # the fitted model's best that the correction re-ranks
CORRECTED_TOP = 4
SAMPLE = 8
CONFIG = ("family", "dtype", "tile_m", "tile_n", "tile_k", "stages", "cluster_m", "cluster_n", "persistent",
          "raster", "mode", "epilogue", "schedule", "group_m", "persistent_ctas", "split_k", "stream_k")


def fresh_shapes():
    """COUNT shapes of random_shapes(SEED), in the order drawn, none in any testlist."""
    from gemmperf.problem import read_testlist
    from gemmperf.shapegen import random_shapes

    known = {(s.m, s.n, s.k) for path in sorted((ROOT / "testlists").glob("*.csv")) for s in read_testlist(path)}
    fresh = [s for s in random_shapes(SEED, 2 * COUNT) if (s.m, s.n, s.k) not in known]
    return fresh[:COUNT]


def _predict(configs, shape, fitted, corr) -> list[tuple[float, float]]:
    """(fitted, corrected) predicted us of each of ``configs`` on ``shape``."""
    import polars as pl

    from gemmperf.models import ws_pipelined as W

    rows = [{"m": shape.m, "n": shape.n, "k": shape.k, **{f: getattr(c, f) for f in CONFIG}} for c in configs]
    pred = corr(W.predict(pl.DataFrame(rows), fitted))
    return list(zip(pred.get_column("predicted_us").to_list(), pred.get_column("corrected_us").to_list()))


def plan() -> list[dict]:
    """The runs: per fresh shape the optimizer's answer, the fitted TOP, the corrected
    CORRECTED_TOP of the fitted RERANK, and the SAMPLE; each configuration once, its
    ``kinds`` naming every list it is on."""
    import numpy as np
    from model_ceiling import development

    from gemmperf.bench.sample import sample_configs
    from gemmperf.fit.accuracy import fit_all
    from gemmperf.kernels import get_family
    from gemmperf.optimize import exhaustive_float, solve

    dev, pset = development(GPU, "bf16")
    fitted, corr, _ = fit_all(dev, pset)
    gpu = pset.gpu
    shapes = fresh_shapes()
    sampled = sample_configs(get_family(FAMILY), gpu, "bf16", shapes, SAMPLE + 1, SEED)
    out = []
    for shape in shapes:
        answer = solve(shape, FAMILY, gpu, fitted, runner_up=False).config
        _, _, pred, _, space = exhaustive_float(shape, FAMILY, gpu, fitted)
        ranked = [space[i] for i in np.argsort(pred, kind="stable")[:RERANK]]  # ties in the space's order
        both = _predict(ranked, shape, fitted, corr)
        by_corrected = [ranked[i] for i in sorted(range(len(ranked)), key=lambda i: both[i][1])]
        kinds: dict = {}
        for kind, configs in (("answer", [answer]), ("fitted", ranked[:TOP]),
                              ("corrected", by_corrected[:CORRECTED_TOP]),
                              ("sample", [c for c in sampled[shape] if c != answer][:SAMPLE])):
            for rank, c in enumerate(configs, 1):
                kinds.setdefault(c, []).append(kind if kind in ("answer", "sample") else f"{kind}-{rank}")
        configs = list(kinds)
        for c, (fit_us, corr_us) in zip(configs, _predict(configs, shape, fitted, corr)):
            out.append({"m": shape.m, "n": shape.n, "k": shape.k, "kinds": " ".join(kinds[c]),
                        "fitted_us": round(fit_us, 4), "corrected_us": round(corr_us, 4),
                        **{f: getattr(c, f) for f in CONFIG}})
    return out


def read_plan(path=PLAN) -> list[dict]:
    """PLAN's runs as task rows (the configuration's fields typed as KernelConfig wants)."""
    from probes import read_csv

    ints = {"m", "n", "k", "tile_m", "tile_n", "tile_k", "stages", "cluster_m", "cluster_n", "group_m",
            "persistent_ctas", "split_k"}
    out = []
    for r in read_csv(path):
        task = {c: (int(v) if c in ints else v in ("True", "true") if c in ("persistent", "stream_k") else v)
                for c, v in r.items()}
        task["fitted_us"], task["corrected_us"] = float(r["fitted_us"]), float(r["corrected_us"])
        out.append(task)
    return out


def label(task: dict) -> dict:
    """The columns that name a run: the shape, the configuration's key, its lists."""
    from gemmperf.problem import KernelConfig

    config = KernelConfig(**{f: task[f] for f in CONFIG})
    return {"shape": f"{task['m']}x{task['n']}x{task['k']}", "config": config.key(), "kinds": task["kinds"],
            "fitted_us": task["fitted_us"], "corrected_us": task["corrected_us"]}


def compile_plan(tasks: list[dict], arch: str) -> None:
    """Every kernel of the plan into the disk cache, one NVRTC process per core."""
    import os

    from gemmperf.kernels.builder import build_all
    from gemmperf.problem import KernelConfig

    configs = {KernelConfig(**{f: t[f] for f in CONFIG}) for t in tasks}
    failed = build_all(sorted(configs, key=lambda c: c.key()), arch, jobs=os.cpu_count() or 1)
    for key, err in failed.items():
        print(f"compile failed: {key}: {err}")


def _pick(runs: list[dict], kind: str) -> dict | None:
    return next((r for r in runs if kind in r["kinds"].split()), None)


def _stats(values: list[float]) -> str:
    v = sorted(values)
    p90 = v[min(len(v) - 1, math.ceil(0.9 * len(v)) - 1)]
    return f"mean {statistics.fmean(v):5.2f}  median {statistics.median(v):5.2f}  p90 {p90:5.2f}  max {v[-1]:6.2f}"


def summary(rows: list[dict]) -> list[str]:
    """Per shape the answer against the best timed; then, over the shapes, the regret (%)
    of each way to choose and the error (%) of each prediction of the chosen run."""
    by_shape: dict = {}
    for r in rows:
        if r["status"] == "ok":
            by_shape.setdefault(r["shape"], []).append({**r, "time_us": float(r["time_us"])})
    wrong = [r for r in rows if r["status"] not in ("ok", "illegal")]
    out = [f"{len(rows)} runs, {sum(len(v) for v in by_shape.values())} verified and timed, {len(wrong)} failed "
           f"({', '.join(sorted({r['status'] for r in wrong})) or 'none'}); {len(by_shape)} shapes",
           "shape                  best timed (us)  answer (us)  regret %  predicted  corrected  (answer)"]
    ways = {"optimizer's answer (fitted model)": lambda runs: _pick(runs, "answer"),
            "corrected re-rank of the fitted 64": lambda runs: _pick(runs, "corrected-1"),
            f"best of the fitted top {TOP}, timed": lambda runs: min(
                (r for r in runs if any(k.startswith("fitted-") for k in r["kinds"].split())),
                key=lambda r: r["time_us"], default=None),
            f"best of {SAMPLE} sampled, timed (no model)": lambda runs: min(
                (r for r in runs if "sample" in r["kinds"].split()), key=lambda r: r["time_us"], default=None)}
    regret = {w: [] for w in ways}
    ape = {"answer, fitted": [], "answer, corrected": [], "corrected pick, corrected": []}
    every = {"fitted": [], "corrected": []}
    for shape, runs in by_shape.items():
        best = min(r["time_us"] for r in runs)
        for w, pick in ways.items():
            r = pick(runs)
            if r is not None:
                regret[w].append((r["time_us"] / best - 1.0) * 100.0)
        a, c = _pick(runs, "answer"), _pick(runs, "corrected-1")
        for r in runs:
            for col in every:
                every[col].append(abs(float(r[f"{col}_us"]) / r["time_us"] - 1.0) * 100.0)
        if c is not None:
            ape["corrected pick, corrected"].append(abs(float(c["corrected_us"]) / c["time_us"] - 1.0) * 100.0)
        if a is None:
            out.append(f"{shape:<22} {best:14.2f}   (the answer did not run)")
            continue
        ape["answer, fitted"].append(abs(float(a["fitted_us"]) / a["time_us"] - 1.0) * 100.0)
        ape["answer, corrected"].append(abs(float(a["corrected_us"]) / a["time_us"] - 1.0) * 100.0)
        out.append(f"{shape:<22} {best:14.2f} {a['time_us']:12.2f} {(a['time_us'] / best - 1) * 100:9.2f} "
                   f"{float(a['fitted_us']) / a['time_us']:10.3f} {float(a['corrected_us']) / a['time_us']:10.3f}"
                   f"  ({a['config']})")
    out.append("\nregret % against the best timed for the shape (a lower bound on the regret over the whole space)")
    for w, v in regret.items():
        if v:
            out.append(f"  {w:<42} {_stats(v)}  within 1%: {sum(x <= 1.0 for x in v)}/{len(v)}")
    out.append("\nabsolute error % of the predicted time, measured on the chosen run")
    for name, v in ape.items():
        if v:
            out.append(f"  {name:<42} {_stats(v)}")
    out.append(f"\nevery timed run (the model's best region and the sample), absolute error %")
    for col, v in every.items():
        if v:
            out.append(f"  {col:<42} {_stats(v)}")
    return out


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["--plan"]:
        sys.path.insert(0, str(ROOT / "src"))
        from probes import write_csv

        runs = plan()
        PLAN.parent.mkdir(parents=True, exist_ok=True)
        write_csv(PLAN, runs)
        print(f"{PLAN}: {len(runs)} runs over {len({(r['m'], r['n'], r['k']) for r in runs})} shapes")
        return 0
    if argv[:1] == ["--summary"]:
        from probes import read_csv

        if len(argv) != 2:
            raise SystemExit("usage: optimizer_picks.py --summary run.csv")
        print("\n".join(summary(read_csv(argv[1]))))
        return 0
    from probes import run, start

    from gemmperf.bench.device import local_arch

    shard, of = 0, 1
    if "--shard" in argv:  # --shard i/n: the i-th of every n shapes, in the plan's order
        at = argv.index("--shard")
        shard, of = map(int, argv[at + 1].split("/"))
        argv = argv[:at] + argv[at + 2:]
    a, gpu, meas = start(__doc__, argv)
    shapes = list(dict.fromkeys((t["m"], t["n"], t["k"]) for t in read_plan()))[shard::of]
    tasks = [t for t in read_plan() if (t["m"], t["n"], t["k"]) in shapes]
    compile_plan(tasks, local_arch())
    rows = run(a, gpu, meas, tasks, label)
    print("\n" + "\n".join(summary(rows)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
