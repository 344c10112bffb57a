"""Benchmark: the optimizer's answer on shapes nobody measured, timed on the GPU.

The question users bring is "what is the best tiling for this shape, and how long?". The
accuracy protocol scores the model on the sampled configurations of measured shapes;
this scores the answer itself, on shapes no testlist holds: COUNT shapes of
``shapegen.random_shapes`` per set of SETS (each its own seed, which no testlist uses;
shapes of any testlist or earlier set dropped; a "large" set keeps only problems of at
least LARGE_VOLUME multiply-adds), the model fitted as the workflow fits it
(ws-pipelined's constants and the residual correction on every H100 bf16 development
row; the held-out list never read). The set "dev" chose what ``gemmperf optimize`` offers
beyond its answer (``--top``, ``--corrected``); "heldout" was drawn after that choice and
is scored once.

``--plan`` (development machine: polars, scikit-learn, z3) fits, then for each shape
lists the runs ``gemmperf optimize --family ws-hopper --corrected --top 8`` names, with
the same functions: the answer (``optimize.solve``, Z3-certified under the fitted model),
the shortlist of the model's TOP best (``optimize.shortlist``, the answer first), the
CORRECTED_TOP first of the model's RERANK best re-ranked by the correction
(``optimize.shortlist.reranked``; the first is ``--corrected``'s answer), and SAMPLE
configurations of the stratified sample the reference data use (``bench.sample``, the
answer left out: what timing a few configurations without a model finds). Each run
carries its fitted and corrected prediction. The GPU run (numpy + cuda-python only)
compiles the plan's kernels in parallel, then verifies each run against float64 and
times it as a sweep does. ``--summary run.csv`` scores the answer: its time against the
best timed for the shape (regret), the predicted time against the measured one, and
the same for the corrected answer, the best of the shortlist and the best of the sample.

With ``--plan h200`` the same sets are planned for the H200 with its own fit, and beside
them the TRANSFER_TOP first of the shortlist that the H100's fit, carried onto the H200's
microbenchmarks (``fit.transfer``, no H200 GEMM read), gives: issue 18's question ("how
fast on the GPU I am moving to?") asked of the answer. The H200's data are development
data; its sets are scored as they come.

The reference for regret is the best of the runs timed for the shape, not the best of
the whole space (20,616 configurations): a regret here is a lower bound.

    python benchmarks/optimizer_picks.py --plan [h100|h200] [SET ...]
    PYTHONPATH=src:benchmarks python3 benchmarks/optimizer_picks.py --set dev [--gpu h200] [--out run.csv]
        [--shard i/n]
    python benchmarks/optimizer_picks.py --join SET [--gpu h200] [--out run.csv] shard.csv ...
    python benchmarks/optimizer_picks.py --summary run.csv
    python benchmarks/optimizer_picks.py --rescore [h100|h200]
    python benchmarks/optimizer_picks.py --plan-picks [h100|h200]
    python benchmarks/optimizer_picks.py --band
    python benchmarks/optimizer_picks.py --runs [h100|h200]
    python benchmarks/optimizer_picks.py --rules [h100|h200]
    python benchmarks/optimizer_picks.py --feedback [h100|h200]
    PYTHONPATH=src:benchmarks python3 benchmarks/optimizer_picks.py --set dev-picks [--gpu h200] [--out run.csv]

``--join`` (development machine) puts the CSVs of a set's ``--shard`` runs together as
one run of the whole plan, written where the set's run ships (``run_path``) unless
``--out`` says where: each run of the plan once, in the plan's order, rows as the shards
wrote them, so the file is the one an unsharded run would have written. A run the plan
lacks, one two shards both hold, or one no shard holds is an error naming the file.

``--runs`` (development machine) predicts every verified run of the committed sets with
this tree's fit and correction: the error by K and by the list that named a run (the
sampled configurations against the model's own picks).

``--rules`` ranks each shape's timed runs by the fitted model, the corrected one, blends
of the two and the corrected time with a penalty on how far the correction moves a run
(``RULES``) and scores each ranking's first: whether another rule than
`--corrected`'s would pick better among the configurations timed.

``--feedback`` leaves one set out at a time: its runs ranked and predicted by the
correction of the development rows alone (as shipped until step 42) and by one that also
learned from every other set's runs (``fit_correction``, as the shipped fit and
accuracy_protocol.py's bf16 folds do); the constants are the development rows' fit
either way. Whether the
correction, taught the optimizer's region, picks and predicts better on shapes it never
saw.

``--rescore`` (development machine, no GPU) scores the committed runs with this tree's fit
and correction: what `optimize --corrected` now answers for each fresh shape, where that
run was timed, and the answer's corrected time against its measured time. A model or
correction changed after the runs is scored on the answers without new GPU time (a pick
that was never timed is counted, not guessed). ``--plan-picks`` does the same and writes,
per set, the plan "<set>-picks" of the picks no run timed, each beside its shape's
fastest timed configuration; its GPU run (committed as results/<gpu>/shipped/answers/<set>-picks.csv) is
what ``--rescore`` then scores those picks by, against the faster of the pair timed
together (clocks move between sessions). A model changed after such a run may pick firsts
no run timed again: ``--plan-picks`` then plans the next round, "<set>-picks2" and so on
(the committed rounds are read, never planned again).
"""

from __future__ import annotations

