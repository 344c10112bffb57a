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


FIXUP = ROOT / "benchmarks" / "results" / "stream_k_probe" / "stream_k_fixup_h100_2026-11-27.csv"


def test_the_fixup_runs_are_legal_and_distinct():
    probe = load_script(ROOT / "benchmarks" / "stream_k_probe.py")
    runs = probe.fixup_tasks()
    # 2 tiles x 2 M x (4 parts x 3 kinds + 2 parts x 2 kinds)
    assert distinct(runs) == len(runs) == 64 and not refused(runs, get_gpu("h100-sxm5-80gb"))
    assert all(r["n"] == r["tile_n"] and r["m"] <= r["tile_m"] for r in runs)  # one tile


def test_the_lent_h100s_fixup_run_says_stream_k_pays_more_a_partial():
    """From 4 to 16 parts, split-K's time grows 0.2-0.45 us a partial and stream-K's
    0.45-0.75, on both tiles and both M; stream-K keeps its rate to 64 parts."""
    import csv

    with open(FIXUP) as f:
        rows = list(csv.DictReader(f))
    assert len(rows) == 64 and all(r["status"] == "ok" for r in rows)
    t = {(r["tile"], int(r["m"]), int(r["parts"]), r["kind"]): float(r["time_us"]) for r in rows}
    for tile, m in {(k[0], k[1]) for k in t}:
        def slope(kind, lo, hi):
            return (t[(tile, m, hi, kind)] - t[(tile, m, lo, kind)]) / (hi - lo)

        assert 0.2 < slope("split-k", 4, 16) < 0.45, (tile, m)
        assert 0.45 < slope("stream-k", 4, 16) < 0.75, (tile, m)
        assert 0.45 < slope("stream-k", 16, 64) < 0.75, (tile, m)
