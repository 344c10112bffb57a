"""benchmarks/probes.py without a GPU: a run the GPU cannot do is not launched, a run it
can is measured with only its size and configuration, and the CSV keeps every column."""

import argparse
import csv
import sys
from pathlib import Path

import pytest

from gemmperf.hardware import get_gpu
from gemmperf.problem import KernelConfig
from scripts import load_script

ROOT = Path(__file__).resolve().parent.parent


def test_measure_skips_illegal_runs_and_passes_the_task_on(tmp_path):
    probes = load_script(ROOT / "benchmarks" / "probes.py")
    gpu = get_gpu("h100-sxm5-80gb")
    seen = []

    def meas(task):
        seen.append(task)
        return {"status": "ok", "time_us": 12.5, "sm_clock_start_mhz": 1980.0, "sm_clock_end_mhz": 1965.0}

    legal = {"m": 256, "n": 256, "k": 64, "waves": 1, **KernelConfig(family="ws-hopper", dtype="bf16").as_dict()}
    illegal = {**legal, "tile_m": 512, "tile_n": 512}
    assert probes.measure(meas, gpu, illegal)["status"] == "illegal" and not seen
    out = probes.measure(meas, gpu, legal)
    assert out == {"status": "ok", "time_us": 12.5, "reason": "", "clock_start": 1980.0, "clock_end": 1965.0}
    assert "waves" not in seen[0] and (seen[0]["m"], seen[0]["tile_m"]) == (256, legal["tile_m"])
    path = tmp_path / "runs.csv"
    probes.write_csv(path, [{"a": 1}, {"a": 2, "b": 3}])
    assert list(csv.DictReader(open(path))) == [{"a": "1", "b": ""}, {"a": "2", "b": "3"}]


@pytest.mark.parametrize("script", ["cluster_probe.py", "oob_box_probe.py", "ring_depth_probe.py",
                                    "zero_fill_probe.py", "zero_fill_rows_probe.py", "k_tail_probe.py",
                                    "long_k_probe.py"])
def test_a_probe_measures_every_run_once_and_writes_them_all(script, tmp_path, monkeypatch, capsys):
    """Each probe's main(), on a stand-in for the GPU's Measurer: every legal run measured
    once with its own size, the CSV holds one row per run with the probe's labels first."""
    probes = load_script(ROOT / "benchmarks" / "probes.py", "probes")
    gpu = get_gpu("h100-sxm5-80gb")
    seen = []

    def meas(task):
        seen.append(task)
        return {"status": "ok", "time_us": 100.0 + len(seen), "sm_clock_start_mhz": 1980.0,
                "sm_clock_end_mhz": 1980.0}

    out = tmp_path / "runs.csv"
    monkeypatch.setattr(probes, "start", lambda doc, argv=None, flags=None: (
        argparse.Namespace(out=str(out), **{name.replace("-", "_"): False for name in flags or {}}), gpu, meas))
    monkeypatch.setitem(sys.modules, "probes", probes)
    probe = load_script(ROOT / "benchmarks" / script)
    assert probe.main([]) == 0
    tasks = probe.tasks(gpu) if script == "cluster_probe.py" else probe.tasks()
    rows = list(csv.DictReader(open(out)))
    assert len(rows) == len(tasks) == len(seen)
    assert [(t["m"], t["n"], t["k"]) for t in seen] == [(t["m"], t["n"], t["k"]) for t in tasks]
    assert [float(r["time_us"]) for r in rows] == [101.0 + i for i in range(len(rows))]
    assert list(rows[0])[-5:] == ["status", "time_us", "reason", "clock_start", "clock_end"]
    assert capsys.readouterr().out.count(" ok ") >= len(rows)


def test_a_probe_reads_a_run_back_or_runs():
    """probes.read_back: --read CSV [--gpu SLUG] calls the probe's read (SLUG by default the
    development GPU) and hands back its code; otherwise no code, the other arguments kept."""
    probes = load_script(ROOT / "benchmarks" / "probes.py", "probes")
    seen = []

    def read(path, gpu):
        seen.append((path, gpu))
        return 7

    assert probes.read_back(["--read", "run.csv"], read) == (7, [])
    assert probes.read_back(["--read", "run.csv", "--gpu", "h200-sxm-141gb", "--out", "x"], read) == (7, ["--out", "x"])
    assert seen == [("run.csv", probes.DEVELOPMENT_GPU), ("run.csv", "h200-sxm-141gb")]
    assert probes.read_back(["--grid", "--out", "x.csv"], read) == (None, ["--grid", "--out", "x.csv"])
    assert len(seen) == 2