import math
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "benchmarks" / "results" / "optimizer_picks"
RUNS = ROOT / "results"  # the runs: results/<gpu>/shipped/answers/<set>.csv (run_path)
GPUS = {"h100": "h100-sxm5-80gb", "h200": "h200-sxm-141gb"}  # --gpu: whose fit, plans and runs
# the GPU whose fit each GPU's plans also carry over (fit.transfer, as `gemmperf predict
# --transfer-from` does): the answer a user moving from that GPU would get
TRANSFER_FROM = {"h200": "h100-sxm5-80gb"}
FAMILY = "ws-hopper"
# set -> seed (testlists/random.csv is 17017, sealed.csv 92863, holdout.csv 51217): "dev" drawn on 2026-11-28
# before the choice of --top and --corrected, "heldout" after it; "fresh" drawn on
# 2026-11-28 ~21:15 UTC after the answer band's form was chosen (the band is scored on it
# once: --band), planned for the H200 only (no H100 was lent that session); "fresh2" and
# "fresh3" drawn on 2026-11-29 ~02:15 UTC, with the answer band and the model as they were
# (step 24), to score that band once more, then to widen it; "fresh4" and "fresh5" drawn
# on 2026-12-03 ~11:00 UTC with the model at step 32, to score the answer, its time and
# the band where nothing after step 26 was looked at; "fresh6" and "fresh7" drawn on
# 2026-12-03 ~18:00 UTC with the model at step 34, to score them where steps 33 and 34
# (both found on answers and development rows) were not looked at; "fresh8" and "fresh9"
# drawn on 2026-12-04 ~23:55 UTC with the model at step 40, after two steps that cost the
# earlier sets' answers, to score the answer where steps 35-40 were not looked at;
# "fresh10" ... "fresh21" drawn on 2026-12-05 ~16:10 UTC with the model at step 44, planned
# for the H100 (the GPU of that session), to score the answer where steps 41-44 were not
# looked at and to give the H100's correction more of the optimizer's region to learn from;
# "fresh22" ... "fresh33" drawn on 2026-12-06 ~02:40 UTC with the model at step 47, planned
# for the H100 (no H200 came), for the same two reasons (steps 45-47 not looked at on them);
# "fresh34" ... "fresh45" drawn on 2026-12-06 ~05:33 UTC with the model at step 48, planned
# for the H100 (no H200 came again), for the same two reasons; "fresh46" ... "fresh57" drawn on
# 2026-12-06 ~08:43 UTC with the model at step 49, for the same two reasons
SETS = {"dev": 20261128, "heldout": 20261129, "fresh": 20261130, "fresh2": 20261201, "fresh3": 20261202,
        "fresh4": 20261203, "fresh5": 20261204, "fresh6": 20261205, "fresh7": 20261206, "fresh8": 20261207,
        "fresh9": 20261208, "fresh10": 20261209, "fresh11": 20261210, "fresh12": 20261211, "fresh13": 20261212,
        "fresh14": 20261213, "fresh15": 20261214, "fresh16": 20261215, "fresh17": 20261216,
        "fresh18": 20261217, "fresh19": 20261218, "fresh20": 20261219, "fresh21": 20261220,
        **{f"fresh{i}": 20261199 + i for i in range(22, 58)},
        **{f"large{i}": 20261300 + i for i in range(1, 37)}}
# "large1" ... "large12" drawn on 2026-12-06 ~09:35 UTC (planned ~10:01 with the model at step 50) among the
# problems of at least LARGE_VOLUME multiply-adds only: the rows past the corrected p95 left
# one testlist out gather there (43% of them, where the lists have 21% of their rows), and
# the answers thin out there (12% of the answer runs: 2.5 per development row, 4.8 below;
# 1.6 at 2^37 and above); "large13" ... "large24" drawn on 2026-12-06 ~12:11 UTC (planned with the
# model at step 50 too) when the first twelve took about 60 s each on the H100, not the
# 80-141 s a whole-range set took at step 50; "large25" ... "large36" drawn on 2026-12-06
# ~15:12 UTC (planned with the model at step 52: 5400 trees over step 51's answers) when no
# H200 came for its held-out list, to score step 52's answer before it learns from them
LARGE_VOLUME = 2**33  # M N K, multiply-adds: 17 GFLOP, 17 us at the H100 SXM5's dense bf16 peak (989 TFLOP/s)
# the sets in the order drawn, those drawn together in one draw: --band scores each draw by
# the band of the draws before it (what a user had when its shapes came)
DRAWS = (("dev",), ("heldout",), ("fresh",), ("fresh2", "fresh3"), ("fresh4", "fresh5"), ("fresh6", "fresh7"),
         ("fresh8", "fresh9"), tuple(f"fresh{i}" for i in range(10, 22)), tuple(f"fresh{i}" for i in range(22, 34)),
         tuple(f"fresh{i}" for i in range(34, 46)), tuple(f"fresh{i}" for i in range(46, 58)),
         tuple(f"large{i}" for i in range(1, 13)), tuple(f"large{i}" for i in range(13, 25)),
         tuple(f"large{i}" for i in range(25, 37)))
COUNT = 40
TOP = 8  # the shortlist timed per shape (--top 8)
CORRECTED_TOP = 4
TRANSFER_TOP = 4  # the transferred fit's shortlist timed per shape
SAMPLE = 8
CONFIG = ("family", "dtype", "tile_m", "tile_n", "tile_k", "stages", "cluster_m", "cluster_n", "persistent",
          "raster", "mode", "epilogue", "schedule", "group_m", "persistent_ctas", "split_k", "stream_k")


def plan_path(name: str, gpu: str = "h100") -> Path:
    return RESULTS / f"plan_{gpu}_{name}.csv"


def run_path(name: str, gpu: str = "h100") -> Path:
    """A set's GPU run, committed as shipped data: the workflow's answer band
    (``gemmperf answer-band``) reads every run of a GPU."""
    return RUNS / GPUS[gpu] / "shipped" / "answers" / f"{name}.csv"


def fresh_shapes() -> dict[str, list]:
    """Set -> its COUNT shapes of random_shapes(seed), in the order drawn, none in any
    testlist or earlier set; a "large" set's only of at least LARGE_VOLUME multiply-adds
    (about one drawn shape in ten, so it draws 40 for each kept)."""
    from gemmperf.problem import read_testlist
    from gemmperf.shapegen import random_shapes

    known = {(s.m, s.n, s.k) for path in sorted((ROOT / "testlists").glob("*.csv")) for s in read_testlist(path)}
    out = {}
    for name, seed in SETS.items():
        large = name.startswith("large")
        drawn = random_shapes(seed, (40 if large else 2) * COUNT)
        out[name] = [s for s in drawn if (s.m, s.n, s.k) not in known
                     and (not large or s.m * s.n * s.k >= LARGE_VOLUME)][:COUNT]
        known |= {(s.m, s.n, s.k) for s in out[name]}
    return out


