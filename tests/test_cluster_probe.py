"""benchmarks/cluster_probe.py without a GPU: every run it times is legal on the H100,
and ws-pipelined's cluster_sync_us default is what the probe measured there."""

import csv
from pathlib import Path

import pytest

from gemmperf.hardware import get_gpu
from gemmperf.models import ws_pipelined as W
from gemmperf.params import ParamSet
from scripts import config_of, load_script, refused

ROOT = Path(__file__).resolve().parent.parent
PROBE = ROOT / "benchmarks" / "results" / "cluster_probe" / "cluster_probe_h100_2026-11-26.csv"


def test_every_run_is_legal_and_tiles_the_grid_exactly():
    probe = load_script(ROOT / "benchmarks" / "cluster_probe.py")
    gpu = get_gpu("h100-sxm5-80gb")
    runs = probe.tasks(gpu)
    assert len(runs) == len(probe.CLUSTERS) * len(probe.MODES) * len(probe.WAVES) * 2
    assert not refused(runs, gpu)
    for run in runs:
        cfg = config_of(run)
        tiles = (run["m"] // 128) * (run["n"] // 128)
        assert tiles == gpu.sms * run["waves"] and (run["n"] // 128) % cfg.cluster_n == 0


def test_the_cluster_sync_default_is_the_h100_probe():
    with PROBE.open() as fh:
        rows = [r for r in csv.DictReader(fh) if r["status"] == "ok"]
    t = {(r["waves"], r["mode"], r["persistent"], r["cluster"]): float(r["time_us"]) for r in rows}
    pair = [t[("1", "full", p, c)] - t[("1", "full", p, "1x1")] for p in ("False", "True") for c in ("2x1", "1x2")]
    default = W.constants_for(ParamSet(get_gpu("h100-sxm5-80gb")), "ws-hopper", "bf16").cluster_sync_us
    assert default == pytest.approx(sum(pair) / len(pair), abs=0.1)
    # the launch and the cluster barriers alone (empty mode) are a small part of it
    assert all(t[("1", "empty", "False", c)] - t[("1", "empty", "False", "1x1")] < default / 3 for c in ("2x1", "1x2"))
