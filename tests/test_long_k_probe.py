"""benchmarks/long_k_probe.py without a GPU: its runs are legal on both GPUs and keep the
configuration while K grows, and the run it made on a lent H200 is verified and shows what
the notes say: a k-block costs no more at K = 28672 than at 4096 (within 10%) on a card
that held its clock, so the development data's long-K rows that ran slower than the model
are not the L2's."""

import csv
from pathlib import Path

from gemmperf.hardware import get_gpu
from scripts import load_script, refused

ROOT = Path(__file__).resolve().parent.parent
RUN = ROOT / "benchmarks" / "results" / "long_k_probe" / "long_k_h200_2026-12-02.csv"


def test_the_runs_grow_k_and_are_legal():
    probe = load_script(ROOT / "benchmarks" / "long_k_probe.py")
    runs = probe.tasks()
    assert len(runs) == len(probe.CONFIGS) * len(probe.MNS) * len(probe.KS)
    assert all(k % probe.TILE_K == 0 for k in probe.KS) and probe.KS == tuple(sorted(probe.KS))
    for slug in ("h100-sxm5-80gb", "h200-sxm-141gb"):
        assert not refused(runs, get_gpu(slug))


def test_the_h200_run_is_verified_and_a_k_block_costs_no_more_at_long_k():
    with open(RUN) as f:
        rows = list(csv.DictReader(f))
    assert len(rows) == 40 and all(r["status"] == "ok" for r in rows)
    per_block = {(r["config"], int(r["k"])): float(r["time_us"]) / (int(r["k"]) // 64) for r in rows}
    for config in {r["config"] for r in rows}:
        assert per_block[(config, 28672)] < 1.1 * per_block[(config, 4096)]