def carried_fit(source: str, gpu, residual: bool = False):
    """The fit of GPU ``source`` (its constants on every development row) carried onto
    ``gpu`` through both GPUs' shipped microbenchmarks, no GEMM of ``gpu`` read; with
    ``residual``, (that, ``source``'s residual correction carried onto ``gpu``'s SMs)."""
    from model_ceiling import development

    from gemmperf.app.modelparams import carried, microbench_file
    from gemmperf.fit.accuracy import fit_all

    dev, pset = development(source, "bf16")
    fitted, corr, _ = fit_all(dev, pset, residual=residual)
    moved = carried(fitted, gpu, microbench_file(source), microbench_file(gpu.slug), "bf16")[0]
    return (moved, corr.onto(gpu.sms)) if residual else moved


def workflow_fit(gpu_key: str):
    """(the GPU, its fitted constants, its residual correction) as the workflow fits them:
    the constants on every development row of GPUS[gpu_key], the correction on those and
    every committed timed answer (``answer_rows``). What a new set is planned with."""
    from model_ceiling import development

    from gemmperf.fit.accuracy import fit_all

    dev, pset = development(GPUS[gpu_key], "bf16")
    fitted, corr, _ = fit_all(dev, pset, correction_rows=answer_rows(gpu_key))
    return pset.gpu, fitted, corr


def scoring_fit(gpu_key: str):
    """(the GPU, the workflow's constants, set -> correction): for each committed set the
    correction the workflow makes had that set's fold never been timed
    (``fit.accuracy.fold_corrections``, the folds the answer band is cross-fitted by): the
    workflow's correction learned from every answer, so a set is scored by one that did
    not. The folds are fitted on every available core (the same trees on any number)."""
    from model_ceiling import development

    from gemmperf.fit.accuracy import available_cores, fit_all, fold_corrections

    dev, pset = development(GPUS[gpu_key], "bf16")
    fitted, _, _ = fit_all(dev, pset, residual=False)
    folds = fold_corrections(dev, fitted, pset.gpu.sms, answer_rows(gpu_key), jobs=available_cores())
    return pset.gpu, fitted, {name: corr for fold, corr in folds for name in fold}


def answered(shape, gpu, fitted, corr):
    """What `optimize --family ws-hopper --corrected` computes for ``shape``: the Z3
    answer (a Solution) and its RERANK best re-ranked by the correction, [(configuration,
    fitted us, corrected us), ...]."""
    from gemmperf.optimize import shortlist, solve
    from gemmperf.optimize.shortlist import RERANK, reranked

    sol = solve(shape, FAMILY, gpu, fitted, runner_up=False)
    return sol, reranked(shortlist(sol, gpu, fitted, RERANK), sol.shape, fitted, corr)


def plan(gpu_key: str = "h100", names: list[str] | None = None) -> dict[str, list[dict]]:
    """Set -> its runs on GPUS[gpu_key]: per shape the answer, the shortlist of TOP, the
    CORRECTED_TOP first of the re-ranked RERANK, the TRANSFER_TOP first of the carried
    fit's shortlist where TRANSFER_FROM names a GPU ("transfer-1" its answer), and the
    SAMPLE; each configuration once, its ``kinds`` naming every list it is on
    ("fitted-1" is the answer, "corrected-1" --corrected's; "carried-corrected" what
    ``optimize --transfer-from --corrected`` answers: the carried fit's RERANK best
    re-ranked by the source GPU's correction carried, in plans made since the "fresh"
    set). ``names``: the sets to plan (default every one)."""
    from gemmperf.bench.sample import sample_configs
    from gemmperf.kernels import get_family
    from gemmperf.optimize import shortlist, solve
    from gemmperf.optimize.shortlist import RERANK, reranked

    gpu, fitted, corr = workflow_fit(gpu_key)
    source = TRANSFER_FROM.get(gpu_key)
    moved, moved_corr = carried_fit(source, gpu, residual=True) if source else (None, None)
    out = {}
    for name, shapes in fresh_shapes().items():
        if names is not None and name not in names:
            continue
        sampled = sample_configs(get_family(FAMILY), gpu, "bf16", shapes, SAMPLE + 1, SETS[name])
        out[name] = []
        for shape in shapes:
            sol, ranked = answered(shape, gpu, fitted, corr)
            times = {c: (fit_us, corr_us) for c, fit_us, corr_us in ranked}
            kinds: dict = {}
            lists = [("answer", [sol.config]), ("fitted", [c for c, _ in shortlist(sol, gpu, fitted, TOP)]),
                     ("corrected", [c for c, _, _ in ranked[:CORRECTED_TOP]])]
            if moved is not None:
                carried_sol = solve(shape, FAMILY, gpu, moved, runner_up=False)
                lists.append(("transfer", [c for c, _ in shortlist(carried_sol, gpu, moved, TRANSFER_TOP)]))
                pick = reranked(shortlist(carried_sol, gpu, moved, RERANK), carried_sol.shape, moved, moved_corr)[0][0]
                lists.append(("carried-corrected", [pick]))
            lists.append(("sample", [c for c in sampled[shape] if c != sol.config][:SAMPLE]))
            for kind, configs in lists:
                for rank, c in enumerate(configs, 1):
                    kinds.setdefault(c, []).append(kind if kind in ("answer", "sample", "carried-corrected")
                                                   else f"{kind}-{rank}")
            missing = [c for c in kinds if c not in times]  # the sample's: predicted here
            times.update(zip(missing, _predicted(missing, sol.shape, fitted, corr)))
            carried = dict(zip(kinds, _predicted(list(kinds), sol.shape, moved, moved_corr))) if moved is not None else {}
            for c, listed in kinds.items():
                carried_us = ({"transfer_us": round(carried[c][0], 4), "transfer_corrected_us": round(carried[c][1], 4)}
                              if carried else {})
                out[name].append({"m": shape.m, "n": shape.n, "k": shape.k, "kinds": " ".join(listed),
                                  "fitted_us": round(times[c][0], 4), "corrected_us": round(times[c][1], 4),
                                  **carried_us, **{f: getattr(c, f) for f in CONFIG}})
    return out


