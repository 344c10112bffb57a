"""benchmarks/ring_depth_probe.py without a GPU: its runs are legal and distinct, and the
run it made on a lent H100 is verified and read back: with 32 CTAs of 128x64 or 64x128
tiles (latency-bound rings) three and four stages take the same round trip over B - 1
slots, the slot released a k-block late, while two stages run faster than one load in
flight would (benchmarks/MODEL_ACCURACY.md, "Tried in the twelfth session")."""

import csv
from pathlib import Path

import pytest

from gemmperf.hardware import get_gpu
from scripts import distinct, load_script, refused

ROOT = Path(__file__).resolve().parent.parent
RUN = ROOT / "benchmarks" / "results" / "ring_depth_probe" / "ring_depth_probe_h100_2026-11-27.csv"
SCHEDULES = ROOT / "benchmarks" / "results" / "ring_depth_probe" / "ring_depth_schedules_h100_2026-11-27.csv"
WIDE = ROOT / "benchmarks" / "results" / "ring_depth_probe" / "ring_depth_wide_h100_2026-11-27.csv"
MODES = ROOT / "benchmarks" / "results" / "ring_depth_probe" / "ring_depth_wide_modes_h100_2026-11-27.csv"


def test_the_runs_are_legal_and_distinct():
    probe = load_script(ROOT / "benchmarks" / "ring_depth_probe.py")
    gpu = get_gpu("h100-sxm5-80gb")
    runs = probe.tasks()
    assert distinct(runs) == len(runs) == 44 and not refused(runs, gpu)
    for run in runs:
        assert run["m"] == run["tile_m"] and run["n"] % run["tile_n"] == 0  # nothing overhangs
    # the deepest rings the shared memory holds: 8 for 64-row-wide B tiles, 4 for 128x256
    assert max(r["stages"] for r in runs if (r["tile_m"], r["tile_n"]) == (128, 256)) == 4


def test_the_schedule_runs_are_legal_and_distinct_and_overhang_nothing():
    probe = load_script(ROOT / "benchmarks" / "ring_depth_probe.py")
    gpu = get_gpu("h100-sxm5-80gb")
    runs = probe.tasks(schedules=True)
    assert distinct(runs) == len(runs) == 192 and not refused(runs, gpu)
    kinds = {(r["cluster_m"], r["cluster_n"], r["schedule"]) for r in runs}
    assert kinds == {(cm, cn, s) for cm, cn in probe.CLUSTERS for s in probe.SCHEDULES}
    for run in runs:  # cm tile rows, whole clusters, the probe's CTA counts
        assert run["m"] == run["cluster_m"] * run["tile_m"] and run["n"] % (run["cluster_n"] * run["tile_n"]) == 0
        assert probe.label(run, True)["ctas"] in probe.CTAS


def test_the_wide_runs_are_the_legal_256_tiles_of_both_schedules():
    probe = load_script(ROOT / "benchmarks" / "ring_depth_probe.py")
    gpu = get_gpu("h100-sxm5-80gb")
    runs = probe.tasks(wide=True)
    assert distinct(runs) == len(runs) == 38 and not refused(runs, gpu)
    assert {(r["tile_m"], r["tile_n"]) for r in runs} == set(probe.WIDE_TILES)
    assert {(r["cluster_m"], r["cluster_n"]) for r in runs} == {(1, 1)}
    # ping-pong where one warpgroup holds the whole tile's accumulators: 256x64 and 64x256
    assert {(r["tile_m"], r["tile_n"]) for r in runs if r["schedule"] == "pingpong"} == {(256, 64), (64, 256)}
    for run in runs:
        assert run["m"] == run["tile_m"] and run["n"] % run["tile_n"] == 0


