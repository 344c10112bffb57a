"""benchmarks/store_probe.py without a GPU: its runs are legal and distinct, and the run
it made on a lent H100 is verified and read back: with one k-block, C of 34 MB and more
leaves at about 2.5 TB/s with TMA stores (0.75 of the datasheet DRAM rate, under the
3.2 TB/s of a plain memset) and about 1.45 TB/s with the direct epilogue's stores, with
no gain while C fits in the 50 MB L2 (benchmarks/MODEL_ACCURACY.md)."""

import argparse
import csv
import sys
from pathlib import Path

from gemmperf.hardware import get_gpu
from gemmperf.kernels.family import pad_n
from scripts import distinct, load_script, refused

ROOT = Path(__file__).resolve().parent.parent
RUN = ROOT / "benchmarks" / "results" / "store_probe" / "store_probe_h100_2026-11-27.csv"
PITCH = ROOT / "benchmarks" / "results" / "store_probe" / "store_probe_pitch_h100_2026-11-27.csv"


def _rates(path):
    """(C's MB per us of each verified run, keyed by (config, m, n); the DRAM rates' rows,
    config -> TB/s) of a store_probe CSV whose 60 runs must all be verified."""
    with open(path) as f:
        rows = list(csv.DictReader(f))
    kernels = [r for r in rows if r["m"]]
    assert len(kernels) == 60 and all(r["status"] == "ok" for r in kernels)
    rate = {(r["config"], int(r["m"]), int(r["n"])): float(r["c_mb"]) / float(r["time_us"]) for r in kernels}
    return rate, {r["config"]: float(r["reason"]) for r in rows if not r["m"]}


def test_the_runs_are_legal_and_distinct():
    probe = load_script(ROOT / "benchmarks" / "store_probe.py")
    gpu = get_gpu("h100-sxm5-80gb")
    runs = probe.tasks()
    assert distinct(runs) == len(runs) == 60 and not refused(runs, gpu)
    for run in runs:
        assert run["k"] == run["tile_k"]  # one k-block: the stores are most of the kernel
    # N = 16336: C's rows (32672 bytes) start 32 bytes past a 128-byte line every other row
    assert {r["n"] * 2 % 128 for r in runs} == {0, 32}
    sweep = probe.tasks(k_sweep=True)  # one C, 1 to 32 k-blocks, both 128x256 epilogues
    assert distinct(sweep) == len(sweep) == 12 and not refused(sweep, gpu)
    assert {(r["m"], r["n"]) for r in sweep} == {(6144, 16384)} and {r["epilogue"] for r in sweep} == {"tma", "direct"}
    pitch = probe.tasks(pitch=True)  # C's rows 16 bytes off a sector: N = 16328 and the odd N = 16321 padded to it
    assert distinct(pitch) == len(pitch) == 24 and not refused(pitch, gpu)
    assert {r["n"] for r in pitch} == {16328, 16321} and {pad_n(r["n"]) * 2 % 32 for r in pitch} == {16}


def test_the_h100_run_is_verified_and_c_reaches_dram_at_the_write_rate():
    rate, dram = _rates(RUN)
    gpu = get_gpu("h100-sxm5-80gb")
    assert 0.9 < dram["dram write_TBps"] / (gpu.dram_bytes_per_s / 1e12) < 1.0
    for config in ("128x256 cooperative tma", "128x128 pingpong tma"):
        big = [rate[(config, m, n)] for m in (4096, 6144, 8192, 12288) for n in (16384, 16336)]
        assert all(2.3 < x < 2.7 for x in big), config  # about 0.75 of the datasheet rate
        assert max(big) < 0.85 * dram["dram write_TBps"]  # a GEMM's stores, not a memset's
        assert rate[(config, 1024, 16384)] < 1.1 * max(big)  # C of 34 MB: no faster for fitting in L2
    direct = [rate[("128x256 cooperative direct", m, n)] for m in (8192, 12288) for n in (16384, 16336)]
    assert all(1.35 < x < 1.6 for x in direct)


def test_the_h200_run_reaches_dram_at_a_like_share_of_its_datasheet():
    """The same probe on a lent H200 (2026-11-27): TMA stores level at 3.05-3.4 TB/s, about
    0.70 of its datasheet (the model's default assumes 0.75 on every GPU, 7-18% above), the
    direct epilogue's at the H100's 1.4 TB/s (bound by the threads' issue, not DRAM)."""
    rate, dram = _rates(RUN.with_name("store_probe_h200_2026-11-27.csv"))
    datasheet = get_gpu("h200-sxm-141gb").dram_bytes_per_s / 1e12
    assert 0.9 < dram["dram write_TBps"] / datasheet < 1.0
    for config in ("128x256 cooperative tma", "128x128 pingpong tma"):
        big = [rate[(config, m, n)] for m in (4096, 6144, 8192, 12288) for n in (16384, 16336)]
        assert all(0.63 < x / datasheet < 0.72 for x in big), config
        assert all(abs(0.75 * datasheet / x - 1) < 0.2 for x in big), config  # the default's assumption
    direct = [rate[("128x256 cooperative direct", m, n)] for m in (8192, 12288) for n in (16384, 16336)]
    assert all(1.35 < x < 1.6 for x in direct)


