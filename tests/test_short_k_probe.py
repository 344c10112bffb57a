"""benchmarks/short_k_probe.py without a GPU: its runs are legal and distinct, and its runs on
a lent H200 (2026-12-03) are verified and say what benchmarks/MODEL_ACCURACY.md (step 35)
reads from them: A's and B's rows whose pitch is an odd multiple of 16 bytes (K = 20, 24,
34, 40: every other row 16 bytes into a sector) cost a one-k-block persistent ping-pong
grid with TMA stores far more than the aligned K = 64 does, and one with direct stores
much less; at 16 CTAs, where nothing else is shared, the cost stays with TMA stores and
vanishes with direct ones (the SM's one TMA engine); with TMA stores a tile takes about
its multiply and its whole epilogue, not half of it."""

import csv
from pathlib import Path

from gemmperf.hardware import get_gpu
from scripts import distinct, load_script, refused

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "benchmarks" / "results" / "short_k_probe"


def _times(name: str, count: int) -> dict[tuple[str, int, int, int], float]:
    """(config, m, n, k) -> us of a committed run whose ``count`` runs are all verified."""
    with open(RESULTS / name) as f:
        rows = list(csv.DictReader(f))
    assert len(rows) == count and all(r["status"] == "ok" for r in rows)
    assert {r["clock_start"] for r in rows} == {"1980.0"}
    return {(r["config"], int(r["m"]), int(r["n"]), int(r["k"])): float(r["time_us"]) for r in rows}


def test_the_runs_are_legal_and_distinct():
    probe = load_script(ROOT / "benchmarks" / "short_k_probe.py")
    gpu = get_gpu("h200-sxm-141gb")
    for runs, count in ((probe.tasks(), 114), (probe.tasks(grain=True), 60), (probe.tasks(ctas=True), 32),
                        (probe.tasks(rows=True), 72)):
        assert distinct(runs) == len(runs) == count and not refused(runs, gpu)
    labels = {probe.label(t) for t in probe.tasks(ctas=True)}
    assert len(labels) == 8 and all(" p 16 " in x or " p 33 " in x or " p 66 " in x or " p 132 " in x for x in labels)


def test_rows_off_their_sector_cost_tma_store_pingpong_most():
    t = _times("short_k_probe_grain_h200_2026-12-03.csv", 60)
    tma, direct = "128x128 1x1 p pingpong tma", "128x128 1x1 p pingpong direct"
    for m, n in ((797, 19040), (2048, 8448)):
        for k in (20, 24, 34, 40):  # pitch 48 or 80 bytes
            assert t[(tma, m, n, k)] > 1.6 * t[(tma, m, n, 64)]
            assert t[(direct, m, n, k)] < 1.3 * t[(direct, m, n, 64)]
        # four k-blocks at a pitch of 400 bytes against 512
        assert t[(tma, m, n, 200)] > 1.8 * t[(tma, m, n, 256)]
        # a tail on aligned rows (K = 16, 32: 32 and 64 bytes) costs far less than the pitch
        assert t[(tma, m, n, 32)] < 1.3 * t[(tma, m, n, 64)]


def test_at_sixteen_ctas_the_cost_is_the_sms_and_a_tile_takes_its_whole_epilogue():
    t = _times("short_k_probe_ctas_h200_2026-12-03.csv", 32)
    tiles = 7 * 149 / 16  # 797 x 19040 in 128x128 tiles over 16 persistent CTAs
    tma, direct = "128x128 1x1 p 16 pingpong tma", "128x128 1x1 p 16 pingpong direct"
    m, n = 797, 19040
    assert t[(tma, m, n, 34)] > 1.4 * t[(tma, m, n, 64)]
    assert abs(t[(direct, m, n, 34)] / t[(direct, m, n, 64)] - 1) < 0.02
    # aligned, one k-block: under a microsecond a tile with TMA stores, three with direct ones
    assert 0.85 < t[(tma, m, n, 64)] / tiles < 1.0 and 2.8 < t[(direct, m, n, 64)] / tiles < 3.1
    # at 132 CTAs the rows off their sector cost still more (the L2 shared as well)
    assert t[("128x128 1x1 p 132 pingpong tma", m, n, 34)] > 1.8 * t[("128x128 1x1 p 132 pingpong tma", m, n, 64)]


def test_one_sms_engine_pays_for_rows_off_their_sector_at_every_k():
    """--rows (lent H200, 2026-12-04): on 16 CTAs, where nothing else is shared, 128x128
    ping-pong tiles with TMA stores take far longer with every other row 16 bytes into its
    sector (K = 64j - 8) than aligned (64j) at 1, 4 and 16 k-blocks: a cost a k-block, not
    once a tile; rows off their line but on their sector (64j - 16) cost little at 16
    k-blocks. A 2x1 or 1x2 cluster issues fewer rows and pays less; cooperative tiles with
    direct stores, whose loop the engine does not bound, pay little."""
    t = _times("short_k_probe_rows_h200_2026-12-04.csv", 72)
    m, n = 797, 19040
    tiles = 7 * 149 / 16
    pp = "128x128 {} p 16 pingpong tma"
    for j in (1, 4, 16):
        assert t[(pp.format("1x1"), m, n, 64 * j - 8)] > 1.3 * t[(pp.format("1x1"), m, n, 64 * j)]
    # 16 k-blocks: 0.1-0.15 us a k-block more, one SM's engine time for 128 split rows
    per_kblock = (t[(pp.format("1x1"), m, n, 1016)] - t[(pp.format("1x1"), m, n, 1024)]) / tiles / 16
    assert 0.1 < per_kblock < 0.15
    assert t[(pp.format("1x1"), m, n, 1008)] < 1.1 * t[(pp.format("1x1"), m, n, 1024)]
    for cluster in ("2x1", "1x2"):
        extra = t[(pp.format(cluster), m, n, 1016)] - t[(pp.format(cluster), m, n, 1024)]
        assert extra < 0.6 * (t[(pp.format("1x1"), m, n, 1016)] - t[(pp.format("1x1"), m, n, 1024)])
    coop = "128x128 1x1 p 16 cooperative direct"
    assert t[(coop, m, n, 1016)] < 1.1 * t[(coop, m, n, 1024)]