def _predicted(configs, shape, params, corr=None) -> list[tuple[float, float | None]]:
    """(predicted us, corrected us or None) of each of ``configs`` on ``shape``: ws-pipelined
    with ``params``, then the correction ``corr`` where given."""
    import polars as pl

    from gemmperf.models import predict

    if not configs:
        return []
    rows = [{"m": shape.m, "n": shape.n, "k": shape.k, **{f: getattr(c, f) for f in CONFIG}} for c in configs]
    pred = predict(pl.DataFrame(rows), params, "ws-pipelined")
    corrected = corr(pred).get_column("corrected_us").to_list() if corr is not None else [None] * len(configs)
    return list(zip(pred.get_column("predicted_us").to_list(), corrected))


def read_plan(path) -> list[dict]:
    """A plan's runs as task rows (the configuration's fields typed as KernelConfig wants)."""
    from probes import read_tasks

    return read_tasks(path, floats=("fitted_us", "corrected_us", "transfer_us", "transfer_corrected_us"))


def label(task: dict) -> dict:
    """The columns that name a run: the shape, the configuration's key, its lists."""
    from gemmperf.problem import KernelConfig

    config = KernelConfig(**{f: task[f] for f in CONFIG})
    return {"shape": f"{task['m']}x{task['n']}x{task['k']}", "config": config.key(), "kinds": task["kinds"],
            **{c: task[c] for c in ("fitted_us", "corrected_us", "transfer_us", "transfer_corrected_us") if c in task}}


def join_shards(plan_rows: list[dict], shards: dict[str, list[dict]]) -> list[dict]:
    """The rows of ``shards`` (file -> its rows, each with ``shape`` and ``config``) as one
    run of the plan whose runs are ``plan_rows`` (``read_plan``'s): in the plan's order,
    each exactly once. Raises ValueError naming the file and the run that breaks that."""
    order = [(r["shape"], r["config"]) for r in map(label, plan_rows)]
    planned, found = set(order), {}
    for path, rows in shards.items():
        for line, row in enumerate(rows, start=2):
            key = (row.get("shape"), row.get("config"))
            if key not in planned:
                raise ValueError(f"{path}, line {line}: {key[0]} {key[1]} is not a run of the plan")
            if key in found:
                raise ValueError(f"{path}, line {line}: {key[0]} {key[1]} is also in {found[key][0]}")
            found[key] = (path, row)
    missing = [k for k in order if k not in found]
    if missing:
        raise ValueError(f"{', '.join(shards)}: {len(missing)} runs of the plan in no shard, "
                         f"the first {missing[0][0]} {missing[0][1]}")
    return [found[k][1] for k in order]


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
            "--corrected (the 64 best re-ranked)": lambda runs: _pick(runs, "corrected-1"),
            f"best of the --top {TOP} shortlist, timed": lambda runs: min(
                (r for r in runs if any(k.startswith("fitted-") for k in r["kinds"].split())),
                key=lambda r: r["time_us"], default=None),
            f"best of {SAMPLE} sampled, timed (no model)": lambda runs: min(
                (r for r in runs if "sample" in r["kinds"].split()), key=lambda r: r["time_us"], default=None)}
    carried = any("transfer-1" in r["kinds"].split() for r in rows)
    if carried:
        ways["the transferred fit's answer"] = lambda runs: _pick(runs, "transfer-1")
        ways[f"best of its --top {TRANSFER_TOP}, timed"] = lambda runs: min(
            (r for r in runs if any(k.startswith("transfer-") for k in r["kinds"].split())),
            key=lambda r: r["time_us"], default=None)
    if any("carried-corrected" in r["kinds"].split() for r in rows):
        ways["the transferred fit's --corrected pick"] = lambda runs: _pick(runs, "carried-corrected")
    regret = {w: [] for w in ways}
    ape = {"answer, fitted": [], "answer, corrected": [], "--corrected's answer, corrected": []}
    every = {"fitted": [], "corrected": []}
    if carried:
        ape["the transferred answer, transferred fit"] = []
        every["transfer"] = []
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
        moved, moved_pick = _pick(runs, "transfer-1"), _pick(runs, "carried-corrected")
        if moved_pick is not None:
            ape.setdefault("the transferred --corrected pick, carried correction", []).append(
                abs(float(moved_pick["transfer_corrected_us"]) / moved_pick["time_us"] - 1.0) * 100.0)
        if moved is not None:
            ape["the transferred answer, transferred fit"].append(
                abs(float(moved["transfer_us"]) / moved["time_us"] - 1.0) * 100.0)
        if c is not None:
            ape["--corrected's answer, corrected"].append(abs(float(c["corrected_us"]) / c["time_us"] - 1.0) * 100.0)
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
    out.append("\nevery timed run (the model's best region and the sample), absolute error %")
    for col, v in every.items():
        if v:
            out.append(f"  {col:<42} {_stats(v)}")
    return out


