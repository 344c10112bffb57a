"""benchmarks/optimizer_picks.py without a GPU: its sets of shapes are fresh (no
testlist holds one, nor another set) and those of the committed plans of both GPUs,
every run is legal and named once, the lists are what `gemmperf optimize --corrected
--top 8` names (and on the H200 the H100's carried fit's shortlist), --set and --shard
pick the shapes, and the runs on a lent H100 and H200 read back."""

import argparse
import csv
import itertools
import sys
from pathlib import Path

import pytest

from gemmperf.hardware import get_gpu
from gemmperf.problem import read_testlist
from scripts import load_script, refused

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "benchmarks" / "results" / "optimizer_picks"


def test_the_plans_hold_fresh_shapes_and_legal_runs_named_once():
    script = load_script(ROOT / "benchmarks" / "optimizer_picks.py")
    sets = {name: [(s.m, s.n, s.k) for s in shapes] for name, shapes in script.fresh_shapes().items()}
    known = {(s.m, s.n, s.k) for p in (ROOT / "testlists").glob("*.csv") for s in read_testlist(p)}
    both = ["dev", "heldout", "fresh", "fresh2", "fresh3", "fresh4", "fresh5", "fresh6", "fresh7", "fresh8", "fresh9"]
    assert list(sets) == both + [f"fresh{i}" for i in range(10, 58)] + [f"large{i}" for i in range(1, 37)]
    # a "large" set holds only problems of at least LARGE_VOLUME multiply-adds; the others
    # are drawn over the whole range (most of them smaller)
    assert all(m * n * k >= script.LARGE_VOLUME for name in sets if name.startswith("large") for m, n, k in sets[name])
    assert sum(m * n * k < script.LARGE_VOLUME for m, n, k in sets["fresh57"]) > script.COUNT // 2
    assert [name for draw in script.DRAWS for name in draw] == list(sets)
    assert not any(set(sets[a]) & set(sets[b]) for a, b in itertools.combinations(sets, 2))
    planned = [(name, gpu) for name in sets for gpu in script.GPUS if script.plan_path(name, gpu).is_file()]
    # the first eleven sets planned (and timed) on both GPUs (the H100's fresh sets since the
    # fifty-third session), fresh10 ... fresh57 and large1 ... large36 on the H100 alone
    # (fifty-fourth and fifty-seventh to sixty-first sessions)
    assert {(n, g) for n in sets for g in script.GPUS if n in both or g == "h100"} == set(planned)
    for name, gpu in planned:
        shapes = sets[name]
        assert len(shapes) == script.COUNT and not set(shapes) & known
        tasks = script.read_plan(script.plan_path(name, gpu))
        assert list(dict.fromkeys((t["m"], t["n"], t["k"]) for t in tasks)) == shapes
        assert not refused(tasks, get_gpu(script.GPUS[gpu]))
        names = [(t["m"], t["n"], t["k"], script.label(t)["config"]) for t in tasks]
        assert len(set(names)) == len(names)
        for shape in shapes:
            runs = [t for t in tasks if (t["m"], t["n"], t["k"]) == shape]
            kinds = [k for t in runs for k in t["kinds"].split()]
            assert kinds.count("answer") == 1 and kinds.count("corrected-1") == 1
            assert {f"fitted-{i}" for i in range(1, script.TOP + 1)} <= set(kinds)
            assert kinds.count("sample") == script.SAMPLE
            answer = next(t for t in runs if "answer" in t["kinds"].split())
            assert "fitted-1" in answer["kinds"].split()  # --top's list starts with the answer
            corrected = sorted((t for t in runs if any(k.startswith("corrected-") for k in t["kinds"].split())),
                               key=lambda t: next(int(k[10:]) for k in t["kinds"].split() if k[:10] == "corrected-"))
            assert [t["corrected_us"] for t in corrected] == sorted(t["corrected_us"] for t in corrected)
            moved = [k for k in kinds if k.startswith("transfer-")]
            assert sorted(moved) == ([f"transfer-{i}" for i in range(1, script.TRANSFER_TOP + 1)]
                                     if gpu in script.TRANSFER_FROM else [])
            # the plans made since the fresh set: what optimize --transfer-from --corrected answers
            assert kinds.count("carried-corrected") == (name not in ("dev", "heldout") and gpu in script.TRANSFER_FROM)


