"""benchmarks/stream_k_picks_probe.py without a GPU: its runs are legal and distinct, and its
run on a lent H200 (2026-12-04) is verified and says what benchmarks/MODEL_ACCURACY.md
(step 36) reads from it: the stream-K kernel never beat its data-parallel twin (the same
tiles, persistent) by more than 3% under any raster, where the model had it up to 0.71x,
and on the long-K shapes the picks ran far slower than their twins under the pick's raster."""

import csv
from pathlib import Path

from gemmperf.hardware import get_gpu
from scripts import distinct, load_script, refused

ROOT = Path(__file__).resolve().parent.parent
RUN = ROOT / "benchmarks" / "results" / "stream_k_picks_probe" / "stream_k_picks_probe_h200_2026-12-04.csv"


def _probe():
    return load_script(ROOT / "benchmarks" / "stream_k_picks_probe.py")


def test_the_runs_are_legal_and_distinct():
    runs = _probe().tasks()
    assert distinct(runs) == len(runs) == 70 and not refused(runs, get_gpu("h200-sxm-141gb"))


def test_stream_k_never_beats_its_data_parallel_twin_by_much():
    with open(RUN) as f:
        rows = list(csv.DictReader(f))
    assert len(rows) == 70 and all(r["status"] == "ok" for r in rows)
    # the SM clock at every start: 1980 MHz, one run (2936 x 7537 x 2944 on 66 workers) 1965
    assert sorted(float(r["clock_start"]) for r in rows)[:2] == [1965.0, 1980.0]
    t = {(r["shape"], r["raster"], r["kind"]): float(r["time_us"]) for r in rows}
    ratios = {(s, r): t[s, r, "stream-k"] / t[s, r, "data-parallel"] for s, r, kind in t if kind == "data-parallel"}
    assert len(ratios) == 30 and min(ratios.values()) > 0.96
    # the long-K picks under their own raster: 1.18-1.5x their twins
    for shape, raster in (("1152x8640x14591", "row"), ("384x6896x19264", "row"), ("2936x7537x2944", "column")):
        assert ratios[shape, raster] > 1.15
    # the probe's summary: a header and one line a shape
    probe = _probe()
    assert len(probe.summary(rows)) == 1 + len(probe.PICKS)