def test_the_wide_run_is_verified_and_256_row_tiles_take_a_longer_round_trip():
    """The --wide run (lent H100): with 32 CTAs at two stages, a 256-row tile's k-block
    takes 0.2 us longer than a 256-column tile's of the same bytes and multiply time
    (256x128 against 128x256), the round trip (2P - Tc over the two slots) 0.3-0.5 us
    longer; at four stages both run at the tensor cores' rate (within 3%)."""
    with open(WIDE) as f:
        rows = list(csv.DictReader(f))
    assert len(rows) == 38 and all(r["status"] == "ok" for r in rows)
    t = {(r["tile"], int(r["ctas"]), r["schedule"], int(r["stages"])): float(r["time_us"]) / 128 for r in rows}
    tall, wide = t[("256x128", 32, "cooperative", 2)], t[("128x256", 32, "cooperative", 2)]
    assert 0.15 < tall - wide < 0.3
    assert abs(t[("256x128", 32, "cooperative", 4)] / t[("128x256", 32, "cooperative", 4)] - 1) < 0.03
    # 256x64 against 64x256 (40 KB a k-block each): the 256-row tile slower at two stages too
    assert t[("256x64", 32, "cooperative", 2)] > t[("64x256", 32, "cooperative", 2)] + 0.04


def test_the_mode_runs_time_each_wide_run_as_the_full_load_only_and_math_only_kernel():
    probe = load_script(ROOT / "benchmarks" / "ring_depth_probe.py")
    runs = probe.tasks(wide=True, modes=True)
    assert len(runs) == 3 * len(probe.tasks(wide=True)) == distinct(runs)
    assert [r["mode"] for r in runs[:3]] == list(probe.MODES)
    assert all(r["mode"] == "full" for r in probe.tasks(wide=True) + probe.tasks() + probe.tasks(schedules=True))
    assert len(probe.tasks(modes=True)) == 3 * len(probe.tasks())  # the default tiles' runs too
    assert probe.label(runs[1], True)["mode"] == "load-only"


def test_the_mode_run_puts_a_256_row_tiles_longer_round_trip_in_its_consumers():
    """The --wide --modes run (lent H100): with 32 CTAs at two stages, the load-only ring of
    a 256-row tile is no slower than a 256-column tile's (its A box hits in L2, its B box is
    the smaller), and the math-only k-block takes the same time for both; only the full
    kernel, where the consumers hold each slot until their wgmmas are done, is slower for
    the 256-row tile: what the extra time is spent on is the consumers' hold of a slot."""
    with open(MODES) as f:
        rows = list(csv.DictReader(f))
    assert len(rows) == 114 and all(r["status"] == "ok" for r in rows)
    t = {(r["tile"], int(r["ctas"]), r["schedule"], r["mode"], int(r["stages"])): float(r["time_us"]) / 128
         for r in rows}
    for tall, wide in (("256x128", "128x256"), ("256x64", "64x256")):
        at = lambda tile, mode: t[(tile, 32, "cooperative", mode, 2)]  # noqa: E731
        assert at(tall, "load-only") < at(wide, "load-only")
        assert abs(at(tall, "math-only") / at(wide, "math-only") - 1) < 0.03
        assert at(tall, "full") > at(wide, "full") + 0.05
        # the consumers' share of the two-stage cycle, 2 * (full - load-only): longer
        assert (at(tall, "full") - at(tall, "load-only")) - (at(wide, "full") - at(wide, "load-only")) > 0.15
    # the full runs repeat the --wide run of the same morning within 8% (256x64 at four stages:
    # 0.431 and 0.401 us a k-block; every other run within 5%)
    with open(WIDE) as f:
        for r in csv.DictReader(f):
            key = (r["tile"], int(r["ctas"]), r["schedule"], "full", int(r["stages"]))
            assert abs(t[key] / (float(r["time_us"]) / 128) - 1) < 0.08, key


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