def rescored(shapes, runs: list[dict], ranked_of, rounds: list[list[dict]] = ()) -> list[str]:
    """One set's runs (the run CSV's rows) scored by another ranking: ``ranked_of(shape)``
    gives (the answer's configuration, [(configuration, fitted us, corrected us), ...]
    in the re-ranked order, the answer among them). Lines: the answer's corrected time
    against its measured time (absolute error %), and the re-ranked first's regret %
    against the fastest timed for its shape where that run was timed; a first the runs
    did not time is scored from the latest of ``rounds`` that timed it (``--plan-picks``
    runs, oldest first: each times a first beside its shape's fastest run, its regret
    against the faster of the pair), else counted."""
    timed = {(r["shape"], r["config"]): float(r["time_us"]) for r in runs if r["status"] == "ok"}
    paired = _paired(rounds)
    error, regret, late, untimed = [], [], 0, 0
    for shape in shapes:
        name = f"{shape.m}x{shape.n}x{shape.k}"
        best = min(t for (s, _), t in timed.items() if s == name)
        answer, ranked = ranked_of(shape)
        corrected = {c: corrected_us for c, _, corrected_us in ranked}
        if (name, answer.key()) in timed:
            error.append(abs(corrected[answer] / timed[name, answer.key()] - 1.0) * 100.0)
        pick = (name, ranked[0][0].key())
        if pick in timed:
            regret.append((timed[pick] / best - 1.0) * 100.0)
        elif pick in paired:
            t, fastest = paired[pick]
            regret.append((t / min(t, fastest) - 1.0) * 100.0)
            late += 1
        else:
            untimed += 1
    stats = lambda v: _stats(v) if v else "none"  # noqa: E731
    return [f"  the answer's corrected time, absolute error % ({len(error)} shapes)  {stats(error)}",
            f"  --corrected's pick, regret % ({len(regret)} shapes timed, {late} of them beside the fastest run "
            f"later, {untimed} not)  {stats(regret)}  within 1%: {sum(x <= 1.0 for x in regret)}/{len(regret)}"]


def timed_rows(runs: list[dict], plan_rows: list[dict]) -> list[dict]:
    """The verified runs of a set (a run CSV's rows) as task rows: each run's shape and
    configuration from its plan row, its ``time_us`` and the ``kinds`` of lists that named
    it; the plan's order."""
    timed = {(r["shape"], r["config"]): r for r in runs if r["status"] == "ok"}
    return [{**{c: t[c] for c in ("m", "n", "k")}, **{f: t[f] for f in CONFIG}, "time_us": float(run["time_us"]),
             "kinds": run["kinds"]}
            for t in plan_rows if (run := timed.get((label(t)["shape"], label(t)["config"])))]


def carried_errors(runs: list[dict], plan_rows: list[dict], moved, correction, source: str) -> list[str]:
    """Every verified run of a set predicted with no GEMM of its GPU read: ``source``'s fit
    carried (``moved``) and that with ``source``'s residual correction (``correction``,
    carried onto the GPU's SMs); absolute error % against the measured time, over every
    run and over the carried fit's answers ("transfer-1")."""
    import polars as pl

    from gemmperf.models import ws_pipelined as W

    rows = [{**r, "answer": "transfer-1" in r["kinds"].split()} for r in timed_rows(runs, plan_rows)]
    table = pl.DataFrame(rows)
    pred = correction(W.predict(table, moved))
    out = []
    for col, what in (("predicted_us", f"{source}'s fit carried"), ("corrected_us", "and its correction")):
        ape = (pred.get_column(col) / table.get_column("time_us") - 1.0).abs() * 100.0
        answers = ape.filter(table.get_column("answer"))
        of_answers = _stats(answers.to_list()) if len(answers) else "none"
        out.append(f"  {what}, absolute error % of every run ({len(ape)})  {_stats(ape.to_list())};"
                   f"  of its answers ({len(answers)})  {of_answers}")
    return out


def _paired(rounds: list[list[dict]]) -> dict[tuple[str, str], tuple[float, float]]:
    """(shape, re-ranked first) -> (its time, the time of the shape's fastest run beside
    it) of ``--plan-picks`` ``rounds`` (oldest first; the latest round that verified both
    runs of the pair)."""
    paired = {}
    for retimed in rounds:
        again = {(r["shape"], r["config"]): float(r["time_us"]) for r in retimed
                 if r["status"] == "ok" and r["kinds"] == "corrected-1"}
        beside = {r["shape"]: float(r["time_us"]) for r in retimed
                  if r["status"] == "ok" and r["kinds"] == "best-timed"}
        paired.update({key: (t, beside[key[0]]) for key, t in again.items() if key[0] in beside})
    return paired


def untimed_picks(shapes, runs: list[dict], plan_rows: list[dict], ranked_of, rounds: list[list[dict]] = ()
                  ) -> list[dict]:
    """Plan rows to time the re-ranked firsts (``ranked_of`` as ``rescored`` takes it) that
    neither the runs of a set nor its earlier ``rounds`` of ``--plan-picks`` runs timed (a
    round's pair counts where both of its runs were verified), each beside its shape's
    fastest timed run (whose configuration ``plan_rows``, the set's plan, holds): kinds
    "corrected-1" and "best-timed", with the fitted and corrected predictions."""
    ok = [r for r in runs if r["status"] == "ok"]
    timed = {(r["shape"], r["config"]) for r in ok} | set(_paired(rounds))
    out = []
    for shape in shapes:
        name = f"{shape.m}x{shape.n}x{shape.k}"
        pick, fitted_us, corrected_us = ranked_of(shape)[1][0]
        if (name, pick.key()) in timed:
            continue
        fastest = min((r for r in ok if r["shape"] == name), key=lambda r: float(r["time_us"]))
        row = next(t for t in plan_rows if (t["m"], t["n"], t["k"]) == (shape.m, shape.n, shape.k)
                   and label(t)["config"] == fastest["config"])
        out.append({"m": shape.m, "n": shape.n, "k": shape.k, "kinds": "corrected-1", "fitted_us": round(fitted_us, 4),
                    "corrected_us": round(corrected_us, 4), **{f: getattr(pick, f) for f in CONFIG}})
        out.append({**{c: row[c] for c in ("m", "n", "k", "fitted_us", "corrected_us")}, "kinds": "best-timed",
                    **{f: row[f] for f in CONFIG}})
    return out


def picks_name(name: str, round_: int = 1) -> str:
    """The set whose runs time set ``name``'s untimed re-ranked firsts (``--plan-picks``):
    "<name>-picks" for the first round, "<name>-picks<r>" for round r (a model changed
    after a round leaves new firsts untimed; a committed round is never planned again)."""
    return f"{name}-picks" if round_ == 1 else f"{name}-picks{round_}"


def picks_rounds(gpu_key: str, name: str) -> list[list[dict]]:
    """The committed runs of set ``name``'s ``--plan-picks`` rounds on GPUS[gpu_key],
    oldest first (rounds 1, 2, ... while run_path(picks_name(name, r), gpu) exists)."""
    from probes import read_csv

    rounds = []
    while (path := run_path(picks_name(name, len(rounds) + 1), gpu_key)).is_file():
        rounds.append(read_csv(path))
    return rounds