def test_rows_off_their_sectors_slow_the_tma_stores_not_the_direct_ones():
    """The --pitch run (lent H100): C's rows 16 bytes off a sector every other row cost the
    TMA-store epilogue a third of its write rate from C = 134 MB on (1.4-1.75 TB/s against
    2.5), the same with an odd N padded to that pitch; the direct epilogue's stores, bound
    by the threads' issue, keep their 1.3-1.5 TB/s."""
    def rates(path):
        with open(path) as f:
            return {(r["config"], int(r["m"]), int(r["n"])): float(r["c_mb"]) / float(r["time_us"])
                    for r in csv.DictReader(f) if r["m"] and r["status"] == "ok"}

    aligned, off = rates(RUN), rates(PITCH)
    assert len(off) == 24
    for config in ("128x256 cooperative tma", "128x128 pingpong tma"):
        for m in (4096, 8192, 12288):
            for n in (16328, 16321):
                assert off[(config, m, n)] < 0.75 * aligned[(config, m, 16384)], (config, m, n)
    for m in (1024, 4096, 8192, 12288):
        for n in (16328, 16321):
            direct = "128x256 cooperative direct"
            assert abs(off[(direct, m, n)] / aligned[(direct, m, 16384)] - 1) < 0.05


def test_main_measures_every_run_and_writes_the_dram_rates_last(tmp_path, monkeypatch, capsys):
    """main() on a stand-in Measurer, its memset and copy timing stood in too: every run
    once, then the two DRAM rates as rows of their own, and the rates of C per size."""
    probes = load_script(ROOT / "benchmarks" / "probes.py", "probes")
    gpu = get_gpu("h100-sxm5-80gb")
    out = tmp_path / "runs.csv"
    meas = lambda task: {"status": "ok", "time_us": task["m"] * task["n"] * 2 / 2.5e6}  # 2.5 TB/s of C
    args = argparse.Namespace(out=str(out), k_sweep=False, pitch=False, exit=False, order=False, granule=False)
    monkeypatch.setattr(probes, "start", lambda doc, argv=None, flags=None: (args, gpu, meas))
    monkeypatch.setitem(sys.modules, "probes", probes)
    probe = load_script(ROOT / "benchmarks" / "store_probe.py")
    monkeypatch.setattr(probe, "dram_rates", lambda: {"write_TBps": 3.25, "copy_TBps": 3.0})
    assert probe.main([]) == 0
    rows = list(csv.DictReader(open(out)))
    assert len(rows) == 62 and [r["config"] for r in rows[-2:]] == ["dram write_TBps", "dram copy_TBps"]
    assert all(abs(float(r["c_mb"]) / float(r["time_us"]) - 2.5) < 0.01 for r in rows[:60])
    printed = capsys.readouterr().out
    assert "write-only 3.250 TB/s, copy 3.000 TB/s" in printed and printed.count("N=16336: ") == 3