def test_the_schedule_run_is_verified_and_a_cluster_lengthens_the_round_trip():
    """The --schedules run (lent H100): with 32 CTAs (latency-bound rings) a cluster of 2 or
    4 adds about 0.15-0.25 us to a slot's round trip, at two stages (one load in flight) and
    at three (over B - 1 = 2 slots); ping-pong's ring is the cooperative one (one tile a CTA)
    up to four stages, deeper within 11% (2x2 clusters of 128x64 tiles: ping-pong faster);
    at 132 CTAs 2x2 clusters run in two waves (30 resident), about twice 2x1's time."""
    with open(SCHEDULES) as f:
        rows = list(csv.DictReader(f))
    assert len(rows) == 192 and all(r["status"] == "ok" for r in rows)
    t = {(r["tile"], int(r["ctas"]), r["cluster"], r["schedule"], int(r["stages"])): float(r["time_us"]) / 128
         for r in rows}
    for tile in ("128x64", "128x128"):
        for cluster in ("2x1", "1x2", "2x2"):
            lone, clustered = (t[(tile, 32, c, "cooperative", 2)] for c in ("1x1", cluster))
            assert 0.12 < clustered - lone < 0.25, (tile, cluster)  # one round trip at B = 2
            lone, clustered = (2 * t[(tile, 32, c, "cooperative", 3)] for c in ("1x1", cluster))
            assert 0.05 < clustered - lone < 0.25, (tile, cluster)  # one round trip over B - 1 slots
    for key, us in t.items():
        if key[3] == "pingpong":
            assert abs(us / t[(*key[:3], "cooperative", key[4])] - 1) < (0.04 if key[4] <= 4 else 0.12), key
    for tile in ("128x64", "128x128"):
        assert t[(tile, 132, "2x2", "cooperative", 2)] > 1.8 * t[(tile, 132, "2x1", "cooperative", 2)]


SCHEDULES_H200 = ROOT / "benchmarks" / "results" / "ring_depth_probe" / "ring_depth_schedules_h200_2026-11-29.csv"


def test_the_h200s_schedule_run_pays_the_h100s_cluster_cost_in_the_ring():
    """The same --schedules runs on a lent H200 (2026-11-29), every one verified: with 32
    CTAs (latency-bound rings) a cluster's k-block over the same ring's without one is the
    H100's within 7% at every depth and within 2% over each cluster shape's 24 rings (the
    lockstep is the SM's and the ring's, not the memory's), while at 132 CTAs the H200's
    unclustered rings, bound by DRAM, run faster (0.70-0.80x the H100's at four stages and
    deeper) and a 2x2 cluster's two waves do not."""
    def table(path):
        with open(path) as f:
            rows = list(csv.DictReader(f))
        assert len(rows) == 192 and all(r["status"] == "ok" for r in rows)
        return {(r["tile"], int(r["ctas"]), r["cluster"], r["schedule"], int(r["stages"])): float(r["time_us"])
                for r in rows}

    h100, h200 = table(SCHEDULES), table(SCHEDULES_H200)
    assert h100.keys() == h200.keys()
    by_cluster = {}
    for (tile, ctas, cluster, schedule, stages) in h100:
        if ctas == 32 and cluster != "1x1":
            lone = (tile, ctas, "1x1", schedule, stages)
            key = (tile, ctas, cluster, schedule, stages)
            ratio = (h200[key] / h200[lone]) / (h100[key] / h100[lone])
            assert abs(ratio - 1) < 0.07, key
            by_cluster.setdefault(cluster, []).append(ratio)
    assert sorted(by_cluster) == ["1x2", "2x1", "2x2"]
    for cluster, ratios in by_cluster.items():
        assert len(ratios) == 24 and abs(sum(ratios) / len(ratios) - 1) < 0.02, cluster
    for tile in ("128x64", "128x128"):
        for stages in (4, 5, 6):
            lone = (tile, 132, "1x1", "cooperative", stages)
            assert 0.70 < h200[lone] / h100[lone] < 0.85, (tile, stages)
            pair = (tile, 132, "2x2", "cooperative", stages)
            assert 0.90 < h200[pair] / h100[pair] < 1.03, (tile, stages)


RATES = ROOT / "benchmarks" / "results" / "ring_depth_probe" / "ring_depth_rate_{}_2026-11-27.csv"