def rescore(gpu_key: str, plan_untimed: bool = False) -> list[str]:
    """Every set's committed runs on GPUS[gpu_key] scored with the fit this tree makes of
    the GPU's development rows and the correction of the answers outside the set's fold
    (``scoring_fit``), re-ranked as `optimize --corrected` does,
    with the re-timed firsts of every committed ``picks_name(set, r)`` round. With
    ``plan_untimed``: also write the next round's plan of the firsts still untimed (the
    first round with no committed run; a committed run keeps the plan it ran)."""
    from probes import read_csv, write_csv

    gpu, fitted, corrections = scoring_fit(gpu_key)

    def ranked_by(corr):
        def ranked_of(shape):
            sol, ranked = answered(shape, gpu, fitted, corr)
            return sol.config, ranked
        return ranked_of

    source = TRANSFER_FROM.get(gpu_key)
    moved = carried_fit(source, gpu, residual=True) if source else None
    out = []
    for name, shapes in fresh_shapes().items():
        if not run_path(name, gpu_key).is_file():
            continue
        runs = read_csv(run_path(name, gpu_key))
        ranked_of = ranked_by(corrections[name])
        rounds = picks_rounds(gpu_key, name)
        plan_rows = read_plan(plan_path(name, gpu_key))
        out += [f"{gpu_key} {name}:", *rescored(shapes, runs, ranked_of, rounds)]
        if moved is not None:
            out += carried_errors(runs, plan_rows, *moved, source)
        if plan_untimed:
            rows = untimed_picks(shapes, runs, plan_rows, ranked_of, rounds)
            path = plan_path(picks_name(name, len(rounds) + 1), gpu_key)
            if rows:
                write_csv(path, rows)
            out.append(f"  {path}: {len(rows) // 2} firsts to time" if rows else "  every first is timed")
    return out


def committed_runs(gpu_key: str):
    """Every verified run of every committed set on GPUS[gpu_key] (not the ``--plan-picks``
    rounds), one row each with its ``set``, ``kinds`` and ``time_us``, predicted by this
    tree's fit of the GPU's development rows and each set's correction of ``scoring_fit``
    (``predicted_us``, ``corrected_us``)."""
    import polars as pl

    from gemmperf.models import predict

    _, fitted, corrections = scoring_fit(gpu_key)
    runs = predict(answer_rows(gpu_key, rounds=False), fitted, "ws-pipelined")
    return pl.concat([corrections[name](runs.filter(pl.col("set") == name))
                      for name in runs.get_column("set").unique(maintain_order=True)])


def answer_rows(gpu_key: str, rounds: bool = True):
    """Every verified run of GPUS[gpu_key]'s committed timed answers, read as the
    workflow's fit reads them (``tables.answer_rows``: task rows with ``time_us``,
    ``kinds`` and ``set``): each set's run and, with ``rounds``, its ``--plan-picks``
    rounds (``set`` names the set a round re-timed)."""
    from gemmperf.tables import answer_rows as read

    paths = sorted(run_path("dev", gpu_key).parent.glob("*.csv"))
    return read([p for p in paths if rounds or p.stem in SETS])


# --rules: rankings of a shape's timed runs, each (w, p) in the score
# (1 - w) log(fitted) + w log(corrected) + p |log(corrected) - log(fitted)|: (0, 0) the
# fitted model, (1, 0) `--corrected`, p > 0 a penalty on how far the correction moves a run
RULES = {"fitted": (0.0, 0.0), "blend 0.25": (0.25, 0.0), "blend 0.5": (0.5, 0.0), "blend 0.75": (0.75, 0.0),
         "corrected": (1.0, 0.0), "corr + 0.25 d": (1.0, 0.25), "corr + 0.5 d": (1.0, 0.5),
         "corr + 1 d": (1.0, 1.0)}


def ranked_first_regret(runs, weight: float, penalty: float = 0.0):
    """Per (set, shape) of ``runs`` (``committed_runs``' columns): the regret % against the
    shape's fastest timed run of the run that the score (1 - weight) log(predicted_us) +
    weight log(corrected_us) + penalty |log(corrected_us / predicted_us)| ranks first among
    the shape's timed runs, runs tied for first counted at their mean time."""
    import polars as pl

    fitted, corrected = pl.col("predicted_us").log(), pl.col("corrected_us").log()
    score = (1.0 - weight) * fitted + weight * corrected + penalty * (corrected - fitted).abs()
    return (runs.with_columns(score=score).group_by("set", "m", "n", "k")
            .agg(best=pl.col("time_us").min(),
                 first=pl.col("time_us").filter(pl.col("score") == pl.col("score").min()).mean())
            .with_columns(regret_pct=(pl.col("first") / pl.col("best") - 1.0) * 100.0))


def rule_regrets(gpu_key: str) -> list[str]:
    """Each of RULES ranking the timed runs of each shape of the committed sets on
    GPUS[gpu_key] (this tree's fit and correction): the first's mean regret %, how many
    shapes within 1%, and the mean by set. Every shape's candidates are the runs its set
    timed (the answers and shortlists of the model of the day, its sample), so a rule is
    scored without new GPU time, but only among those: not the regret of the rule's
    answer over the whole space."""
    import polars as pl

    runs = committed_runs(gpu_key)
    lines = [f"{gpu_key}: each shape's timed runs ranked by a rule, the first's regret % against the fastest "
             f"({len(runs)} runs)"]
    for rule, (weight, penalty) in RULES.items():
        r = ranked_first_regret(runs, weight, penalty)
        by_set = r.group_by("set").agg(pl.col("regret_pct").mean()).sort("set")
        lines.append(f"  {rule:14s} mean {r['regret_pct'].mean():5.2f}  within 1%: "
                     f"{(r['regret_pct'] <= 1.0).sum()}/{len(r)}   "
                     + "  ".join(f"{name} {v:.2f}" for name, v in by_set.iter_rows()))
    return lines