def test_the_exit_runs_pair_each_tiling_persistent_and_not_and_read_back_per_wave(tmp_path, monkeypatch, capsys):
    """--exit: every tiling with either epilogue, persistent and not, at one and four
    k-blocks, legal and distinct, every tile inside C; main prints the time per wave of
    both grids from the runs it made (a stand-in Measurer: a wave takes 2 us without a
    persistent grid, 1 us with)."""
    probe = load_script(ROOT / "benchmarks" / "store_probe.py")
    gpu = get_gpu("h100-sxm5-80gb")
    runs = probe.tasks(exit_=True)
    assert distinct(runs) == len(runs) == 4 * 2 * 2 * 2 * 5 and not refused(runs, gpu)
    assert all(r["m"] % r["tile_m"] == 0 and r["n"] % r["tile_n"] == 0 for r in runs)
    twins = {(r["m"], r["k"], r["tile_m"], r["tile_n"], r["schedule"], r["epilogue"], r["persistent"]) for r in runs}
    assert all((*key[:-1], not key[-1]) in twins for key in twins)
    waves = lambda t: -(-(t["m"] // t["tile_m"]) * (t["n"] // t["tile_n"]) // gpu.sms)  # noqa: E731
    meas = lambda task: {"status": "ok", "time_us": waves(task) * (1.0 if task["persistent"] else 2.0)}  # noqa: E731
    _main_on(monkeypatch, gpu, meas, exit=True)
    lines = capsys.readouterr().out.split("us per wave")[1].splitlines()[1:]
    assert len(lines) == 4 * 2 * 2 and all(line.count("/1.00") == 5 and line.count(":2.00/") == 5 for line in lines)


def test_the_h200_exit_run_reads_back_a_non_persistent_wave_dearer_with_tma_stores():
    """The lent H200's --exit run: all 160 runs verified; with C of 34 MB or more every
    non-persistent grid takes longer a wave than its persistent twin, and a cooperative
    tiling's gap is larger with TMA stores than with direct ones (the exit waits for the
    staging buffers to be read: step 24's store_exit)."""
    probe = load_script(ROOT / "benchmarks" / "store_probe.py")
    with open(RUN.with_name("store_probe_exit_h200_2026-11-28.csv")) as f:
        rows = list(csv.DictReader(f))
    assert len(rows) == 160 and all(r["status"] == "ok" for r in rows)
    t = {(r["config"], int(r["m"]), int(r["k"])): float(r["time_us"]) for r in rows}
    for tile in ("128x256", "128x128", "128x64"):
        for k in probe.EXIT_KS:
            for m in (1024, 2048, 4096, 8192):
                gap = {e: t[f"{tile} cooperative {e} np", m, k] - t[f"{tile} cooperative {e}", m, k]
                       for e in ("tma", "direct")}
                assert 0 < gap["direct"] < gap["tma"], (tile, k, m, gap)


def test_the_order_runs_time_each_raster_with_and_without_stream_k_on_each_edge(monkeypatch, capsys):
    """--order: three rasters, data-parallel and stream-K, on the aligned C and each of its
    edges (K, M, N) and all three, legal and distinct; main prints one line a raster and
    schedule, each shape's time and TB/s of C from the runs it made (a stand-in Measurer
    writing C at 2 TB/s, twice as long for stream-K)."""
    probe = load_script(ROOT / "benchmarks" / "store_probe.py")
    gpu = get_gpu("h200-sxm-141gb")
    runs = probe.tasks(order=True)
    assert distinct(runs) == len(runs) == 3 * 2 * len(probe.ORDER_SHAPES) and not refused(runs, gpu)
    assert {(r["raster"], r["stream_k"]) for r in runs} == {(r, s) for r in probe.ORDER_RASTERS for s in (False, True)}
    aligned, *edges, fresh = probe.ORDER_SHAPES
    assert all(sum(a != b for a, b in zip(aligned, e)) == 1 for e in edges)
    assert all(a != b for a, b in zip(aligned, fresh))
    meas = lambda t: {"status": "ok", "time_us": t["m"] * t["n"] * 2 / 2e6 * (2 if t["stream_k"] else 1)}  # noqa: E731
    _main_on(monkeypatch, gpu, meas, order=True)
    lines = capsys.readouterr().out.split("us (TB/s of C written) by shape")[1].splitlines()[1:]
    assert len(lines) == 6 and all(line.count("(2.00)") == 5 for line in lines if "streamk" not in line)
    assert sum("streamk" in line and line.count("(1.00)") == 5 for line in lines) == 3


def test_the_granule_runs_time_the_order_kernels_on_pitches_off_128_64_and_32_bytes(monkeypatch, capsys):
    """--granule: the six --order kernels on C of 6144 x N x 64, N's row pitch a multiple
    of 128 bytes (twice: N a multiple of the tile and not), then every other row 64, 32 and
    16 bytes off its 128-byte line; legal, distinct; main prints one line a kernel with a
    time for each N."""
    probe = load_script(ROOT / "benchmarks" / "store_probe.py")
    gpu = get_gpu("h200-sxm-141gb")
    runs = probe.tasks(granule=True)
    assert distinct(runs) == len(runs) == 6 * len(probe.GRANULE_SHAPES) and not refused(runs, gpu)
    assert [n * 2 % 128 for _, n, _ in probe.GRANULE_SHAPES] == [0, 0, 64, 32, 16]
    assert [n % 256 for _, n, _ in probe.GRANULE_SHAPES][:2] == [0, 64]
    meas = lambda t: {"status": "ok", "time_us": t["m"] * t["n"] * 2 / 2e6}  # noqa: E731
    _main_on(monkeypatch, gpu, meas, granule=True)
    lines = capsys.readouterr().out.split("us (TB/s of C written) by shape")[1].splitlines()[1:]
    assert len(lines) == 6 and all(line.count("(2.00)") == len(probe.GRANULE_SHAPES) for line in lines)


def _main_on(monkeypatch, gpu, meas, **mode):
    """store_probe's main() in one ``mode`` (exit=True, order=True) on a stand-in Measurer
    ``meas``, no CSV written."""
    probes = load_script(ROOT / "benchmarks" / "probes.py", "probes")
    args = argparse.Namespace(out=None, **{"k_sweep": False, "pitch": False, "exit": False, "order": False,
                                                   "granule": False, **mode})
    monkeypatch.setattr(probes, "start", lambda doc, argv=None, flags=None: (args, gpu, meas))
    monkeypatch.setitem(sys.modules, "probes", probes)
    probe = load_script(ROOT / "benchmarks" / "store_probe.py")
    assert probe.main([]) == 0
