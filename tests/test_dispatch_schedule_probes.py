"""benchmarks/dispatch_probe.py and schedule_probe.py without a GPU: every run they time
is legal on both GPUs and its grid is the one named; the dispatch probe's line is a least-
squares fit; the committed H200 runs read back with what the notes say of them."""

import csv
from pathlib import Path

import pytest

from gemmperf.hardware import get_gpu
from scripts import config_of, load_script, refused

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "benchmarks" / "results"


@pytest.mark.parametrize("slug", ["h100-sxm5-80gb", "h200-sxm-141gb"])
def test_the_dispatch_probe_runs_are_legal_grids_of_the_named_ctas(slug):
    probe = load_script(ROOT / "benchmarks" / "dispatch_probe.py")
    gpu = get_gpu(slug)
    assert probe.grid_sizes(132) == [1, 2, 4, 8, 16, 32, 64, 128, 132]
    runs = probe.tasks(gpu)
    assert not refused(runs, gpu)
    for run in runs:
        cfg = config_of(run)
        assert (run["m"] // cfg.tile_m) * (run["n"] // cfg.tile_n) == run["ctas"]
        assert run["k"] == cfg.tile_k and (run["m"] // cfg.tile_m) % cfg.cluster_m == 0


def test_the_dispatch_line_is_least_squares():
    probe = load_script(ROOT / "benchmarks" / "dispatch_probe.py")
    assert probe.slope([(1, 2.0), (3, 6.0), (5, 10.0)]) == pytest.approx((0.0, 2.0))
    b0, b1 = probe.slope([(0, 1.0), (1, 1.0), (2, 4.0)])  # the line through three points off it
    assert b1 == pytest.approx(1.5) and b0 == pytest.approx(0.5)


@pytest.mark.parametrize("slug", ["h100-sxm5-80gb", "h200-sxm-141gb"])
def test_the_schedule_probe_pairs_each_run_with_its_other_schedule(slug):
    probe = load_script(ROOT / "benchmarks" / "schedule_probe.py")
    gpu = get_gpu(slug)
    runs = probe.tasks(gpu)
    assert len(runs) == len(probe.TILES) * len(probe.EPILOGUES) * len(probe.KS) * 2 * 2
    assert {r["mode"] for r in runs} == {"full"}
    with_modes = probe.tasks(gpu, modes=True)
    assert len(with_modes) == len(runs) + len(probe.TILES) * len(probe.EPILOGUES) * len(probe.MODES) * 2 * 2
    assert {r["k"] for r in with_modes if r["mode"] != "full"} == {64}
    runs = with_modes
    assert not refused(runs, gpu)
    for coop, pp in zip(runs[::2], runs[1::2]):
        assert (coop["schedule"], pp["schedule"]) == ("cooperative", "pingpong")
        assert {k: v for k, v in coop.items() if k != "schedule"} == {k: v for k, v in pp.items() if k != "schedule"}
        assert coop["n"] // coop["tile_n"] == coop["ctas"] and coop["m"] == coop["tile_m"]


def _rows(name):
    with (RESULTS / name).open() as fh:
        return [r for r in csv.DictReader(fh)]


def test_the_h200_runs_read_back_as_the_notes_say():
    """MODEL_ACCURACY step 26: every run verified; an empty kernel's slope under 1.5 ns a
    CTA; with the direct epilogue a ping-pong 128x128 tile over 2 us slower than its
    cooperative twin, with TMA stores the two within 0.2 us."""
    rows = _rows("dispatch_probe/dispatch_h200_2026-11-29.csv")
    assert len(rows) == 68 and all(r["status"] == "ok" for r in rows)
    probe = load_script(ROOT / "benchmarks" / "dispatch_probe.py")
    empty = [(int(r["ctas"]), float(r["time_us"])) for r in rows
             if (r["mode"], r["persistent"], r["cluster"]) == ("empty", "False", "1x1")]
    assert 0.0 < probe.slope(empty)[1] < 1.5e-3
    rows = _rows("schedule_probe/schedule_h200_2026-11-29.csv")
    assert len(rows) == 64 and all(r["status"] == "ok" for r in rows)
    t = {(r["tile"], r["epilogue"], r["k"], r["ctas"], r["schedule"]): float(r["time_us"]) for r in rows}
    for k in ("64", "1024"):
        for ctas in ("1", "132"):
            assert t[("128x128", "direct", k, ctas, "pingpong")] - t[("128x128", "direct", k, ctas, "cooperative")] > 2.0
            for tile in ("64x128", "64x256", "128x64", "128x128"):
                assert abs(t[(tile, "tma", k, ctas, "pingpong")] - t[(tile, "tma", k, ctas, "cooperative")]) < 0.2


def test_the_h200_mode_runs_read_back_as_the_notes_say():
    """MODEL_ACCURACY, the thirty-first session: every run ok; the empty kernel takes the
    same time with 256 threads (a cooperative 64-row tile) as with 384, within 0.02 us;
    the direct epilogue alone costs a ping-pong 64-row tile 0.3-0.8 us more than its
    cooperative twin (one consumer warpgroup holds the same rows in both), with TMA
    stores within 0.1 us."""
    rows = _rows("schedule_probe/schedule_modes_h200_2026-11-29.csv")
    assert len(rows) == 128 and all(r["status"] == "ok" for r in rows)
    t = {(r["tile"], r["epilogue"], r["mode"], r["k"], r["ctas"], r["schedule"]): float(r["time_us"]) for r in rows}
    for tile in ("64x128", "64x256", "128x64", "128x128"):
        for ctas in ("1", "132"):
            key = (tile, "direct", "empty", "64", ctas)
            assert abs(t[(*key, "pingpong")] - t[(*key, "cooperative")]) < 0.02
            key = (tile, "tma", "epilogue-only", "64", ctas)
            assert abs(t[(*key, "pingpong")] - t[(*key, "cooperative")]) < 0.1
            if tile.startswith("64x"):
                key = (tile, "direct", "epilogue-only", "64", ctas)
                assert 0.3 < t[(*key, "pingpong")] - t[(*key, "cooperative")] < 0.8
