"""benchmarks/footprint_probe.py without a GPU: its runs are legal (but the twelve that do
not fit) and distinct, and the runs it made on a lent H100 and H200 (2026-11-27) are
verified and read back: a k-block of 64x256 tiles in row raster slows once the wave's
heavy panels sit 8 or more tile columns apart, the H100 more than the H200, and the
column raster of a launched 256x64 2x1 grid runs at half the row raster's rate on the
H100 (benchmarks/MODEL_ACCURACY.md)."""

import csv
from pathlib import Path

import pytest

from gemmperf.hardware import get_gpu
from scripts import distinct, load_script, refused

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "benchmarks" / "results" / "footprint_probe"


def _kblock_us(path) -> dict:
    """(probe, config, shape, raster, mode) -> us a k-block of one CTA, of the verified runs."""
    with open(path) as f:
        return {(r["probe"], r["config"], r["shape"], r["raster"], r["mode"]): float(r["time_us"]) / int(r["kblock_runs"])
                for r in csv.DictReader(f) if r["status"] == "ok"}


def test_the_runs_are_legal_but_the_tma_staging_that_does_not_fit_and_distinct():
    probe = load_script(ROOT / "benchmarks" / "footprint_probe.py")
    gpu = get_gpu("h100-sxm5-80gb")
    runs = probe.tasks()
    assert distinct(runs) == len(runs) == 3 * 9 * 3 * 2 + 3 * 2 * 2 * 3
    bad = refused(runs, gpu)
    assert len(bad) == 12 and {(r["tile_m"], r["tile_n"], r["stages"], r["epilogue"]) for r, _ in bad} == {(256, 64, 5, "tma")}
    sweep = probe.sweep_tasks()
    assert distinct(sweep) == len(sweep) == 2 * (18 + 21) and not refused(sweep, gpu)
    # the heavy panel's readers d tile columns apart: N = d * tile_n on M = 4096, row raster
    assert {r["raster"] for r in sweep} == {"row"} and {r["m"] for r in sweep} == {4096}


@pytest.mark.parametrize("gpu", ["h100", "h200"])
def test_every_run_that_fits_is_verified(gpu):
    for name, runs in ((f"footprint_probe_{gpu}_2026-11-27.csv", 198), (f"footprint_sweep_{gpu}_2026-11-27.csv", 78)):
        with open(RESULTS / name) as f:
            rows = list(csv.DictReader(f))
        assert len(rows) == runs and {r["status"] for r in rows} <= {"ok", "illegal"}, name
        assert sum(r["status"] == "illegal" for r in rows) == (12 if runs == 198 else 0), name


@pytest.mark.parametrize("gpu, past", [("h100", (0.54, 0.72)), ("h200", (0.50, 0.63))])
def test_the_k_block_slows_past_seven_tile_columns_of_64x256(gpu, past):
    t = _kblock_us(RESULTS / f"footprint_sweep_{gpu}_2026-11-27.csv")
    config = "64x256 1x1 s5 cooperative direct persistent"
    at = {d: t["sweep", config, f"4096x{d * 256}x4096", "row", "full"] for d in range(3, 21)}
    assert all(0.37 < at[d] < 0.42 for d in range(3, 8)), at
    assert all(past[0] < at[d] < past[1] for d in range(9, 21)), at
    # 128x128 ping-pong turns later (its panels are half as wide): flat to 13 columns
    pp = "128x128 1x1 s6 pingpong tma persistent"
    at = {d: t["sweep", pp, f"4096x{d * 128}x4096", "row", "full"] for d in range(6, 27)}
    assert max(at[d] for d in range(6, 14)) < 0.37 < min(at[d] for d in range(17, 27)) * (1.08 if gpu == "h200" else 1.0)


def test_the_launched_column_raster_of_256x64_clusters_pays_on_the_h100_more_than_the_h200():
    config = "256x64 2x1 s5 cooperative direct launch"
    ratio = {}
    for gpu in ("h100", "h200"):
        t = _kblock_us(RESULTS / f"footprint_probe_{gpu}_2026-11-27.csv")
        row, column = (t["cluster", config, "8192x8192x8192", raster, "full"] for raster in ("row", "column"))
        ratio[gpu] = column / row
    assert 2.0 < ratio["h100"] < 2.5 and 1.3 < ratio["h200"] < 1.6


def test_predict_sets_the_fitted_model_beside_the_sweep():
    probe = load_script(ROOT / "benchmarks" / "footprint_probe.py")
    lines = probe.predict(RESULTS / "footprint_sweep_h100_2026-11-27.csv", sweep=True)
    full = [line for line in lines if " full      row" in line]
    assert len(full) == 39 and all(line.count("x)") == 1 for line in full)
    assert lines[-1].startswith("predicted / measured over 39 full runs: geomean ")
