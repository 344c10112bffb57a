"""benchmarks/zero_fill_probe.py and oob_box_probe.py (the same decode-like shape, other M
and ring depths) and zero_fill_rows_probe.py (tile heights, rows zero-filled, ring depths,
CTAs in the wave) without a GPU: every run they time is legal on the H100, the
out-of-bounds box probe counts the wholly out-of-bounds A slices as the kernel loads them,
and the runs they made on a lent H100 are all verified and read back."""

import csv
from pathlib import Path

import pytest

from gemmperf.hardware import get_gpu
from scripts import distinct, load_script, refused

ROOT = Path(__file__).resolve().parent.parent
RUN = ROOT / "benchmarks" / "results" / "zero_fill_probe" / "zero_fill_probe_h100_2026-11-26.csv"
OOB_RUN = ROOT / "benchmarks" / "results" / "oob_box_probe" / "oob_box_probe_h100_2026-11-26.csv"
ROWS_RUN = ROOT / "benchmarks" / "results" / "zero_fill_rows_probe" / "zero_fill_rows_probe_h100_2026-11-26.csv"


@pytest.mark.parametrize("script", ["zero_fill_probe.py", "oob_box_probe.py"])
def test_every_run_is_legal(script):
    probe = load_script(ROOT / "benchmarks" / script)
    gpu = get_gpu("h100-sxm5-80gb")
    runs = probe.tasks()
    assert len(runs) == len(probe.MS) * len(probe.CLUSTERS) * len(probe.STAGES)
    assert not refused(runs, gpu)


def test_the_h100_run_is_verified_and_2x2_clusters_stop_gaining_from_deeper_rings():
    with open(RUN) as f:
        rows = list(csv.DictReader(f))
    assert len(rows) == 36 and all(r["status"] == "ok" for r in rows)
    t = {(int(r["m"]), r["cluster"], int(r["stages"])): float(r["time_us"]) for r in rows}
    # what the probe found: 1x1 gains from 4 to 8 stages, 2x2 does not (a floor per k-block)
    assert t[(1, "1x1", 8)] < 0.9 * t[(1, "1x1", 4)]
    assert abs(t[(1, "2x2", 8)] / t[(1, "2x2", 4)] - 1) < 0.03


def test_wholly_out_of_bounds_slices_of_the_worst_cluster():
    probe = load_script(ROOT / "benchmarks" / "oob_box_probe.py")
    # 128-row tiles: a 2x2 cluster covers rows 0-255 in four 64-row slices
    assert [probe.oob_slices(m, 128, 2, 2) for m in (1, 64, 65, 128, 129, 192, 256)] == \
        [(3, 0), (3, 0), (2, 0), (2, 0), (1, 0), (1, 0), (0, 0)]
    # 1x2: the second tile row of M = 129 has one such slice (its first row is inside)
    assert probe.oob_slices(129, 128, 1, 2) == (1, 0) and probe.oob_slices(128, 128, 1, 2) == (0, 0)
    # without multicast the box is whole: 2x1 with M <= 128 has one, not multicast
    assert probe.oob_slices(64, 128, 2, 1) == (0, 1)


def test_the_h100_run_is_verified_and_multicast_out_of_bounds_slices_add_up():
    with open(OOB_RUN) as f:
        rows = list(csv.DictReader(f))
    assert len(rows) == 56 and all(r["status"] == "ok" for r in rows)
    t = {(int(r["m"]), r["cluster"], int(r["stages"])): float(r["time_us"]) for r in rows}
    # 2x2 at 8 stages: each wholly out-of-bounds multicast slice adds about the same time
    steps = [t[(256, "2x2", 8)], t[(192, "2x2", 8)], t[(128, "2x2", 8)], t[(64, "2x2", 8)]]
    assert all(b - a > 0.25 * steps[0] for a, b in zip(steps, steps[1:]))
    # and the ring's depth does not hide them: 4 and 8 stages within 3% with 2 or 3 slices
    assert all(abs(t[(m, "2x2", 8)] / t[(m, "2x2", 4)] - 1) < 0.03 for m in (1, 64, 65, 128))
    # a wholly out-of-bounds box that is not multicast (2x1, M <= 128) costs next to nothing
    assert t[(64, "2x1", 8)] < t[(256, "2x1", 8)]


def test_the_rows_probe_runs_are_legal_and_distinct():
    probe = load_script(ROOT / "benchmarks" / "zero_fill_rows_probe.py")
    gpu = get_gpu("h100-sxm5-80gb")
    runs = probe.tasks()
    assert distinct(runs) == len(runs) == 110 and not refused(runs, gpu)
    # 256x64 tiles: the H100 holds 4 stages at most, so 8 became 4 (and ran once)
    assert {r["stages"] for r in runs if r["tile_m"] == 256} == {2, 4}


def test_the_rows_probe_h100_run_zero_fill_costs_by_rows_in_flight():
    with open(ROWS_RUN) as f:
        rows = list(csv.DictReader(f))
    assert len(rows) == 110 and all(r["status"] == "ok" for r in rows)
    t = {(r["tile"], r["cluster"], int(r["n"]), int(r["m"]), int(r["stages"])): float(r["time_us"]) for r in rows}
    # with 32 CTAs (N = 2048) a box of 127 zero rows adds little; a full wave of 132 pays much more
    few = t[("128x64", "1x1", 2048, 1, 4)] / t[("128x64", "1x1", 2048, 128, 4)]
    full = t[("128x64", "1x1", 8448, 1, 4)] / t[("128x64", "1x1", 8448, 128, 4)]
    assert few < 1.25 and full > 1.8
    # the same zero-filled rows in flight from other tiles and rings, the same round trip
    # (stages x time per k-block): 128x64 at M = 64 and 4 stages (132 x 64 x 4 rows) against
    # 256x64 at M = 128 and 2 stages (132 x 128 x 2)
    rt_a = 4 * t[("128x64", "1x1", 8448, 64, 4)] / 128
    rt_b = 2 * t[("256x64", "1x1", 8448, 128, 2)] / 128
    assert abs(rt_a / rt_b - 1) < 0.05
    # a multicast slice wholly past M (1x2, M = 64) costs a full wave and not 16 clusters
    assert t[("128x64", "1x2", 2048, 64, 8)] < 1.03 * t[("128x64", "1x2", 2048, 128, 8)]
    assert t[("128x64", "1x2", 8448, 64, 8)] > 1.4 * t[("128x64", "1x2", 8448, 128, 8)]