def feedback(gpu_key: str) -> list[str]:
    """``--feedback``: per set of GPUS[gpu_key], the --corrected ranking's regret (within
    1%) and the corrected time's absolute error % over its runs, by a correction of the
    development rows alone and by one that also learned from the other sets' runs; then
    over every set, with the error's p95."""
    import polars as pl
    from model_ceiling import development

    from gemmperf.fit.accuracy import fit_all, fit_correction
    from gemmperf.models import ws_pipelined as W

    dev, pset = development(GPUS[gpu_key], "bf16")
    fitted, alone, _ = fit_all(dev, pset)
    answers = answer_rows(gpu_key)
    runs = W.predict(answers, fitted)
    scored = {"development rows": [], "+ the other sets": []}
    for name in runs.get_column("set").unique(maintain_order=True):
        test = runs.filter(pl.col("set") == name)
        taught = fit_correction(dev, fitted, pset.gpu.sms, answers.filter(pl.col("set") != name))
        for corr, out in ((alone, scored["development rows"]), (taught, scored["+ the other sets"])):
            out.append(corr(test).with_columns(ape=(pl.col("corrected_us") / pl.col("time_us") - 1.0).abs() * 100.0))
    lines = [f"{gpu_key}: each set's runs by the correction of the development rows alone and by one that also "
             "learned from the other sets' runs; --corrected's regret % (within 1%), corrected time's error %"]

    def line(tables):
        t = pl.concat(tables)
        r = ranked_first_regret(t, 1.0)
        return (f"regret {r['regret_pct'].mean():5.2f} ({(r['regret_pct'] <= 1.0).sum()}/{len(r)})  error "
                f"{t['ape'].mean():5.2f}  p95 {t['ape'].quantile(0.95, 'nearest'):5.2f}")

    for i, name in enumerate(runs.get_column("set").unique(maintain_order=True)):
        lines.append(f"  {name:8s} " + "   ".join(f"{k}: " + line([v[i]]) for k, v in scored.items()))
    lines += [f"  all sets, {k:17s} " + line(v) for k, v in scored.items()]
    return lines


def run_errors(gpu_key: str) -> list[str]:
    """Every verified run of every committed set (not the ``--plan-picks`` rounds) predicted
    by this tree's fit and correction of GPUS[gpu_key]'s development rows: absolute error %
    (mean) and measured / predicted at the geometric mean, fitted and corrected, by K
    (one k-block or less, up to four, more) and by the list that named the run (the
    sampled configurations, or only the model's own lists: the answer, the shortlists),
    where the model's picks show what its ranking believes of them."""
    import polars as pl

    out = committed_runs(gpu_key).with_columns(sampled=pl.col("kinds").str.split(" ").list.contains("sample"))
    out = out.with_columns(k_class=pl.when(pl.col("k") <= 64).then(pl.lit("K <= 64"))
                           .when(pl.col("k") <= 256).then(pl.lit("64 < K <= 256")).otherwise(pl.lit("K > 256")),
                           lists=pl.when(pl.col("sampled")).then(pl.lit("sampled")).otherwise(pl.lit("model's")))

    def line(d, title):
        parts = []
        for col in ("predicted_us", "corrected_us"):
            ratio = d["time_us"] / d[col]
            parts.append(f"{(1 / ratio - 1).abs().mean() * 100:5.2f}% ({math.exp(ratio.log().mean()):.3f}x)")
        return f"  {title:32s} {len(d):5d} runs   fitted {parts[0]}   corrected {parts[1]}"

    lines = [f"{gpu_key}: every verified run of the sets, this tree's fit; absolute error % (measured / "
             "predicted at the geometric mean)", line(out, "all")]
    for (k_class, lists), d in sorted(out.group_by("k_class", "lists"), key=lambda g: g[0]):
        lines.append(line(d, f"{k_class}, {lists} lists"))
    return lines


def band_check() -> list[str]:
    """The answer band (``gemmperf answer-band``, optimize.band) scored where it was not
    read: for each GPU, each set's band (its runs and their re-timed rounds, asked of the
    fit and correction of every development row) against each other set's answers, the
    band of all but a set against that set's, and each GPU's band of the sets both GPUs
    ran against the other GPU's. Per pair and for the answer and --corrected's pick: the
    band, the share of the other answers inside it, and the answer's time off as predicted
    and as the band's median expects (mean absolute %); and each draw (DRAWS) whole by the
    band of the draws before it: what a user had when its shapes came."""
    import polars as pl

    from gemmperf.intervals import conformal_band as band
    from gemmperf.optimize.band import answer_times

    times = {}
    for gpu_key in GPUS:
        ran = [name for name in SETS if run_path(name, gpu_key).is_file()]
        if not ran:
            continue
        gpu, fitted, corrections = scoring_fit(gpu_key)
        for name in ran:
            paths = [run_path(name, gpu_key), *(run_path(picks_name(name, r), gpu_key) for r in
                                               range(1, len(picks_rounds(gpu_key, name)) + 1))]
            runs = pl.concat([pl.read_csv(p, columns=["shape", "config", "status", "time_us"],
                                          schema_overrides={"time_us": pl.Float64}) for p in paths])
            times[gpu_key, name] = answer_times(runs, fitted, corrections[name])
    sets = {g: [n for n in SETS if (g, n) in times] for g in GPUS}
    pairs = [((g, (a,)), (g, (b,))) for g in GPUS for a in sets[g] for b in sets[g] if a != b]
    pairs += [((g, tuple(n for n in sets[g] if n != b)), (g, (b,))) for g in GPUS for b in sets[g] if len(sets[g]) > 2]
    for g in GPUS:  # each draw by the draws before it (the first's are in the pairs above)
        for i, draw in enumerate(DRAWS[1:], start=1):
            before = tuple(n for d in DRAWS[:i] for n in d if n in sets[g])
            pair = ((g, before), (g, draw))
            if before and all(n in sets[g] for n in draw) and pair not in pairs:
                pairs.append(pair)
    common = tuple(n for n in SETS if all(n in sets[g] for g in GPUS))
    pairs += [((a, common), (b, common)) for a in GPUS for b in GPUS if a != b and common]

    def ratios(side, measured, predicted):
        gpu_key, names = side
        t = pl.concat([times[gpu_key, n] for n in names]).filter(pl.col(measured).is_not_null())
        return (t.get_column(measured) / t.get_column(predicted)).to_numpy()

    name = lambda side: f"{side[0]} {'+'.join(side[1])}"  # noqa: E731
    out = [f"{'band of':<24} {'scored on':<24} {'pick':<10} {'n':>7} {'median':>7} {'90% band':>13} {'inside':>7} "
           f"{'off, predicted':>15} {'off, x median':>14}"]
    for cal, target in pairs:
        for pick, measured, predicted in (("answer", "measured_us", "predicted_us"),
                                          ("corrected", "pick_measured_us", "corrected_us")):
            c = ratios(cal, measured, predicted)
            b, r = band(c), ratios(target, measured, predicted)
            if b is None:  # fewer timed picks than a 90% band needs (19): no band to score
                out.append(f"{name(cal):<24} {name(target):<24} {pick:<10} "
                           f"{len(c):>3}/{len(r):<3} too few for a 90% band")
                continue
            inside = float(((r >= b["low"]) & (r <= b["high"])).mean())
            raw, scaled = (abs(r - 1).mean() * 100, abs(r / b["median"] - 1).mean() * 100)
            out.append(f"{name(cal):<24} {name(target):<24} {pick:<10} {b['n']:>3}/{len(r):<3} {b['median']:>7.3f} "
                       f"{b['low']:>6.3f}-{b['high']:<6.3f} {inside * 100:>6.0f}% {raw:>15.1f} {scaled:>14.1f}")
    return out


