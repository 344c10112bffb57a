"""benchmarks/stream_k_probe.py without a GPU: its runs are legal and distinct, each row's
shipped configuration is among them, and the summary reads a shape's four times."""

from pathlib import Path

from gemmperf.hardware import get_gpu
from scripts import distinct, load_script, refused

ROOT = Path(__file__).resolve().parent.parent


def test_the_runs_are_legal_distinct_and_hold_the_shipped_configurations():
    probe = load_script(ROOT / "benchmarks" / "stream_k_probe.py")
    runs = probe.tasks()
    assert distinct(runs) == len(runs) and not refused(runs, get_gpu("h100-sxm5-80gb"))
    # 14 rows x 4 variants, less the two rows whose 7-stage ring leaves no room for TMA staging
    assert len(runs) == 14 * 4 - 2 * 2
    for m, n, k, tile_m, tile_n, stages, cm, cn, raster, epilogue in probe.ROWS:
        same = [r for r in runs if (r["m"], r["n"], r["k"], r["tile_m"], r["tile_n"], r["stages"]) ==
                (m, n, k, tile_m, tile_n, stages)]
        assert same[0]["stream_k"] and same[0]["epilogue"] == epilogue  # the shipped one first
        assert {(r["stream_k"], r["epilogue"]) for r in same} >= {(True, epilogue), (False, epilogue)}


def test_summary_reads_the_four_times():
    probe = load_script(ROOT / "benchmarks" / "stream_k_probe.py")
    rows = [{**probe.label(t), "status": "ok", "time_us": 10.0 if t["stream_k"] else 8.0}
            for t in probe.tasks()[:4]]
    line = probe.summary(rows)[1].split()
    assert line[-2:] == ["1.250", "1.250"]


RUN = ROOT / "benchmarks" / "results" / "stream_k_probe" / "stream_k_probe_h100_2026-11-27.csv"


def _times() -> dict:
    import csv

    with open(RUN) as f:
        rows = list(csv.DictReader(f))
    assert rows and all(r["status"] == "ok" for r in rows)  # every run verified against float64
    return {(r["shape"], r["schedule"], r["epilogue"]): float(r["time_us"]) for r in rows}


def test_the_lent_h100s_run_says_stream_k_not_the_epilogue_is_slow():
    """Where both epilogues ran, stream-K's time over data-parallel's is alike for the two
    (within 25%), and on every shape but the one whose single tile row stream-K splits
    (2 x 192 x 5376) stream-K is the slower by 1.1-3x with either epilogue."""
    times = _times()
    for shape in dict.fromkeys(s for s, _, _ in times):
        ratio = {e: times[(shape, "stream-k", e)] / times[(shape, "data-parallel", e)]
                 for e in ("direct", "tma") if (shape, "stream-k", e) in times}
        if len(ratio) == 2:
            assert 0.8 < ratio["direct"] / ratio["tma"] < 1.25, (shape, ratio)
        for r in ratio.values():
            assert (r < 0.5) if shape == "2x192x5376" else (1.1 < r < 3.0), (shape, ratio)


def test_predict_sets_the_fitted_model_beside_the_run():
    probe = load_script(ROOT / "benchmarks" / "stream_k_probe.py")
    lines = probe.predict(RUN)
    pairs = [line.split() for line in lines[1:-1]]
    # a line a shape and epilogue where both schedules ran: 14 shapes x 2 epilogues, less
    # the two shapes without TMA staging room
    assert len(pairs) == 26 and all(len(p) == 4 for p in pairs)
    assert all(0.1 < float(p[2]) < 5.0 and 0.1 < float(p[3]) < 5.0 for p in pairs)
    means = dict(part.rsplit(" ", 2)[0:2] for part in lines[-1].split(": ", 1)[1].split(", "))
    assert set(means) == {"stream-k direct", "stream-k tma", "data-parallel direct", "data-parallel tma"}
    assert all(0.3 < float(v) < 2.0 for v in means.values())
