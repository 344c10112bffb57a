"""benchmarks/ring_depth_probe.py without a GPU: its runs are legal and distinct, and the
run it made on a lent H100 is verified and read back: with 32 CTAs of 128x64 or 64x128
tiles (latency-bound rings) three and four stages take the same round trip over B - 1
slots, the slot released a k-block late, while two stages run faster than one load in
flight would (benchmarks/MODEL_ACCURACY.md, "Tried in the twelfth session")."""

import csv
from pathlib import Path

from gemmperf.hardware import get_gpu
from scripts import distinct, load_script, refused

ROOT = Path(__file__).resolve().parent.parent
RUN = ROOT / "benchmarks" / "results" / "ring_depth_probe" / "ring_depth_probe_h100_2026-11-27.csv"


def test_the_runs_are_legal_and_distinct():
    probe = load_script(ROOT / "benchmarks" / "ring_depth_probe.py")
    gpu = get_gpu("h100-sxm5-80gb")
    runs = probe.tasks()
    assert distinct(runs) == len(runs) == 44 and not refused(runs, gpu)
    for run in runs:
        assert run["m"] == run["tile_m"] and run["n"] % run["tile_n"] == 0  # nothing overhangs
    # the deepest rings the shared memory holds: 8 for 64-row-wide B tiles, 4 for 128x256
    assert max(r["stages"] for r in runs if (r["tile_m"], r["tile_n"]) == (128, 256)) == 4


def test_the_h100_run_is_verified_and_three_or_four_slots_lose_one():
    with open(RUN) as f:
        rows = list(csv.DictReader(f))
    assert len(rows) == 44 and all(r["status"] == "ok" for r in rows)
    per_kblock = {(r["tile"], int(r["ctas"]), int(r["stages"])): float(r["time_us"]) / 128 for r in rows}
    for tile in ("128x64", "64x128"):  # 128x128 at 4 stages nears its transfer time
        p2, p3, p4 = (per_kblock[(tile, 32, b)] for b in (2, 3, 4))
        assert abs(2 * p3 / (3 * p4) - 1) < 0.03, tile  # round trip / (B - 1) at B = 3 and 4
        assert 3 * p3 / (4 * p4) > 1.08, tile  # not round trip / B
        assert p2 < 0.85 * 2 * p3, tile  # two stages: faster than one load in flight
    # a full wave of 132 CTAs is bound by the shared bandwidth from four stages on
    assert abs(per_kblock[("128x64", 132, 8)] / per_kblock[("128x64", 132, 4)] - 1) < 0.1