def test_main_times_one_shard_of_a_sets_shapes_on_a_gpu(tmp_path, monkeypatch):
    probes = load_script(ROOT / "benchmarks" / "probes.py", "probes")
    seen = []

    def meas(task):
        seen.append((task["m"], task["n"], task["k"]))
        return {"status": "ok", "time_us": 10.0}

    out = tmp_path / "run.csv"
    monkeypatch.setattr(probes, "start", lambda doc, argv=None, flags=None: (
        argparse.Namespace(out=str(out)), get_gpu("h100-sxm5-80gb"), meas))
    monkeypatch.setitem(sys.modules, "probes", probes)
    script = load_script(ROOT / "benchmarks" / "optimizer_picks.py")
    monkeypatch.setattr(script, "compile_plan", lambda tasks, arch: None)
    monkeypatch.setattr("gemmperf.bench.device.local_arch", lambda: "sm_90a")
    assert script.main(["--set", "heldout", "--gpu", "h200", "--shard", "1/2"]) == 0
    plan = script.read_plan(script.plan_path("heldout", "h200"))
    shapes = list(dict.fromkeys((t["m"], t["n"], t["k"]) for t in plan))
    assert list(dict.fromkeys(seen)) == shapes[1::2]
    rows = list(csv.DictReader(open(out)))
    assert len(rows) == len(seen) and {r["status"] for r in rows} == {"ok"} and "transfer_us" in rows[0]


def test_shards_join_into_the_run_an_unsharded_run_wrote_and_bad_shards_are_refused(tmp_path, capsys):
    script = load_script(ROOT / "benchmarks" / "optimizer_picks.py")
    shipped = script.run_path("large25")  # timed in one piece on a lent H100
    with open(shipped, newline="") as f:
        header, *rows = f.read().splitlines(keepends=True)
    shapes = list(dict.fromkeys(r.split(",", 1)[0] for r in rows))
    shards = []
    for i in range(3):  # --shard i/3: every third shape, in the order run
        shards.append(tmp_path / f"shard{i}.csv")
        shards[-1].write_text(header + "".join(r for r in rows if r.split(",", 1)[0] in shapes[i::3]), newline="")
    out = tmp_path / "large25.csv"
    # given in another order than the plan's: the joined file is still the plan's order
    assert script.main(["--join", "large25", "--out", str(out), str(shards[2]), str(shards[0]), str(shards[1])]) == 0
    assert out.read_bytes() == shipped.read_bytes()

    out.unlink()
    twice = tmp_path / "twice.csv"
    twice.write_text(header + rows[0], newline="")
    missing = tmp_path / "missing.csv"
    missing.write_text(header + "".join(rows[1:]), newline="")
    foreign = tmp_path / "foreign.csv"
    foreign.write_text(header + rows[0].replace("ws-hopper-bf16-", "ws-hopper-fp8-", 1), newline="")
    capsys.readouterr()
    for argv, says in ((["large25", str(shards[0]), str(shards[1]), str(shards[2]), str(twice)],
                        f"{twice}, line 2: {shapes[0]} "),
                       (["large25", str(missing)], "1 runs of the plan in no shard, the first " + shapes[0]),
                       (["large25", str(foreign)], f"{foreign}, line 2: {shapes[0]} ws-hopper-fp8-"),
                       (["large25", str(tmp_path / "absent.csv")], "absent.csv"),
                       (["large26", str(shards[0])], "is not a run of the plan")):
        assert script.main(["--join", *argv, "--out", str(out)]) == 2
        err = capsys.readouterr().err
        assert says in err and len(err.strip().splitlines()) == 1 and "Traceback" not in err
        assert not out.exists()


