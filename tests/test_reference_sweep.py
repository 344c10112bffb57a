"""benchmarks/reference_sweep.py --plan: the reference sweep's task counts, printed
without a GPU and without measuring anything."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

import gemmperf.bench.collect as collect
import gemmperf.hardware as hardware
from gemmperf.problem import read_testlist
from scripts import load_script

REPO = Path(__file__).resolve().parent.parent
SCRIPT = REPO / "benchmarks" / "reference_sweep.py"
GPU = "h100-sxm5-80gb"


@pytest.fixture
def sweep():
    return load_script(SCRIPT, "reference_sweep")


def test_every_planned_testlist_exists(sweep):
    for name, dtype, families, count in sweep.PLAN:
        assert read_testlist(REPO / "testlists" / f"{name}.csv", dtype), name
        assert dtype in ("bf16", "fp8") and count >= 1 and families
    assert {name for name, *_ in sweep.PLAN} >= {"holdout", "sealed", "random"}
    # the held-out lists are measured before any development list
    first = [name for name, *_ in sweep.PLAN][:3]
    assert set(first) == {"holdout", "sealed"}


def test_plan_prints_every_entry_and_measures_nothing(sweep, monkeypatch, tmp_path, capsys):
    """The whole plan, with tasks_for replaced by a recorder (the real one takes ~45 s
    over the whole plan; the subprocess test below runs it for one entry)."""
    calls = []

    def fake_tasks_for(shapes, gpu, families, dtype, preset, sample):
        calls.append((len(shapes), gpu.slug, tuple(families), dtype, preset, sample))
        return [None] * (len(shapes) * sample[0] * len(families))

    def refuse(*args, **kwargs):
        raise AssertionError("--plan must not probe the GPU nor start a collect")

    monkeypatch.setattr(collect, "tasks_for", fake_tasks_for)
    monkeypatch.setattr(hardware, "probe", refuse)
    monkeypatch.setattr(subprocess, "Popen", refuse)
    # a journal with 3 rows, 2 of them ok, for one entry of the plan
    journal = tmp_path / "fp8" / "decode.journal.csv"
    journal.parent.mkdir()
    journal.write_text("m,n,k,status\n1,2,3,ok\n1,2,4,ok\n1,2,5,failed\n")
    assert sweep.main(["--plan", "--gpu", GPU, "--journals", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert len(calls) == len(sweep.PLAN)
    table = out[out.index("testlist"):]
    for (name, dtype, families, count), call in zip(sweep.PLAN, calls):
        shapes = len(read_testlist(REPO / "testlists" / f"{name}.csv", dtype))
        # the task list a collect of this entry works through: the sample preset at the
        # collect's default seed (reference_sweep passes no --sample-seed)
        assert call == (shapes, GPU, tuple(families.split(",")), dtype, "sample", (count, collect.SAMPLE_SEED))
        total = shapes * count * len(families.split(","))
        in_journal = 3 if (name, dtype) == ("decode", "fp8") else 0
        assert re.search(rf"\] {re.escape(name)} {dtype}: {total} tasks, {in_journal} in the journal", out), name
        measured, ok = (3, 2) if (name, dtype) == ("decode", "fp8") else (0, 0)
        assert re.search(rf"^{re.escape(name)} +{dtype} +{count} +{total} +{measured} +{ok}$", table, re.M), name
    assert "all: 3 measured" in out
    assert not (tmp_path / "bf16").exists()  # --plan writes nothing


def test_plan_follows_only_and_dtypes(sweep, monkeypatch, capsys):
    seen = []

    def fake_tasks_for(shapes, gpu, families, dtype, *args):
        seen.append((dtype, len(shapes)))
        return []

    monkeypatch.setattr(collect, "tasks_for", fake_tasks_for)
    assert sweep.main(["--plan", "--gpu", GPU, "--only", "decode,squares", "--dtypes", "fp8"]) == 0
    assert [d for d, _ in seen] == ["fp8", "fp8"]
    out = capsys.readouterr().out
    assert "decode fp8" in out and "squares fp8" in out and "bf16" not in out and "random" not in out


def test_plan_runs_without_a_gpu_as_a_script(sweep):
    """One entry of the plan through the real sample preset, as a script (no GPU here)."""
    env = {**os.environ, "PYTHONPATH": str(REPO / "src")}
    run = subprocess.run([sys.executable, str(SCRIPT), "--plan", "--gpu", GPU, "--only", "squares", "--dtypes", "fp8"],
                         capture_output=True, text=True, env=env, timeout=120, cwd=REPO)
    assert run.returncode == 0, run.stderr
    shapes = len(read_testlist(REPO / "testlists" / "squares.csv", "fp8"))
    count = next(c for name, dtype, fams, c in sweep.PLAN if (name, dtype, fams) == ("squares", "fp8", "ws-hopper"))
    total = shapes * count  # ws-hopper only: count configurations a shape
    assert f"squares fp8: {total} tasks" in run.stdout
    assert re.search(rf"^squares +fp8 +{count} +{total} ", run.stdout, re.M)


def test_a_journal_of_another_gpu_is_refused(sweep, monkeypatch, tmp_path, capsys):
    """--journals pointing at another GPU's journals: one line, status 2, nothing
    measured (the collector would measure every task again under this GPU and mix two
    GPUs in one journal)."""
    def refuse(*args, **kwargs):
        raise AssertionError("a journal of another GPU must not start a collect")

    monkeypatch.setattr(hardware, "probe", lambda: hardware.get_gpu(GPU))
    monkeypatch.setattr(subprocess, "Popen", refuse)
    journal = tmp_path / "fp8" / "decode.journal.csv"
    journal.parent.mkdir()
    text = "m,n,k,status,gpu\n1,2,3,ok,h200-sxm-141gb\n"
    journal.write_text(text)
    assert sweep.main(["--only", "decode", "--dtypes", "fp8", "--journals", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and str(journal) in err[0] and "h200-sxm-141gb" in err[0] and GPU in err[0]
    assert journal.read_text() == text