def join_main(argv: list[str]) -> int:
    """``--join SET [--gpu g] [--out run.csv] shard.csv ...``: the shards as one run
    (``join_shards``), written to ``--out`` or the set's ``run_path``; a bad shard is one
    line on stderr and exit status 2, nothing written."""
    import argparse

    sys.path.insert(0, str(ROOT / "src"))
    from probes import read_csv, write_csv

    ap = argparse.ArgumentParser(prog="optimizer_picks.py --join")
    ap.add_argument("set", choices=list(SETS))
    ap.add_argument("shards", nargs="+")
    ap.add_argument("--gpu", choices=list(GPUS), default="h100")
    ap.add_argument("--out", default=None)
    a = ap.parse_args(argv)
    plan_file = plan_path(a.set, a.gpu)
    try:
        rows = join_shards(read_plan(plan_file), {p: read_csv(p) for p in a.shards})
    except (OSError, ValueError) as e:
        print(f"optimizer_picks.py --join: {e}", file=sys.stderr)
        return 2
    out = Path(a.out) if a.out else run_path(a.set, a.gpu)
    write_csv(out, rows)
    print(f"{out}: {len(rows)} runs of {plan_file.name} from {len(a.shards)} shards")
    return 0


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["--plan"]:
        sys.path.insert(0, str(ROOT / "src"))
        from probes import write_csv

        gpu_key = argv[1] if len(argv) > 1 else "h100"
        if gpu_key not in GPUS:
            raise SystemExit(f"--plan {gpu_key}: expected one of {', '.join(GPUS)}")
        RESULTS.mkdir(parents=True, exist_ok=True)
        for name, runs in plan(gpu_key, argv[2:] or None).items():
            write_csv(plan_path(name, gpu_key), runs)
            print(f"{plan_path(name, gpu_key)}: {len(runs)} runs over "
                  f"{len({(r['m'], r['n'], r['k']) for r in runs})} shapes")
        return 0
    if argv[:1] in (["--rescore"], ["--plan-picks"]):
        sys.path.insert(0, str(ROOT / "src"))
        gpu_key = argv[1] if len(argv) > 1 else "h100"
        if gpu_key not in GPUS:
            raise SystemExit(f"{argv[0]} {gpu_key}: expected one of {', '.join(GPUS)}")
        print("\n".join(rescore(gpu_key, plan_untimed=argv[0] == "--plan-picks")))
        return 0
    if argv[:1] in (["--runs"], ["--rules"], ["--feedback"]):
        sys.path.insert(0, str(ROOT / "src"))
        gpu_key = argv[1] if len(argv) > 1 else "h200"
        if gpu_key not in GPUS:
            raise SystemExit(f"{argv[0]} {gpu_key}: expected one of {', '.join(GPUS)}")
        report = {"--runs": run_errors, "--rules": rule_regrets, "--feedback": feedback}[argv[0]]
        print("\n".join(report(gpu_key)))
        return 0
    if argv[:1] == ["--band"]:
        sys.path.insert(0, str(ROOT / "src"))
        print("\n".join(band_check()))
        return 0
    if argv[:1] == ["--join"]:
        return join_main(argv[1:])
    if argv[:1] == ["--summary"]:
        from probes import read_csv

        if len(argv) != 2:
            raise SystemExit("usage: optimizer_picks.py --summary run.csv")
        print("\n".join(summary(read_csv(argv[1]))))
        return 0
    from probes import run, start

    from gemmperf.bench.device import local_arch

    picked = {"--set": "dev", "--gpu": "h100", "--shard": "0/1"}  # --shard i/n: the i-th of every n shapes
    for flag in picked:
        if flag in argv:
            at = argv.index(flag)
            picked[flag] = argv[at + 1]
            argv = argv[:at] + argv[at + 2:]
    shard, of = map(int, picked["--shard"].split("/"))
    a, gpu, meas = start(__doc__, argv)
    every = read_plan(plan_path(picked["--set"], picked["--gpu"]))
    shapes = list(dict.fromkeys((t["m"], t["n"], t["k"]) for t in every))[shard::of]
    tasks = [t for t in every if (t["m"], t["n"], t["k"]) in shapes]
    compile_plan(tasks, local_arch())
    rows = run(a, gpu, meas, tasks, label)
    print("\n" + "\n".join(summary(rows)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
