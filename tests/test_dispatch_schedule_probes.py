"""benchmarks/dispatch_probe.py and schedule_probe.py without a GPU: every run they time
is legal on both GPUs and its grid is the one named; the dispatch probe's line is a least-
squares fit; the committed H200 runs read back with what the notes say of them."""

import argparse
import csv
import sys
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


def test_the_schedule_probe_grid_pairs_each_run_and_prints_every_pair(tmp_path, monkeypatch, capsys):
    """--grid: both schedules of every (tile, epilogue, persistent, M x N, K), four stages,
    no cluster, legal on both GPUs; main() on a stand-in Measurer writes one row per run
    and prints one line per pair (its cooperative and ping-pong times)."""
    probes = load_script(ROOT / "benchmarks" / "probes.py", "probes")
    monkeypatch.setitem(sys.modules, "probes", probes)
    probe = load_script(ROOT / "benchmarks" / "schedule_probe.py")
    runs = probe.grid_tasks()
    assert len(runs) == (len(probe.GRID_TILES) * len(probe.EPILOGUES) * 2 * len(probe.GRID_SHAPES)
                         * len(probe.GRID_KS) * 2)
    for slug in ("h100-sxm5-80gb", "h200-sxm-141gb"):
        assert not refused(runs, get_gpu(slug))
    for coop, pp in zip(runs[::2], runs[1::2]):
        assert (coop["schedule"], pp["schedule"]) == ("cooperative", "pingpong")
        assert {k: v for k, v in coop.items() if k != "schedule"} == {k: v for k, v in pp.items() if k != "schedule"}
        cfg = config_of(coop)
        assert (cfg.stages, cfg.cluster_m, cfg.cluster_n) == (4, 1, 1)
        assert coop["ctas"] == (coop["m"] // cfg.tile_m) * (coop["n"] // cfg.tile_n)
    seen = []

    def meas(task):
        seen.append(task)
        return {"status": "ok", "time_us": 10.0 + (task["schedule"] == "pingpong"), "sm_clock_start_mhz": 1980.0,
                "sm_clock_end_mhz": 1980.0}

    out = tmp_path / "grid.csv"
    monkeypatch.setattr(probes, "start", lambda doc, argv=None, flags=None: (
        argparse.Namespace(out=str(out), modes=False, grid=True), get_gpu("h200-sxm-141gb"), meas))
    assert probe.main(["--grid"]) == 0
    rows = list(csv.DictReader(open(out)))
    assert len(rows) == len(seen) == len(runs)
    pairs = [line for line in capsys.readouterr().out.splitlines() if line.endswith(" +1.00 (1.100)")]
    assert len(pairs) == len(runs) // 2


def test_the_h200_grid_runs_read_back_as_the_notes_say():
    """MODEL_ACCURACY, the thirty-fifth session: all 144 runs verified; without persistence
    and with TMA stores both schedules take the same time within 3%, where the direct
    epilogue makes every ping-pong 64-row tile slower than its cooperative twin."""
    rows = _rows("schedule_probe/schedule_grid_h200_2026-12-02.csv")
    assert len(rows) == 144 and all(r["status"] == "ok" for r in rows)
    t = {(r["tile"], r["epilogue"], r["persistent"], r["m"], r["k"], r["schedule"]): float(r["time_us"])
         for r in rows}
    for (tile, epilogue, persistent, m, k, schedule), coop in t.items():
        if schedule != "cooperative" or persistent != "False":
            continue
        pp = t[(tile, epilogue, persistent, m, k, "pingpong")]
        if epilogue == "tma":
            assert abs(pp / coop - 1.0) < 0.03
        elif tile.startswith("64x"):
            assert pp > coop