@pytest.mark.parametrize("gpu, name, runs, answer, corrected, shortlist, sample, moved, carried", [
    ("h100", "dev", 748, "16/40", "22/40", "31/40", "4/40", None, None),
    ("h100", "heldout", 730, "23/40", "24/40", "33/40", "3/40", None, None),
    ("h200", "dev", 754, "19/40", "26/40", "27/40", "5/40", "19/40", None),
    ("h200", "heldout", 759, "21/40", "26/40", "31/40", "4/40", "21/40", None),
    ("h200", "fresh", 748, "19/40", "24/40", "30/40", "3/40", "16/40", "24/40"),
    ("h200", "fresh2", 751, "25/40", "26/40", "35/40", "3/40", "26/40", "27/40"),
    ("h200", "fresh3", 757, "19/40", "25/40", "29/40", "3/40", "17/40", "24/40"),
    ("h200", "fresh4", 743, "24/40", "22/40", "31/40", "0/40", "23/40", "26/40"),
    ("h200", "fresh5", 737, "28/40", "21/40", "33/40", "4/40", "26/40", "25/40"),
    ("h200", "fresh6", 776, "19/40", "19/40", "28/40", "6/40", "17/40", "24/40"),
    ("h200", "fresh7", 724, "19/40", "20/40", "33/40", "3/40", "19/40", "22/40"),
    ("h200", "fresh8", 738, "21/40", "19/40", "33/40", "2/40", "18/40", "22/40"),
    ("h200", "fresh9", 737, "21/40", "17/40", "31/40", "2/40", "20/40", "26/40"),
])
def test_the_lent_gpus_runs_read_back(gpu, name, runs, answer, corrected, shortlist, sample, moved, carried):
    """Every run verified. Within 1% of the best timed for its shape: the answer, the
    answer --corrected gives, the fastest of --top 8's shortlist, the fastest of 8
    sampled configurations, and on the H200 the answer of the H100's fit carried onto it
    (benchmarks/README.md, "Optimizer picks")."""
    script = load_script(ROOT / "benchmarks" / "optimizer_picks.py")
    with open(script.run_path(name, gpu)) as f:
        rows = list(csv.DictReader(f))
    assert len(rows) == runs and all(r["status"] == "ok" for r in rows)
    lines = script.summary(rows)
    assert "\n".join(lines).splitlines() == (RESULTS / f"summary_{gpu}_{name}.txt").read_text().splitlines()
    regret = {line.split("  mean")[0].strip(): line for line in lines if "within 1%" in line}
    assert regret["optimizer's answer (fitted model)"].endswith(f"within 1%: {answer}")
    assert regret["--corrected (the 64 best re-ranked)"].endswith(f"within 1%: {corrected}")
    assert regret["best of the --top 8 shortlist, timed"].endswith(f"within 1%: {shortlist}")
    assert regret["best of 8 sampled, timed (no model)"].endswith(f"within 1%: {sample}")
    assert (regret["the transferred fit's answer"].endswith(f"within 1%: {moved}") if moved else
            "the transferred fit's answer" not in regret)
    # the plans since the fresh set also time what optimize --transfer-from --corrected answers
    assert (regret["the transferred fit's --corrected pick"].endswith(f"within 1%: {carried}") if carried else
            "the transferred fit's --corrected pick" not in regret)


@pytest.mark.parametrize("gpu, name, corrected", [("h100", "dev", "22/40"), ("h200", "heldout", "26/40")])
def test_rescoring_with_the_plans_own_ranking_gives_the_summarys_figures(gpu, name, corrected):
    """--rescore's scoring, handed the ranking the plan recorded (step 21's correction),
    gives the committed summary's --corrected figure and the answer's corrected error;
    a pick the runs never timed is counted as such, not scored."""
    from gemmperf.problem import KernelConfig

    script = load_script(ROOT / "benchmarks" / "optimizer_picks.py")
    plan = script.read_plan(script.plan_path(name, gpu))
    with open(script.run_path(name, gpu)) as f:
        runs = list(csv.DictReader(f))
    config = lambda t: KernelConfig(**{f: t[f] for f in script.CONFIG})  # noqa: E731

    def ranked_of(shape, drop_first=False):
        rows = [t for t in plan if (t["m"], t["n"], t["k"]) == (shape.m, shape.n, shape.k)]
        listed = sorted((t for t in rows if any(k == "answer" or k.startswith("corrected-") for k in t["kinds"].split())),
                        key=lambda t: (t["corrected_us"], "corrected-1" not in t["kinds"].split()))
        ranked = [(config(t), t["fitted_us"], t["corrected_us"]) for t in listed]
        if drop_first:  # a first pick no run timed
            ranked.insert(0, (KernelConfig(**{**ranked[0][0].__dict__, "stages": 3, "tile_k": 32}), 1.0, 1.0))
        return config(next(t for t in rows if "answer" in t["kinds"].split())), ranked

    shapes = script.fresh_shapes()[name]
    lines = script.rescored(shapes, runs, ranked_of)
    summary = (RESULTS / f"summary_{gpu}_{name}.txt").read_text().splitlines()
    answer = next(line for line in summary if line.strip().startswith("answer, corrected"))
    assert lines[0].endswith(answer.split("answer, corrected")[1].strip())
    assert lines[1].endswith(f"within 1%: {corrected}") and "(40 shapes timed, 0 of them" in lines[1]
    untimed = script.rescored(shapes[:3], runs, lambda s: ranked_of(s, drop_first=True))
    assert "(0 shapes timed, 0 of them beside the fastest run later, 3 not)" in untimed[1]


