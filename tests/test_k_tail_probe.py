"""benchmarks/k_tail_probe.py without a GPU: its runs keep S k-blocks while K moves on
and off the multiple of 64, every one is legal on both GPUs, and the run it made on a lent
H200 is verified and shows what step 29 models: one k-block of 16 or 32 columns takes
longer than one of 64 over 8 waves, though it moves less."""

import csv
from pathlib import Path

from gemmperf.hardware import get_gpu
from scripts import load_script, refused

ROOT = Path(__file__).resolve().parent.parent
RUN = ROOT / "benchmarks" / "results" / "k_tail_probe" / "k_tail_probe_h200_2026-12-02.csv"


def test_the_runs_keep_their_k_blocks_and_are_legal():
    probe = load_script(ROOT / "benchmarks" / "k_tail_probe.py")
    assert probe.ks() == (16, 32, 56, 64, 80, 96, 120, 128, 208, 224, 248, 256, 464, 480, 504, 512)
    runs = probe.tasks()
    assert len(runs) == len(probe.CONFIGS) * len(probe.MNS) * len(probe.ks())
    for slug in ("h100-sxm5-80gb", "h200-sxm-141gb"):
        assert not refused(runs, get_gpu(slug))


def test_the_h200_run_is_verified_and_a_k_tail_costs_more_than_its_bytes_save():
    with open(RUN) as f:
        rows = list(csv.DictReader(f))
    assert len(rows) == 64 and all(r["status"] == "ok" for r in rows)
    t = {(r["config"], int(r["k"])): float(r["time_us"]) for r in rows}
    for config in ("128x128 1x1 2048x8448", "128x256 2x1 2048x8448"):
        assert t[(config, 16)] > 1.1 * t[(config, 64)] and t[(config, 32)] > 1.1 * t[(config, 64)]
