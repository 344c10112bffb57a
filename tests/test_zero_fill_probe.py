"""benchmarks/zero_fill_probe.py without a GPU: every run it times is legal on the H100,
and the runs it made on a lent H100 are all verified and read back."""

import csv
from pathlib import Path

from gemmperf.hardware import get_gpu
from gemmperf.kernels import check_legal
from gemmperf.problem import KernelConfig
from scripts import load_script

ROOT = Path(__file__).resolve().parent.parent
RUN = ROOT / "benchmarks" / "results" / "zero_fill_probe" / "zero_fill_probe_h100_2026-11-26.csv"


def test_every_run_is_legal():
    probe = load_script(ROOT / "benchmarks" / "zero_fill_probe.py")
    gpu = get_gpu("h100-sxm5-80gb")
    runs = probe.tasks()
    assert len(runs) == len(probe.MS) * len(probe.CLUSTERS) * len(probe.STAGES)
    for run in runs:
        cfg = KernelConfig(**{k: v for k, v in run.items() if k not in ("m", "n", "k")})
        assert check_legal(cfg, gpu) is None


def test_the_h100_run_is_verified_and_2x2_clusters_stop_gaining_from_deeper_rings():
    with open(RUN) as f:
        rows = list(csv.DictReader(f))
    assert len(rows) == 36 and all(r["status"] == "ok" for r in rows)
    t = {(int(r["m"]), r["cluster"], int(r["stages"])): float(r["time_us"]) for r in rows}
    # what the probe found: 1x1 gains from 4 to 8 stages, 2x2 does not (a floor per k-block)
    assert t[(1, "1x1", 8)] < 0.9 * t[(1, "1x1", 4)]
    assert abs(t[(1, "2x2", 8)] / t[(1, "2x2", 4)] - 1) < 0.03