def test_compare_finds_the_h200s_round_trip_longer_than_the_h100s(tmp_path):
    """--compare on the two GPUs' --rate runs (load-only rings, both verified): a ring of
    128x64 slots, latency-bound at 2-3 stages, takes 1.06-1.09x as long on the H200 as
    on the H100 at the same 1980 MHz (its loaded round trip from DRAM is longer), where
    the 48 KB slots of 128x256 and 256x128, whose transfer binds, take 0.90-1.02x. Two
    files that share no verified run are refused with one line."""
    probe = load_script(ROOT / "benchmarks" / "ring_depth_probe.py")
    lines = probe.compare(str(RATES).format("h100"), str(RATES).format("h200"))
    assert lines[0].startswith("time in ring_depth_rate_h200_2026-11-27.csv over ring_depth_rate_h100")
    rings = {" ".join(line.split()[:2]): dict(part.split(": ") for part in line.split("  ")[1].split(" / "))
             for line in lines[1:-1]}
    assert len(rings) == 8 and lines[-1].startswith("median by CTAs and stages (runs): 1 CTAs 2 stages")
    for ctas in ("1", "8"):
        assert all(1.06 < float(rings[f"128x64 {ctas}"][s]) < 1.09 for s in ("2", "3"))
        for tile in ("128x256", "256x128"):
            assert all(0.90 < float(r) < 1.02 for r in rings[f"{tile} {ctas}"].values())
    with open(str(RATES).format("h100")) as f:
        header = f.readline()
    other = tmp_path / "other.csv"
    other.write_text(header + "64x64,1,1x1,cooperative,load-only,64,64,2,ok,1.0,,1980.0,1980.0\n")
    with pytest.raises(ValueError, match="share no verified run"):
        probe.compare(str(RATES).format("h100"), str(other))
    other.write_text("tile,ctas,stages,status,time_us\n64x64,1,2,ok,1.0\n")
    with pytest.raises(ValueError, match="not runs of the same selection"):
        probe.compare(str(RATES).format("h100"), str(other))


CTAS = ROOT / "benchmarks" / "results" / "ring_depth_probe" / "ring_depth_ctas_modes_h100_2026-11-27.csv"