def test_untimed_picks_are_planned_beside_the_fastest_run_and_scored_from_their_run():
    """--plan-picks plans each re-ranked first no run timed beside its shape's fastest timed
    configuration (legal runs, predictions carried); --rescore scores such a first from
    that later run, against the faster of the pair, and counts it while either failed."""
    from gemmperf.problem import KernelConfig

    script = load_script(ROOT / "benchmarks" / "optimizer_picks.py")
    plan = script.read_plan(script.plan_path("dev", "h100"))
    with open(script.run_path("dev", "h100")) as f:
        runs = list(csv.DictReader(f))
    config = lambda t: KernelConfig(**{f: t[f] for f in script.CONFIG})  # noqa: E731
    shapes = script.fresh_shapes()["dev"][:4]

    def ranked_of(shape):  # shapes 0-2: a first no run timed; shape 3: its answer, timed
        rows = [t for t in plan if (t["m"], t["n"], t["k"]) == (shape.m, shape.n, shape.k)]
        answer = config(next(t for t in rows if "answer" in t["kinds"].split()))
        ranked = [(answer, 1.0, 2.0)]
        if shape != shapes[3]:
            ranked.insert(0, (KernelConfig(**{**answer.__dict__, "stages": 2, "raster": "row"}), 3.0, 4.0))
        return answer, ranked

    rows = script.untimed_picks(shapes, runs, plan, ranked_of)
    assert [r["kinds"] for r in rows] == ["corrected-1", "best-timed"] * 3
    assert not refused(rows, get_gpu("h100-sxm5-80gb"))
    for pick, best, shape in zip(rows[::2], rows[1::2], shapes):
        name = f"{shape.m}x{shape.n}x{shape.k}"
        fastest = min((r for r in runs if r["shape"] == name and r["status"] == "ok"), key=lambda r: float(r["time_us"]))
        assert script.label(best)["config"] == fastest["config"] and (pick["fitted_us"], pick["corrected_us"]) == (3, 4)
        assert script.label(pick)["config"] == ranked_of(shape)[1][0][0].key()
    retimed = [{**script.label(r), "shape": f"{r['m']}x{r['n']}x{r['k']}", "status": "ok",
                "time_us": str(t)} for r, t in zip(rows, [10.05, 10.0, 9.0, 10.0, 12.0, 10.0])]
    retimed[-1]["status"] = "wrong"  # shape 2's fastest failed this time: its first stays untimed
    lines = script.rescored(shapes, runs, ranked_of, [retimed])
    assert "(3 shapes timed, 2 of them beside the fastest run later, 1 not)" in lines[1]
    # regrets 0.5 (10.05 against 10.0), 0 (9.0, faster than the fastest) and shape 3's answer's
    name = f"{shapes[3].m}x{shapes[3].n}x{shapes[3].k}"
    own = {r["config"]: float(r["time_us"]) for r in runs if r["shape"] == name and r["status"] == "ok"}
    third = (own[ranked_of(shapes[3])[0].key()] / min(own.values()) - 1.0) * 100.0
    assert f"mean {(0.5 + 0.0 + third) / 3:5.2f}" in lines[1]
    assert lines[1].endswith(f"within 1%: {2 + (third <= 1.0)}/3")
    assert script.rescored(shapes, runs, ranked_of)[1].count("0 of them beside the fastest run later, 3 not") == 1
    # a second round: only the first still untimed (shape 2's) is planned again; its pair,
    # timed now, scores it, and a first timed in both rounds takes the later round's pair
    again = script.untimed_picks(shapes, runs, plan, ranked_of, [retimed])
    assert [r["kinds"] for r in again] == ["corrected-1", "best-timed"] and again[0]["m"] == shapes[2].m
    later = [{**retimed[0], "time_us": "11.0"}, {**retimed[1], "time_us": "10.0"},
             *({**script.label(r), "shape": f"{r['m']}x{r['n']}x{r['k']}", "status": "ok", "time_us": str(t)}
               for r, t in zip(again, [10.2, 10.0]))]
    lines = script.rescored(shapes, runs, ranked_of, [retimed, later])
    assert "(4 shapes timed, 3 of them beside the fastest run later, 0 not)" in lines[1]
    assert f"mean {(10.0 + 0.0 + 2.0 + third) / 4:5.2f}" in lines[1]
    assert script.untimed_picks(shapes, runs, plan, ranked_of, [retimed, later]) == []


