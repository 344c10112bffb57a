"""benchmarks/optimizer_picks.py without a GPU: its two sets of shapes are fresh (no
testlist holds one, nor the other set) and those of the committed plans of both GPUs,
every run is legal and named once, the lists are what `gemmperf optimize --corrected
--top 8` names (and on the H200 the H100's carried fit's shortlist), --set and --shard
pick the shapes, and the runs on a lent H100 and H200 read back."""

import argparse
import csv
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
    assert list(sets) == ["dev", "heldout"] and not set(sets["dev"]) & set(sets["heldout"])
    for (name, shapes), gpu in [(item, gpu) for item in sets.items() for gpu in script.GPUS]:
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


@pytest.mark.parametrize("gpu, name, runs, answer, corrected, shortlist, sample, moved", [
    ("h100", "dev", 748, "16/40", "22/40", "31/40", "4/40", None),
    ("h100", "heldout", 730, "23/40", "24/40", "33/40", "3/40", None),
    ("h200", "dev", 754, "19/40", "26/40", "27/40", "5/40", "19/40"),
    ("h200", "heldout", 759, "21/40", "26/40", "31/40", "4/40", "21/40"),
])
def test_the_lent_gpus_runs_read_back(gpu, name, runs, answer, corrected, shortlist, sample, moved):
    """Every run verified. Within 1% of the best timed for its shape: the answer, the
    answer --corrected gives, the fastest of --top 8's shortlist, the fastest of 8
    sampled configurations, and on the H200 the answer of the H100's fit carried onto it
    (benchmarks/README.md, "Optimizer picks")."""
    with open(RESULTS / f"run_{gpu}_{name}.csv") as f:
        rows = list(csv.DictReader(f))
    assert len(rows) == runs and all(r["status"] == "ok" for r in rows)
    script = load_script(ROOT / "benchmarks" / "optimizer_picks.py")
    lines = script.summary(rows)
    assert "\n".join(lines).splitlines() == (RESULTS / f"summary_{gpu}_{name}.txt").read_text().splitlines()
    regret = {line.split("  mean")[0].strip(): line for line in lines if "within 1%" in line}
    assert regret["optimizer's answer (fitted model)"].endswith(f"within 1%: {answer}")
    assert regret["--corrected (the 64 best re-ranked)"].endswith(f"within 1%: {corrected}")
    assert regret["best of the --top 8 shortlist, timed"].endswith(f"within 1%: {shortlist}")
    assert regret["best of 8 sampled, timed (no model)"].endswith(f"within 1%: {sample}")
    assert (regret["the transferred fit's answer"].endswith(f"within 1%: {moved}") if moved else
            "the transferred fit's answer" not in regret)


@pytest.mark.parametrize("gpu, name, corrected", [("h100", "dev", "22/40"), ("h200", "heldout", "26/40")])
def test_rescoring_with_the_plans_own_ranking_gives_the_summarys_figures(gpu, name, corrected):
    """--rescore's scoring, handed the ranking the plan recorded (step 21's correction),
    gives the committed summary's --corrected figure and the answer's corrected error;
    a pick the runs never timed is counted as such, not scored."""
    from gemmperf.problem import KernelConfig

    script = load_script(ROOT / "benchmarks" / "optimizer_picks.py")
    plan = script.read_plan(script.plan_path(name, gpu))
    with open(RESULTS / f"run_{gpu}_{name}.csv") as f:
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
    assert lines[1].endswith(f"within 1%: {corrected}") and "(40 shapes timed, 0 not)" in lines[1]
    untimed = script.rescored(shapes[:3], runs, lambda s: ranked_of(s, drop_first=True))
    assert "(0 shapes timed, 3 not)" in untimed[1]