def test_the_cta_sweep_is_legal_and_distinct():
    probe = load_script(ROOT / "benchmarks" / "ring_depth_probe.py")
    runs = probe.tasks(ctas=True)
    assert distinct(runs) == len(runs) == 3 * 8 * 3 and not refused(runs, get_gpu("h100-sxm5-80gb"))
    assert sorted({r["n"] // r["tile_n"] for r in runs}) == list(probe.CTA_COUNTS)  # one tile row of c tiles
    assert len(probe.tasks(ctas=True, modes=True)) == 3 * len(runs)


def test_the_lent_h100s_cta_sweep_reads_back():
    """With 1-8 CTAs a slot's round trip (the load-only ring at four stages, x 4) is
    0.75-0.95 us, and three and four stages take it over B - 1 slots within 14% (the full
    ring the slower); it grows with the CTAs in flight (1.3-1.9x by 64 CTAs), where the
    multiply alone (math-only) stays put."""
    with open(CTAS) as f:
        rows = list(csv.DictReader(f))
    assert len(rows) == 216 and all(r["status"] == "ok" for r in rows)
    t = {(r["tile"], int(r["ctas"]), r["mode"], int(r["stages"])): float(r["time_us"]) / 128 for r in rows}
    for tile in ("128x64", "128x128", "64x128"):
        for ctas in (1, 2, 4, 8):
            trip = 4 * t[(tile, ctas, "load-only", 4)]
            assert 0.75 < trip < 0.95, (tile, ctas, trip)
            for stages in (3, 4):
                assert abs(t[(tile, ctas, "full", stages)] / (trip / (stages - 1)) - 1) < 0.14, (tile, ctas, stages)
        assert 1.25 < t[(tile, 64, "load-only", 4)] / t[(tile, 1, "load-only", 4)] < 2.0
        math = [t[(tile, c, "math-only", 4)] for c in (1, 8, 64)]
        assert max(math) / min(math) < 1.03


def test_predict_sets_the_fitted_model_beside_a_run():
    probe = load_script(ROOT / "benchmarks" / "ring_depth_probe.py")
    lines = probe.predict(CTAS, ctas=True, modes=True)
    assert len(lines) == 3 * 8 + 1  # a line a tile and CTA count, then the MAPE
    assert all(len(line.split(": ")) == 4 for line in lines[:-1])  # three ring depths each
    assert lines[-1].startswith("predicted / measured over 72 runs: MAPE ")
    with pytest.raises(SystemExit, match="not a run of this selection"):
        probe.predict(CTAS, wide=True)


def _halves(selection: str, count: int):
    """(probe, runs, half) of a selection whose runs come in two halves (as measured then a
    knob turned, or a row then a column panel): ``count`` legal, distinct runs."""
    probe = load_script(ROOT / "benchmarks" / "ring_depth_probe.py")
    runs = probe.tasks(**{selection: True})
    assert len(runs) == count == distinct(runs) and not refused(runs, get_gpu("h100-sxm5-80gb"))
    return probe, runs, count // 2


def test_the_box_runs_time_each_wide_ring_with_one_box_and_with_two():
    probe, runs, half = _halves("boxes", 2 * 4 * 2 * 3)
    assert [r["box_limit"] for r in runs] == [256] * half + [128] * half  # as measured first
    assert {k: v for k, v in runs[0].items() if k != "box_limit"} == {
        k: v for k, v in runs[half].items() if k != "box_limit"}
    assert {(r["schedule"], r["cluster_m"], r["cluster_n"]) for r in runs} == {("cooperative", 1, 1)}
    assert probe.label(runs[half], True, "boxes")["box"] == 128 and "box" not in probe.label(runs[0], True)
    assert len(probe.tasks(boxes=True, modes=True)) == 3 * len(runs)


def test_the_box_run_switches_the_box_and_builds_the_kernels_again(tmp_path, monkeypatch):
    """main --boxes on a stand-in Measurer: each run measured once, the ones past the
    half with the 128-row box limit and a fresh kernel cache; the limit restored."""
    import argparse
    import sys

    from gemmperf.kernels.hopper import WS_HOPPER

    probes = load_script(ROOT / "benchmarks" / "probes.py", "probes")
    seen = []

    class Meas:
        kernels = {"stale": None}

        def __call__(self, task):
            seen.append((WS_HOPPER.box_limit, len(self.kernels)))
            self.kernels[len(seen)] = None
            return {"status": "ok", "time_us": 128.0}

    out = tmp_path / "boxes.csv"
    flags = {"schedules": False, "wide": False, "modes": False, "ctas": False, "boxes": True, "columns": False,
             "release": False, "rate": False, "pitch": False}
    monkeypatch.setattr(probes, "start", lambda doc, argv=None, flags_=None: (
        argparse.Namespace(out=str(out), **flags), get_gpu("h100-sxm5-80gb"), Meas()))
    monkeypatch.setitem(sys.modules, "probes", probes)
    probe = load_script(ROOT / "benchmarks" / "ring_depth_probe.py")
    assert probe.main(["--boxes"]) == 0
    half = len(seen) // 2
    assert [limit for limit, _ in seen] == [256] * half + [128] * half
    assert seen[half][1] == 0  # the 128-row runs start from no kernel
    assert WS_HOPPER.box_limit == 256
    rows = list(csv.DictReader(open(out)))
    assert len(rows) == 2 * half and {r["box"] for r in rows} == {"256", "128"}


def test_the_128_row_box_limit_splits_only_256_row_slices(monkeypatch):
    from gemmperf.kernels.hopper import WS_HOPPER
    from gemmperf.problem import KernelConfig

    def boxes(tm, tn, cm, cn):
        cfg = KernelConfig(family="ws-hopper", dtype="bf16", tile_m=tm, tile_n=tn, tile_k=64, stages=2,
                           cluster_m=cm, cluster_n=cn, persistent=True, epilogue="tma")
        return WS_HOPPER.operand_boxes(cfg)

    assert boxes(256, 128, 1, 1) == (256, 128) and boxes(256, 128, 2, 2) == (128, 64)
    monkeypatch.setattr(WS_HOPPER, "box_limit", 128)
    assert boxes(256, 128, 1, 1) == (128, 128) and boxes(64, 256, 1, 1) == (64, 128)
    assert boxes(256, 128, 1, 2) == (128, 128) and boxes(128, 64, 1, 1) == (128, 64)


BOXES = ROOT / "benchmarks" / "results" / "ring_depth_probe" / "ring_depth_boxes_modes_h100_2026-11-27.csv"


def test_the_box_run_finds_the_256_row_tiles_slow_ring_is_not_the_box():
    """The --boxes --modes run (lent H100): loading a 256-row operand slice as two 128-row
    boxes moves no full-kernel run by more than 2.5% and no load-only ring by more than 2%
    (the math-only runs load nothing: 256x128 at four stages with 132 CTAs is 4.6% apart
    there, the run-to-run spread); with two boxes a 256-row tile's two-stage k-block is as
    slow against a 256-column tile's as with one."""
    with open(BOXES) as f:
        rows = list(csv.DictReader(f))
    assert len(rows) == 144 and all(r["status"] == "ok" for r in rows)
    t = {(r["tile"], int(r["ctas"]), r["mode"], int(r["stages"]), int(r["box"])): float(r["time_us"]) / 128
         for r in rows}
    for (tile, ctas, mode, stages, box), us in t.items():
        if box == 256 and mode != "math-only":
            two = t[(tile, ctas, mode, stages, 128)]
            assert abs(two / us - 1) < (0.025 if mode == "full" else 0.02), (tile, ctas, mode, stages)
    for box in (256, 128):
        assert t[("256x128", 32, "full", 2, box)] - t[("128x256", 32, "full", 2, box)] > 0.15
        assert t[("256x64", 32, "full", 2, box)] > t[("64x256", 32, "full", 2, box)] + 0.04


def test_the_column_runs_put_the_same_rings_in_one_tile_row_then_one_tile_column():
    probe, runs, half = _halves("columns", 2 * 4 * 2 * 3)
    assert [r["panel"] for r in runs] == ["row"] * half + ["column"] * half
    for row, column in zip(runs[:half], runs[half:]):
        assert (row["m"], row["n"]) == (row["tile_m"], row["n"]) and row["n"] % row["tile_n"] == 0
        assert (column["m"], column["n"]) == (row["n"] // row["tile_n"] * row["tile_m"], row["tile_n"])
        assert probe.label(column, True, "columns")["ctas"] == probe.label(row, True)["ctas"]
    assert {r["panel"] for r in probe.tasks(wide=True) + probe.tasks(boxes=True)} == {"row"}


COLUMNS = ROOT / "benchmarks" / "results" / "ring_depth_probe" / "ring_depth_columns_modes_h100_2026-11-27.csv"


def test_the_column_run_finds_the_256_row_tiles_slow_ring_whichever_operand_is_shared():
    """The --columns --modes run (lent H100): with 32 CTAs at two stages, a 256-row tile's
    full k-block is 0.2 us slower than a 256-column tile's in one tile row (every CTA reads
    the same A box) and in one tile column (the same B box) alike; 256x64 slower than 64x256
    in both. The row runs repeat the --boxes run's as-measured ones within 3%."""
    with open(COLUMNS) as f:
        rows = list(csv.DictReader(f))
    assert len(rows) == 144 and all(r["status"] == "ok" for r in rows)
    t = {(r["tile"], int(r["ctas"]), r["mode"], int(r["stages"]), r["panel"]): float(r["time_us"]) / 128
         for r in rows}
    for panel in ("row", "column"):
        at = lambda tile: t[(tile, 32, "full", 2, panel)]  # noqa: E731
        assert 0.15 < at("256x128") - at("128x256") < 0.25, panel
        assert at("256x64") > at("64x256") + 0.05, panel
    with open(BOXES) as f:
        for r in csv.DictReader(f):
            if r["box"] == "256":
                key = (r["tile"], int(r["ctas"]), r["mode"], int(r["stages"]), "row")
                assert abs(t[key] / (float(r["time_us"]) / 128) - 1) < 0.03, key


def test_the_release_runs_time_each_ring_as_measured_then_freeing_the_slot_first():
    probe, runs, half = _halves("release", 2 * 5 * 2 * 3)
    assert [r["release_first"] for r in runs] == [False] * half + [True] * half
    assert {r["box_limit"] for r in runs} == {256} and {r["release_first"] for r in probe.tasks(boxes=True)} == {False}
    assert {(r["tile_m"], r["tile_n"]) for r in runs} == set(probe.RELEASE_TILES)
    assert [probe.label(r, True, "release")["release"] for r in (runs[0], runs[half])] == ["after-issue", "first"]


RELEASE = ROOT / "benchmarks" / "results" / "ring_depth_probe" / "ring_depth_release_h100_2026-11-27.csv"


def test_the_release_run_finds_the_slow_ring_in_the_issue_of_the_next_k_block():
    """The --release run (lent H100): freeing k-block j - 1's slot before issuing j's wgmmas
    (not after) takes, at 32 CTAs and two stages, 0.28 us off 256x128's k-block and 0.14
    off 256x64's (16 wgmmas a tensor-core sub-partition a k-block: about half the multiply,
    what issuing j's wgmmas waits for), and 0.05 off the tiles of 8 or fewer; 256x128 then
    runs faster than 128x256. At four stages, where the multiply binds, no tile gets slower
    by more than 2%."""
    with open(RELEASE) as f:
        rows = list(csv.DictReader(f))
    assert len(rows) == 60 and all(r["status"] == "ok" for r in rows)
    t = {(r["tile"], int(r["ctas"]), int(r["stages"]), r["release"]): float(r["time_us"]) / 128 for r in rows}
    gain = {tile: t[(tile, 32, 2, "after-issue")] - t[(tile, 32, 2, "first")]
            for tile in ("256x128", "256x64", "128x256", "128x128", "64x256")}
    assert 0.25 < gain["256x128"] < 0.30 and 0.12 < gain["256x64"] < 0.16
    assert all(0.03 < gain[tile] < 0.07 for tile in ("128x256", "128x128", "64x256"))
    assert t[("256x128", 32, 2, "first")] < t[("128x256", 32, 2, "first")]
    for (tile, ctas, stages, release), us in t.items():
        if stages == 4 and release == "first":
            assert us < 1.02 * t[(tile, ctas, stages, "after-issue")], (tile, ctas)


def test_the_rate_runs_are_load_only_rings_of_one_and_eight_ctas_at_every_depth():
    probe = load_script(ROOT / "benchmarks" / "ring_depth_probe.py")
    gpu = get_gpu("h100-sxm5-80gb")
    runs = probe.tasks(rate=True)
    assert distinct(runs) == len(runs) and not refused(runs, gpu)
    assert {r["mode"] for r in runs} == {"load-only"} and {r["m"] // r["tile_m"] for r in runs} == {1}
    assert {r["n"] // r["tile_n"] for r in runs} == set(probe.SELECTIONS["rate"].ctas) == {1, 8}
    depths = {(r["tile_m"], r["tile_n"]): [] for r in runs}
    for r in runs:
        depths[(r["tile_m"], r["tile_n"])].append(r["stages"])
    assert max(depths[(128, 64)]) == 8 and max(depths[(256, 128)]) == 4 and min(min(d) for d in depths.values()) == 2


RATE = ROOT / "benchmarks" / "results" / "ring_depth_probe" / "ring_depth_rate_h100_2026-11-27.csv"


@pytest.mark.parametrize("gpu", ["h100", "h200"])
def test_the_rate_run_puts_one_sms_load_rate_near_190_kb_a_microsecond(gpu):
    """The --rate runs (a lent H100 and a lent H200, both at 1980 MHz): one CTA's load-only
    ring brings in more bytes a microsecond with each slot added until it levels at 183-195
    KB/us (92-99 B a clock) whatever the tile, on either GPU: one SM's rate from memory
    (``sm_load_bytes_per_us``)."""
    with open(RATE.with_name(f"ring_depth_rate_{gpu}_2026-11-27.csv")) as f:
        rows = list(csv.DictReader(f))
    assert len(rows) == 36 and all(r["status"] == "ok" and r["clock_start"] == "1980.0" for r in rows)
    rate = {}
    for r in rows:
        tm, tn = (int(v) for v in r["tile"].split("x"))
        rate[(r["tile"], int(r["ctas"]), int(r["stages"]))] = 128 * (tm + tn) * 64 * 2 / float(r["time_us"])
    for tile in ("128x64", "128x128", "128x256", "256x128"):
        depths = sorted(b for t, c, b in rate if (t, c) == (tile, 1))
        deepest = rate[(tile, 1, depths[-1])]
        assert 180e3 < deepest < 200e3, (tile, deepest)
        assert rate[(tile, 1, 2)] < 0.6 * deepest  # two slots: the round trip binds


PITCH = ROOT / "benchmarks" / "results" / "ring_depth_probe" / "ring_depth_pitch_h200_2026-11-28.csv"


def test_the_pitch_runs_pair_each_ring_on_and_off_its_sector():
    from gemmperf.models.ws_pipelined.effects import line_factor

    probe = load_script(ROOT / "benchmarks" / "ring_depth_probe.py")
    runs = probe.tasks(pitch=True)
    assert len(runs) == 2 * 4 * 2 * 3 * 2 == distinct(runs) and not refused(runs, get_gpu("h100-sxm5-80gb"))
    assert [r["k"] for r in runs] == [8192, 8184] * (len(runs) // 2)  # each ring on, then off its sector
    for on, off in zip(runs[::2], runs[1::2]):
        assert {**on, "k": 0} == {**off, "k": 0}
        assert -(-on["k"] // 64) == -(-off["k"] // 64) == 128  # the same k-blocks
    assert line_factor(8192, 2, 1.0, 1.0) == 1.0 < line_factor(8184, 2, 1.0, 1.0)  # 16368 bytes: 16 off


def test_the_lent_h200s_pitch_run_finds_rows_off_their_sector_slow_the_ring():
    """Every ring with its rows 16 bytes off their sector (K = 8184) is slower than the
    same ring at K = 8192, with 2 CTAs as with 132: at 2 to 32 CTAs by 6-42%, where the
    model without split_row_latency predicts no change (the L2 term alone: not loaded)."""
    with open(PITCH) as f:
        rows = list(csv.DictReader(f))
    assert len(rows) == 96 and all(r["status"] == "ok" for r in rows)
    t = {(r["tile"], int(r["ctas"]), r["cluster"], int(r["stages"]), int(r["k"])): float(r["time_us"]) for r in rows}
    ratios = {key[:4]: t[(*key[:4], 8184)] / t[key] for key in t if key[4] == 8192}
    assert len(ratios) == 48 and min(ratios.values()) > 1.05
    few = [x for key, x in ratios.items() if key[1] <= 32]
    assert max(few) < 1.45 and sum(few) / len(few) > 1.15


def test_the_pitch_read_back_sets_the_ratio_beside_the_model_with_and_without_the_effect(monkeypatch):
    probe = load_script(ROOT / "benchmarks" / "ring_depth_probe.py")
    import probes

    gpus = set()

    def fake(tasks, gpu, **switches):  # an aligned ring 1.0 us, a split one 1.1 us with the effect, 1.0 without
        gpus.add(gpu)
        off = switches.get("split_row_latency") is False
        return [1.0 if t["k"] == 8192 or off else 1.1 for t in tasks]

    monkeypatch.setattr(probes, "predicted", fake)
    lines = probe.predict(PITCH, "h200-sxm-141gb", pitch=True)
    assert gpus == {"h200-sxm-141gb"}  # the constants fitted on the run's own GPU's data
    assert len(lines) == 48 + 2
    first = lines[0]
    assert first.startswith("128x64 2 CTAs 1x1 2 stages  K 8184 / 8192: measured 1.35") and \
        first.endswith("predicted 1.100 (without split_row_latency 1.000)")
    assert lines[-2].startswith("the ratio predicted with split_row_latency over 48 rings: mean error ")
    with pytest.raises(SystemExit, match="not a run of this selection"):
        probe.predict(PITCH, ctas=True)
    with pytest.raises(SystemExit, match="usage"):
        probe.main(["--predict", str(PITCH), "--pitch", "--gpu"])  # --gpu needs its slug


def test_one_selection_at_a_time_and_a_missing_run_is_one_line(capsys):
    import pytest

    probe = load_script(ROOT / "benchmarks" / "ring_depth_probe.py")
    with pytest.raises(ValueError, match="one selection at most"):
        probe.tasks(boxes=True, wide=True)
    with pytest.raises(SystemExit, match="one selection at most"):
        probe.main(["--predict", str(BOXES), "--boxes", "--wide"])
    with pytest.raises(SystemExit, match="no-such.csv: No such file"):
        probe.main(["--predict", "no-such.csv", "--boxes"])
    with pytest.raises(SystemExit, match="usage"):
        probe.main(["--predict", str(RATE), "--rate"])  # load-only runs: nothing to predict