def test_each_round_of_picks_has_its_own_name_and_the_committed_ones_are_read_in_order(tmp_path, monkeypatch):
    """Round 1 keeps the name it was committed under; later rounds are numbered, and
    picks_rounds reads the committed ones oldest first, stopping at the first gap."""
    script = load_script(ROOT / "benchmarks" / "optimizer_picks.py")
    assert [script.picks_name("dev", r) for r in (1, 2, 3)] == ["dev-picks", "dev-picks2", "dev-picks3"]
    monkeypatch.setattr(script, "RUNS", tmp_path)
    assert script.picks_rounds("h200", "dev") == []
    for r, t in ((1, "1.0"), (2, "2.0"), (4, "4.0")):
        path = script.run_path(script.picks_name("dev", r), "h200")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"shape,time_us\n1x2x3,{t}\n")
    assert [[row["time_us"] for row in rows] for rows in script.picks_rounds("h200", "dev")] == [["1.0"], ["2.0"]]


def _picks_plans() -> list[tuple[str, str, int]]:
    """(gpu, set, round) of every committed --plan-picks plan
    (benchmarks/results/optimizer_picks/plan_<gpu>_<set>-picks<round>.csv; round 1 unnumbered)."""
    out = []
    for path in sorted((ROOT / "benchmarks" / "results" / "optimizer_picks").glob("plan_*-picks*.csv")):
        gpu, rest = path.stem.removeprefix("plan_").split("_", 1)
        name, round_ = rest.split("-picks")
        out.append((gpu, name, int(round_ or 1)))
    return sorted(out)


def test_the_committed_rounds_of_picks_are_found():
    """The rounds the read-back test below is run over: each GPU's sets, rounds numbered
    from 1 with no gap (picks_rounds stops at the first gap), 103 plans as of round 15."""
    plans = _picks_plans()
    assert len(plans) >= 103
    for gpu, name in {(g, n) for g, n, _ in plans}:
        assert sorted(r for g, n, r in plans if (g, n) == (gpu, name)) == list(
            range(1, 1 + sum((g, n) == (gpu, name) for g, n, _ in plans)))


@pytest.mark.parametrize("gpu, name, round_", _picks_plans())
def test_the_re_timed_picks_read_back(gpu, name, round_):
    """Each committed --plan-picks plan (the re-ranked firsts a model step moved to
    configurations no run had timed, each beside its shape's fastest timed run; which step
    each round came from: the GPU's shipped answers README) has its run on the lent GPU:
    every run of the plan, in its order, in pairs "corrected-1" then "best-timed", verified;
    the shapes are the set's."""
    script = load_script(ROOT / "benchmarks" / "optimizer_picks.py")
    plan = script.read_plan(script.plan_path(script.picks_name(name, round_), gpu))
    with open(script.run_path(script.picks_name(name, round_), gpu)) as f:
        rows = list(csv.DictReader(f))
    assert plan and len(plan) % 2 == 0
    assert [r["kinds"] for r in rows] == ["corrected-1", "best-timed"] * (len(plan) // 2)
    assert [(r["shape"], r["config"]) for r in rows] == [(f"{t['m']}x{t['n']}x{t['k']}", script.label(t)["config"])
                                                         for t in plan]
    assert all(r["status"] == "ok" for r in rows)
    fresh = {f"{s.m}x{s.n}x{s.k}" for s in script.fresh_shapes()[name]}
    assert {r["shape"] for r in rows} <= fresh


def _times125(pred):
    """A correction whose factor is 1.25 everywhere."""
    import polars as pl

    return pred.with_columns((pl.col("predicted_us") * 1.25).alias("corrected_us"))


def test_carried_errors_score_every_verified_run_and_the_carried_answers():
    """carried_errors: each verified run of a set (its configuration from the plan) predicted
    by a carried fit, then corrected; the absolute errors over every run and over the
    carried fit's answers ("transfer-1"); failed runs and runs the plan does not hold are
    left out. With measured times exactly 1.25x the carried prediction and a correction of
    1.25x, the first line reads 20% and the second 0%."""
    import polars as pl

    from gemmperf.models import ws_pipelined as W
    from gemmperf.params import ParamSet

    script = load_script(ROOT / "benchmarks" / "optimizer_picks.py")
    gpu = get_gpu("h200-sxm-141gb")
    plan = script.read_plan(script.plan_path("heldout", "h200"))[:12]
    moved = ParamSet(gpu=gpu)
    table = pl.DataFrame([{**{c: t[c] for c in ("m", "n", "k")}, **{f: t[f] for f in script.CONFIG}} for t in plan])
    times = (W.predict(table, moved).get_column("predicted_us") * 1.25).to_list()
    runs = [{**script.label(t), "status": "ok" if i != 3 else "wrong", "time_us": str(us)}
            for i, (t, us) in enumerate(zip(plan, times))]

    lines = script.carried_errors(runs, plan, moved, _times125, "h100-sxm5-80gb")
    answers = sum("transfer-1" in t["kinds"].split() for i, t in enumerate(plan) if i != 3)
    assert answers > 0
    assert len(lines) == 2 and "of every run (11)" in lines[0] and f"of its answers ({answers})" in lines[0]
    assert "h100-sxm5-80gb's fit carried" in lines[0] and "mean 20.00" in lines[0]
    assert "and its correction" in lines[1] and "mean  0.00" in lines[1] and "max   0.00" in lines[1]


def test_run_errors_predict_every_verified_run_by_k_and_by_the_list_that_named_it(tmp_path, monkeypatch):
    """--runs: each verified run of a set (its configuration from the plan) predicted by the
    GPU's fit, then corrected, split by K and by list. With measured times exactly 1.25x
    the prediction and a correction of 1.25x: 20% fitted (1.250x at the geometric mean) and
    0% corrected on every line; a failed run is left out."""
    import polars as pl

    from gemmperf.models import ws_pipelined as W
    from gemmperf.params import ParamSet

    script = load_script(ROOT / "benchmarks" / "optimizer_picks.py")
    gpu = get_gpu("h200-sxm-141gb")
    plan = script.read_plan(script.plan_path("heldout", "h200"))[:30]
    fitted = ParamSet(gpu=gpu)
    table = pl.DataFrame([{**{c: t[c] for c in ("m", "n", "k")}, **{f: t[f] for f in script.CONFIG}} for t in plan])
    times = (W.predict(table, fitted).get_column("predicted_us") * 1.25).to_list()
    runs = tmp_path / "heldout.csv"
    with open(runs, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=["shape", "config", "kinds", "status", "time_us"])
        w.writeheader()
        w.writerows({**{c: script.label(t)[c] for c in ("shape", "config", "kinds")},
                     "status": "ok" if i != 3 else "wrong_result", "time_us": us}
                    for i, (t, us) in enumerate(zip(plan, times)))

    monkeypatch.setattr(script, "SETS", {"heldout": script.SETS["heldout"]})
    monkeypatch.setattr(script, "run_path", lambda name, gpu_key: runs)
    monkeypatch.setattr(script, "scoring_fit", lambda gpu_key: (gpu, fitted, {"heldout": _times125}))
    lines = script.run_errors("h200")
    assert "all" in lines[1] and " 29 runs" in lines[1] and len(lines) > 2
    assert all("fitted 20.00% (1.250x)" in x and "corrected  0.00% (1.000x)" in x for x in lines[1:])


def test_a_rule_is_scored_by_the_run_it_ranks_first_among_the_timed_ones():
    """ranked_first_regret: per shape, the run the score ranks first against the fastest
    timed run; the fitted model (weight 0), the corrected one (1) and a blend pick
    differently where they disagree, and runs tied for first count at their mean."""
    import polars as pl

    script = load_script(ROOT / "benchmarks" / "optimizer_picks.py")
    runs = pl.DataFrame({"set": ["dev"] * 5, "m": [1, 1, 1, 2, 2], "n": [8] * 5, "k": [64] * 5,
                         "time_us": [10.0, 12.0, 15.0, 20.0, 30.0],
                         "predicted_us": [9.0, 8.0, 11.0, 5.0, 5.0],
                         "corrected_us": [9.5, 13.0, 9.0, 6.0, 7.0]})
    regret = lambda w: dict(script.ranked_first_regret(runs, w).select("m", "regret_pct").iter_rows())  # noqa: E731
    fitted, corrected, blend = regret(0.0), regret(1.0), regret(0.5)
    assert fitted[1] == pytest.approx(20.0) and fitted[2] == pytest.approx(25.0)  # 12 over 10; (20 + 30) / 2 over 20
    assert corrected[1] == pytest.approx(50.0) and corrected[2] == pytest.approx(0.0)
    # blend: sqrt(9 * 9.5) = 9.25, sqrt(8 * 13) = 10.20, sqrt(11 * 9) = 9.95 -> the first run
    assert blend[1] == pytest.approx(0.0)
    # the corrected time, each run's |log(corrected / fitted)| once more against it:
    # 9.5 * 9.5 / 9 = 10.03, 13 * 13 / 8 = 21.1, 9 * 11 / 9 = 11 -> the first run
    penalized = dict(script.ranked_first_regret(runs, 1.0, 1.0).select("m", "regret_pct").iter_rows())
    assert penalized[1] == pytest.approx(0.0)


def test_feedback_teaches_each_sets_correction_only_the_other_sets(monkeypatch):
    """--feedback: the correction scored on a set learned from the development rows and the
    other sets' runs, never that set's; the shipped one from the development rows alone."""
    import polars as pl

    from gemmperf.fit import accuracy as A
    from gemmperf.fit import residual as R
    from gemmperf.hardware import CATALOG
    from gemmperf.params import ParamSet

    ps = ParamSet(CATALOG["h200-sxm-141gb"])
    cfgs = pl.DataFrame([{"tile_m": tm, "tile_n": tn, "persistent": p}
                         for tm, tn, p in itertools.product([64, 128], [128, 256], [False, True])])
    dev = A.synthetic_measurements(ps, list(itertools.product([512, 4096], [1024, 8192], [512, 4096])), cfgs, seed=1)
    sets = {"one": [(700, 3000, 900), (33, 5000, 128)], "two": [(2000, 999, 4096)], "three": [(64, 64, 64)]}
    runs = pl.concat([A.synthetic_measurements(ps, shapes, cfgs, seed=2 + i).with_columns(set=pl.lit(name))
                      for i, (name, shapes) in enumerate(sets.items())], how="diagonal_relaxed")
    script = load_script(ROOT / "benchmarks" / "optimizer_picks.py")
    monkeypatch.setitem(sys.modules, "model_ceiling", type(sys)("model_ceiling"))
    sys.modules["model_ceiling"].development = lambda gpu, dtype: (dev, ps)
    monkeypatch.setattr(script, "answer_rows", lambda key: runs)
    trained = []
    real = R.Correction.fit.__func__
    monkeypatch.setattr(R.Correction, "fit", classmethod(
        lambda cls, pred, sms, **kw: trained.append(set(zip(pred["m"], pred["n"], pred["k"]))) or real(cls, pred, sms, **kw)))
    lines = script.feedback("h200")
    dev_shapes = set(zip(dev["m"], dev["n"], dev["k"]))
    assert trained[0] == dev_shapes  # the shipped correction
    for name, seen in zip(sets, trained[1:]):
        assert seen == dev_shapes | {s for other, shapes in sets.items() if other != name for s in shapes}
    assert [line.split()[0] for line in lines[1:4]] == list(sets) and len(lines) == 6
    # the two closing lines score every shape of every set once
    assert all(line.split("(")[1].split(")")[0].endswith("/4") for line in lines[-2:])
