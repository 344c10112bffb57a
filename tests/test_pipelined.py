"""ws-pipelined: each effect switch moves predictions the expected way; L2 panels; fit recovery."""

from __future__ import annotations

import dataclasses
import itertools
import math
from types import SimpleNamespace

import numpy as np
import polars as pl
import pytest

from gemmperf.errors import UserError
from gemmperf.fit import accuracy as A
from gemmperf.fit import constants as C
from gemmperf.hardware import CATALOG
from gemmperf.kernels.families import get_family
from gemmperf.models import MODELS, predict
from gemmperf.models import ws_pipelined as W
from gemmperf.models.ws_pipelined import effects as E
from gemmperf.models.ws_pipelined import epilogue as EP
from gemmperf.models.ws_pipelined import kshare as K
from gemmperf.models.ws_pipelined.inputs import SCHEDULE_CODES, accumulators, consumer_warpgroups
from gemmperf.params import ParamSet, default_params
from gemmperf.problem import KernelConfig

GPU = CATALOG["h100-sxm5-80gb"]
PS = ParamSet(GPU)


def rows(**cols):
    return pl.DataFrame(cols)


def boost(out: pl.DataFrame) -> np.ndarray:
    """Predicted time at the boost clock: the sum of the terms less the power cap's clock drop."""
    return (out["predicted_us"] - out["power_us"]).to_numpy()


def pred(df, **flags):
    return W.predict(df, PS, **flags).get_column("predicted_us").to_numpy()


def per_round_trip(c, stages):
    """What one us of a slot's round trip adds to the latency term of a ring of ``stages``
    slots: 1 / (B - h) + 1 / B_sat (slot_release, ring_saturation)."""
    return 1.0 / (stages - c.held_slots) + 1.0 / c.ring_saturation_slots


def test_registered_and_columns():
    assert MODELS["ws-pipelined"] is W
    out = predict(rows(m=[4096], n=[4096], k=[4096]), PS, "ws-pipelined")
    for c in ("predicted_us", "limiter", "fill_us", "mainloop_us", "epilogue_us", "l2_hit_rate_est", "padding_waste"):
        assert c in out.columns
    parts = out.select(pl.sum_horizontal("init_us", "fill_us", "mainloop_us", "epilogue_us", "overhead_us",
                                         "power_us")).item()
    assert parts == pytest.approx(out["predicted_us"][0])
    with pytest.raises(UserError, match="unknown effect"):
        W.predict(rows(m=[64], n=[64], k=[64]), PS, caching=False)


def test_l2_reuse_off_raises_memory_bound_time():
    df = rows(m=[8192], n=[8192], k=[8192], tile_m=[128], tile_n=[128], persistent=[True])
    on, off = pred(df), pred(df, l2_reuse=False)
    assert off[0] > on[0]
    # with the global knob at the reuse estimate's value the L2 term alone would not bind
    h = W.predict(df, PS)["l2_hit_rate_est"][0]
    assert 0.5 < h < 1.0


def test_sharing_off_uses_per_cta_share():
    # a partial wave: with sharing on, 8 CTAs get far more bandwidth each than SMs/DRAM
    df = rows(m=[1024], n=[128], k=[16384], tile_m=[128], tile_n=[128])
    assert pred(df, bandwidth_sharing=False)[0] > pred(df)[0]


def test_smem_limit_only_slows():
    df = rows(m=[8192] * 3, n=[8192] * 3, k=[8192] * 3, tile_m=[64, 128, 128], tile_n=[64, 128, 256])
    on, off = pred(df), pred(df, smem_limit=False)
    assert (on >= off - 1e-12).all() and on[0] > off[0]


def test_pipelining_off_serializes_fill_and_latency():
    df = rows(m=[128 * 132], n=[128], k=[64 * 64], stages=[2])
    assert pred(df, pipelining=False)[0] != pred(df)[0]
    # deeper ring never slower
    deep = rows(m=[128 * 132] * 4, n=[128] * 4, k=[64 * 64] * 4, stages=[2, 3, 4, 6])
    t = pred(deep)
    assert (np.diff(t) <= 1e-12).all()


def test_padding_waste_and_a_16_byte_epilogue_at_every_n():
    df = rows(m=[4097, 4096], n=[4096, 4100], k=[4096, 4096])
    out = W.predict(df, PS)
    assert out["padding_waste"][0] > 0 and (pred(df, padding=False) < pred(df)).all()
    # C's rows are padded to 16 bytes, so N % 8 != 0 stores no slower than N rounded up to 8
    epi = W.predict(rows(m=[4096, 4096], n=[4100, 4104], k=[4096, 4096]), PS)["epilogue_us"]
    assert epi[0] == epi[1]


def test_wave_panels_by_raster():
    t0, a = np.array([0, 0, 0]), np.array([16, 16, 16])
    tm, tn = np.array([32, 32, 32]), np.array([32, 32, 32])
    r_m, r_n = W.wave_panels(t0, a, tm, tn, np.array([0, 1, 2]), 8)
    assert list(r_m) == [1, 16, 8] and list(r_n) == [16, 1, 2]


def test_fit_recovers_constants_from_model_data():
    truth_vals = {"dram_eff_bytes_per_us": 2.4e6, "t_epilogue_us": 1.2,
                  "math_flops_per_us": PS.get("ws-hopper", "bf16").math_flops_per_us * 0.85}
    truth = C.with_values(PS, "ws-hopper", "bf16", truth_vals)
    shapes = list(itertools.product([16, 512, 2048, 8192], [1024, 4096, 16384], [256, 4096, 16384]))
    cfgs = pl.DataFrame([{"tile_m": tm, "tile_n": tn, "stages": 4, "persistent": p}
                         for tm, tn, p in itertools.product([64, 128], [128, 256], [False, True])])
    meas = A.synthetic_measurements(truth, shapes, cfgs, noise=0.02, seed=3)
    _, rep = C.fit_constants(meas, PS, names=tuple(truth_vals))
    got = rep["ws-hopper/bf16"]
    for name, value in truth_vals.items():
        assert got["values"][name] == pytest.approx(value, rel=0.05), name
        assert got["uncertainty"][name] > 0
    assert got["kernel_fit_rmse_log"] < 0.03


def test_the_jacobians_batch_equals_one_evaluation_per_theta(monkeypatch):
    """fit_constants evaluates the finite-difference Jacobian's thetas in one model call,
    the rows repeated once per theta (constants._residuals): each theta's residuals must
    equal its own evaluation exactly, on shipped rows of every kind (split-K, stream-K,
    clusters, ping-pong, overhanging tiles), also when the batch is cut into several calls."""
    from pathlib import Path

    from gemmperf.tables import read_measurements

    path = Path(__file__).resolve().parent.parent / "results" / "h100-sxm5-80gb" / "shipped" / "measurements"
    meas = read_measurements(path / "random.csv").filter(pl.col("family") == "ws-hopper").head(400)
    assert meas.filter(pl.col("stream_k") > 0).height and meas.filter(pl.col("split_k") > 1).height
    _, arr = W.prepare(meas, PS)
    base = C._current(PS, "ws-hopper", "bf16")
    names = [n for n in C.FIT_NAMES if base.get(n, 0.0) > 0 and (n not in W.CONSTANTS or W.rows_of(n, arr))]
    y = np.log(meas.get_column("time_us").to_numpy())
    one, batch = C._residuals(arr, W.grid_of(arr), y, base, names, 0.02, None)
    thetas = np.random.default_rng(0).uniform(-0.5, 0.5, (7, len(names)))
    expected = [one(t) for t in thetas]
    for rows_per_call in (C.BATCH_ROWS, 3 * meas.height):  # all at once, then three thetas a call
        monkeypatch.setattr(C, "BATCH_ROWS", rows_per_call)
        got = batch(None, iter(thetas))
        assert len(got) == len(thetas)
        for e, g in zip(expected, got):
            np.testing.assert_array_equal(g, e)


def test_row_alignment_slows_misaligned_pitch_only():
    # K = 3000: pitch 6000 B, 1 row in 8 on a 128-byte line; K = 3072 and K = 2047 (pitch
    # padded to 2048 elements) are aligned
    assert list(W.line_factor(np.array([3000, 3072, 2047, 2000]), 2)) == [1.875, 1.0, 1.0, 1.75]
    df = rows(m=[8192] * 3, n=[8192] * 3, k=[3000, 3072, 2047], tile_m=[128] * 3, tile_n=[64] * 3)
    on, off = pred(df), pred(df, row_alignment=False)
    assert on[0] > off[0] * 1.2 and on[1] == off[1] and on[2] == off[2]


def test_row_alignment_costs_the_shared_l2_not_one_sms_tma_path():
    # split rows are extra L2 requests: a full wave of 132 CTAs pays for them in its L2
    # term, a lone CTA (bound by its own TMA path, not the L2) does not (1000^3 with 64
    # tiles was 1.4x too slow when they capped one SM's transfer); since step 23 its
    # ring's round trip waits for its SM to issue them (split_row_latency), no more
    costly = C.with_values(PS, "ws-hopper", "bf16", {"line_split_cost": 3.0, "sector_split_cost": 3.0})
    lone = rows(m=[128], n=[128], k=[3000], tile_m=[128], tile_n=[128])
    wave = rows(m=[128 * 12], n=[128 * 11], k=[3000], tile_m=[128], tile_n=[128])
    t = lambda df, ps, **on: W.predict(df, ps, **on).get_column("predicted_us")[0]  # noqa: E731
    assert t(lone, costly, split_row_latency=False) == pytest.approx(t(lone, PS, split_row_latency=False))
    assert t(wave, costly, split_row_latency=False) > 1.2 * t(wave, PS, split_row_latency=False)
    k = W.constants_for(costly, "ws-hopper", "bf16")
    lines = E.line_factor(3000, 2, k.line_split_cost, k.sector_split_cost)
    lat_s = 2 * 128 * 64 * 2 * (lines - 1) / k.sm_load_bytes_per_us  # a slot: 128-row A and B boxes
    periods = math.ceil(3000 / 64) - 1
    extra = t(lone, costly) - t(lone, costly, split_row_latency=False)
    assert 0 < extra <= periods * lat_s * per_round_trip(k, 4) + 1e-9  # 4 stages, the p-norm at most all of it


def test_direct_epilogue_is_bound_by_the_wave_as_well_as_the_sm():
    # without dram_writes a wave's C writes share the load's DRAM rate, none hidden: with a
    # slow DRAM a tile's epilogue grows with the CTAs storing at once (one wave each here)
    slow = C.with_values(PS, "ws-hopper", "bf16", {"dram_eff_bytes_per_us": 2.0e5})

    def epi(m):
        out = W.predict(rows(m=[m], n=[2048], k=[4096], tile_m=[128], tile_n=[256], persistent=[True]), slow,
                        dram_writes=False)
        assert out["waves"][0] == 1
        return out["epilogue_us"][0]

    assert epi(16 * 128) > 1.5 * epi(4 * 128)


def test_a_large_c_reaches_dram_at_the_write_rate_whatever_the_epilogue():
    # one k-block, C of 403 MB (benchmarks/store_probe.py's largest): the kernel takes at
    # least C less the L2's buffer at the write rate, with either epilogue and schedule
    k = W.constants_for(PS, "ws-hopper", "bf16")
    floor = (12288 * 16384 * 2 - k.l2_write_buffer_fraction * GPU.l2_bytes) / k.dram_write_bytes_per_us
    big = dict(m=12288, n=16384, k=64)
    for extra in ({}, {"epilogue": "tma"}, {"epilogue": "tma", "schedule": "pingpong", "tile_n": 128}):
        t = W.predict(_big(**big, **extra), PS)["predicted_us"][0]
        assert floor < t < 1.3 * floor, extra
    # the model before dram_writes let TMA stores drain unbounded behind the next tile
    assert W.predict(_big(**big, epilogue="tma"), PS, dram_writes=False)["predicted_us"][0] < 0.75 * floor
    # such a kernel is write bound, and says so (without dram_writes nothing bounds its writes)
    assert W.predict(_big(**big, epilogue="tma"), PS)["limiter"][0] == "writes"
    assert W.predict(_big(**big, epilogue="tma"), PS, dram_writes=False)["limiter"][0] != "writes"
    # a long K loop hides the writes: the same C with 64 k-blocks is not write bound
    assert W.predict(_big(m=12288, n=16384, k=4096, epilogue="tma"), PS)["limiter"][0] != "writes"
    # with a long K loop the next tile hides the stores: the write rate enters only the
    # last tile's, which nothing follows (one wave's tiles at the write rate at most)
    slow = C.with_values(PS, "ws-hopper", "bf16", {"dram_write_bytes_per_us": 0.5 * k.dram_write_bytes_per_us})
    one_wave = GPU.sms * 128 * 256 * 2 / k.dram_write_bytes_per_us
    for extra in ({}, {"epilogue": "tma"}):
        fast, dear = (W.predict(_big(**extra), ps)["predicted_us"][0] for ps in (PS, slow))
        assert 0 < dear - fast < one_wave < 0.01 * fast
    # one wave of C (8 MB) fits in the L2's buffer: the write rate does not enter at all
    for extra in ({}, {"epilogue": "tma"}):
        one = _big(m=256, n=16384, k=64, **extra)
        assert W.predict(one, PS)["waves"][0] == 1
        assert W.predict(one, slow)["predicted_us"][0] == W.predict(one, PS)["predicted_us"][0]


def test_a_stream_k_worker_of_many_short_tiles_stores_c_at_the_write_rate():
    # one k-block a tile, C of 164 MB, each worker's range of ~19 tiles: a tile's stores
    # drain behind the next segment's one k-block, not the worker's whole range, and the
    # L2's buffer is spread over the tiles a worker stores, not counted once a tile
    # (benchmarks/store_probe.py --order, lent H200: stream-K 50-53 us, data-parallel
    # 46-51 us; the model had stream-K at 0.60-0.65x of that)
    k = W.constants_for(PS, "ws-hopper", "bf16")
    c_bytes = 6144 * 13312 * 2
    floor = (c_bytes - k.l2_write_buffer_fraction * GPU.l2_bytes) / k.dram_write_bytes_per_us
    shape = dict(m=6144, n=13312, k=64, epilogue="tma")
    data_parallel = W.predict(_big(**shape), PS)["predicted_us"][0]
    for raster in ("row", "column", "grouped"):
        t = W.predict(_big(**shape, stream_k=True, raster=raster), PS)["predicted_us"][0]
        assert floor < t < 1.3 * floor and t == pytest.approx(data_parallel, rel=0.1), raster
    # a long K loop still hides them: 64 k-blocks a tile
    long_k = W.predict(_big(**{**shape, "k": 4096}, stream_k=True), PS)
    assert long_k["limiter"][0] != "writes"


def test_a_sector_two_tiles_store_costs_the_write_stream_only_where_rows_are_off_their_sector():
    """shared_sectors: C of 6144 x N, one k-block, 128x256 TMA-store tiles (the probe's runs,
    benchmarks/store_probe.py --granule, lent H200: N = 13320 1.46-1.62x the time of 13328
    data-parallel, rows 32, 64 or 128 bytes off their line 0.97-1.00x). Rows 16 bytes into
    a sector (every other row: pad_n(13320) * 2 = 26640) pay 1 + 0.5 * shared_sector_cost
    on the writes that leave the L2, 128- and 256-column tiles alike; pitches on a sector
    (13312, 13328, 13344) nothing; one tile column shares no sector with another tile;
    off, nothing moves."""
    c = W.constants_for(PS, "ws-hopper", "bf16")
    t = {n: W.predict(_big(m=6144, n=n, k=64, epilogue="tma"), PS)["predicted_us"][0]
         for n in (13312, 13328, 13344, 13320)}
    assert t[13328] == pytest.approx(t[13312], rel=0.02) and t[13344] == pytest.approx(t[13312], rel=0.02)
    assert 1.3 < t[13320] / t[13328] < 1.6
    writes = lambda n, **on: W.predict(_big(m=6144, n=n, k=64, epilogue="tma"), PS, **on)  # noqa: E731
    off = writes(13320, shared_sectors=False)["predicted_us"][0]
    assert off == pytest.approx(t[13328], rel=0.02)
    # the writes past the L2's buffer, stretched by 1 + 0.5 * shared_sector_cost, whatever the tile's width
    plain = 6144 * 13320 * 2 - c.l2_write_buffer_fraction * GPU.l2_bytes
    assert t[13320] - off == pytest.approx(plain * 0.5 * c.shared_sector_cost / c.dram_write_bytes_per_us, rel=0.05)
    narrow = W.predict(_big(m=6144, n=13320, k=64, epilogue="tma", tile_n=128), PS)
    assert EP.shared_sectors(SimpleNamespace(on=SimpleNamespace(shared_sectors=True), c=c,
                                             grid=W.grid_of(W.prepare(_big(m=6144, n=13320, k=64, tile_n=128), PS)[1]))
                             ) == pytest.approx(1 + 0.5 * c.shared_sector_cost)
    assert narrow["predicted_us"][0] > off
    # N = 200 (one 256-column tile column, pitch 400 B: every other row off its sector)
    one = W.predict(_big(m=65536, n=200, k=64, epilogue="tma"), PS)["predicted_us"][0]
    assert one == W.predict(_big(m=65536, n=200, k=64, epilogue="tma"), PS, shared_sectors=False)["predicted_us"][0]


def test_multicast_is_counted_once_in_the_dram_bytes():
    # one tile row (M = TM), a full wave whose k-blocks the L2 holds (a short window): every
    # CTA's A read but the first hits, so 1x2 clusters, which multicast A, save L2 requests
    # and no DRAM bytes: their transfer per k-block is 1x1's (benchmarks/ring_depth_probe.py
    # --schedules: 0.78 us a k-block both); counted among every CTA's reads the hit rate
    # took A's hits off the halved requests again
    one_row = dict(m=128, n=132 * 128, k=8192, tile_n=128, stages=6)
    held = C.with_values(PS, "ws-hopper", "bf16", {"l2_window_kblocks": 1.0})
    load = lambda df, **on: W.predict(df, held, **on)["stage_load_us"][0]  # noqa: E731
    lone, pair = _big(**one_row), _big(**one_row, cluster_n=2)
    assert load(pair) == pytest.approx(load(lone), rel=0.05)
    assert load(pair, multicast_reads=False) < 0.8 * load(lone)
    # counted once, a cluster's misses are never fewer than counted twice; without
    # clusters nothing changes
    for cm, cn in ((1, 1), (2, 1), (1, 2), (2, 2)):
        for m in (128, 256, 1024, 4096):
            df = _big(m=m, n=66 * 128, k=8192, tile_n=128, cluster_m=cm, cluster_n=cn)
            on, off = load(df), load(df, multicast_reads=False)
            assert on == off if cm * cn == 1 else on >= off, (cm, cn, m)


def test_ring_latency_makes_deeper_rings_pay_on_load_bound_tiles():
    df = rows(m=[6144] * 2, n=[6144] * 2, k=[6144] * 2, tile_m=[64] * 2, tile_n=[64] * 2, stages=[4, 6],
              persistent=[True] * 2)
    on, off = pred(df), pred(df, ring_latency=False)
    assert on[0] / on[1] > off[0] / off[1] and on[0] > on[1]
    # the fill (first load) keeps the microbenchmark latency
    assert W.predict(df, PS)["fill_us"][0] == pytest.approx(W.predict(df, PS, ring_latency=False)["fill_us"][0])


def test_boundary_fill_slows_overhanging_boxes_only():
    # M = 1: every A box is 1 useful row and tile_m - 1 zero-filled ones; the taller the
    # tile, the longer a ring slot's round trip, and deeper rings hide part of it
    df = rows(m=[1, 1, 1, 64], n=[8192] * 4, k=[29568] * 4, tile_m=[64, 256, 256, 64], tile_n=[64] * 4,
              stages=[4, 4, 5, 4])
    on, off = pred(df), pred(df, boundary_fill=False)
    assert on[3] == off[3]  # M = 64 = tile_m: nothing overhangs
    assert on[0] > off[0] and on[1] / off[1] > on[0] / off[0]
    assert on[2] < on[1]
    # a square shape of tile multiples is untouched
    sq = rows(m=[4096], n=[4096], k=[4096])
    assert pred(sq)[0] == pred(sq, boundary_fill=False)[0]


def test_later_waves_reuse_what_the_previous_wave_left_in_l2():
    # row raster, 128 tile columns: each wave spans ~one tile row and reads every B panel;
    # the next wave reads them again. They hit when both waves' K extent fits the L2.
    def h(t0, k):
        s = np.array([(k + 63) // 64])
        return W.wave_hit_rate(np.array([t0]), np.array([132]), np.array([64]), np.array([128]), np.array([0]),
                               64, 64, 64, 2, 25e6, 16.0, 4096, 8192, k, s, 1.4)[0]
    assert h(132, 1536) > h(0, 1536) + 0.3  # B (25 MB) re-read from L2
    assert h(132, 128000) == pytest.approx(h(0, 128000), abs=0.01)  # streamed: nothing left


def _lat_oob(df, ps=PS, slots=None, **flags):
    """boundary_fill's lat_oob per row for the first wave, with the ring's B slots in flight
    (``slots``: as many instead)."""
    from gemmperf.models.ws_pipelined import effects as E
    from gemmperf.models.ws_pipelined.inputs import Inputs, Switches

    _, arr = W.prepare(df, ps)
    x = Inputs.of(arr, Switches.of(flags))
    return E.boundary_fill(x, x.grid.first.a, x.stages if slots is None else slots)


def test_boundary_fill_latency_follows_the_zero_filled_rows_in_flight():
    """M = 1, 128x64 tiles (127 of each A box zero-filled): the added latency follows the
    rows in flight on the GPU, CTAs x rows x ring slots. 66 CTAs at 4 stages and 132 at 2
    add the same; few rows in flight add little (quadratically: twice the rows, four times
    the latency), many level off under oob_latency_us (benchmarks/zero_fill_rows_probe.py:
    32 CTAs hardly pay, a full wave of 132 pays up to about 2 us). The fill's first k-block
    counts one slot."""
    c = W.constants_for(PS, "ws-hopper", "bf16")
    n = [64 * 66, 64 * 132, 64 * 8, 64 * 16, 64 * 132]
    df = rows(m=[1] * 5, n=n, k=[8192] * 5, tile_m=[128] * 5, tile_n=[64] * 5, stages=[4, 2, 2, 2, 8])
    lat = _lat_oob(df)
    assert lat[0] == pytest.approx(lat[1], rel=1e-12)
    r_small = 8 * 127 * 2.0  # 8 CTAs, 127 rows, 2 slots
    assert r_small < 0.1 * c.oob_half_rows and lat[3] == pytest.approx(4 * lat[2], rel=0.05)
    assert lat[2] < 0.01 * c.oob_latency_us and 0.8 * c.oob_latency_us < lat[4] < c.oob_latency_us
    assert np.all(_lat_oob(df, boundary_fill=False) == 0)
    out = W.predict(df, PS)
    fill = out["fill_us"].to_numpy() - out["stage_load_us"].to_numpy() - PS.get("ws-hopper", "bf16").load_latency_us
    assert fill == pytest.approx(_lat_oob(df, slots=1), rel=1e-9)


def test_a_full_wave_pays_for_its_zero_fill_more_than_a_few_ctas():
    """The probe's 128x64 tiles at M = 1 and M = 128, 4 stages: with 32 CTAs the zero fill
    adds a little to the period, with a full wave of 132 much more (measured 0.36 against
    0.30 us, 1.20x, and 0.92 against 0.45 us, 2.04x; the defaults' zero fill alone 1.21x).
    The L2 serves M = 128's shared A rows, M = 1's single row hardly, so what follows the
    hit rate is held out (hit_latency, and ring_queue, whose hits wait in a share of the
    queue): the zero fill's share alone compared."""
    df = rows(m=[1, 128, 1, 128], n=[2048, 2048, 8448, 8448], k=[8192] * 4, tile_m=[128] * 4, tile_n=[64] * 4,
              stages=[4] * 4, persistent=[True] * 4)
    p = W.predict(df, PS, hit_latency=False, ring_queue=False)["stage_period_us"].to_numpy()
    few, full = p[0] / p[1], p[2] / p[3]
    assert 1.0 <= few < 1.25 and full > 1.4 and full > few + 0.5


def test_coalesced_reads_favour_sharing_the_big_panel_with_launch_neighbours():
    # measured (benchmarks/raster_probe.py, 6144^3): 256x64 fastest in row raster (its
    # 256-row A panel read by neighbours at once), 64x256 in grouped/column raster
    slow_l2 = C.with_values(PS, "ws-hopper", "bf16", {"l2_bytes_per_us": 2.0e6})
    df = rows(m=[6144] * 4, n=[6144] * 4, k=[6144] * 4, tile_m=[256, 256, 64, 64], tile_n=[64, 64, 256, 256],
              persistent=[True] * 4, raster=["row", "grouped", "row", "grouped"])
    t = W.predict(df, slow_l2)["predicted_us"].to_numpy()
    assert t[0] < t[1] and t[3] < t[2]
    off = W.predict(df, slow_l2, coalesced_reads=False)["predicted_us"].to_numpy()
    assert off[0] == pytest.approx(off[1], rel=0.02) and (off >= t - 1e-9).all()


def test_one_consumer_warpgroup_runs_the_math_slower():
    df = rows(m=[8192, 8192], n=[8192, 8192], k=[8192, 8192], tile_m=[64, 128], tile_n=[128, 64])
    out = W.predict(df, PS)
    assert out["stage_math_us"][0] > out["stage_math_us"][1]
    off = W.predict(df, PS, consumer_warpgroups=False)
    assert off["stage_math_us"][0] == pytest.approx(off["stage_math_us"][1])


@pytest.mark.parametrize("slug", sorted(CATALOG))
def test_every_default_constant_lies_in_its_plausible_range(slug):
    defaults = W.default_constants(CATALOG[slug]).as_dict()
    assert set(defaults) == set(W.CONSTANTS) == set(W.ranges())
    for name, (lo, hi) in W.ranges().items():
        assert lo <= defaults[name] <= hi, (slug, name, defaults[name], (lo, hi))


def test_every_constant_says_its_unit_and_meaning():
    for f in dataclasses.fields(W.PipelinedConstants):
        assert f.metadata["unit"] and len(f.metadata["meaning"]) > 20, f.name
    assert set(W.FITTED) < set(W.CONSTANTS) and set(W.FITTED) <= set(C.FIT_NAMES)


def test_stored_constants_override_defaults_and_old_extra_files_load(tmp_path):
    fitted = C.with_values(PS, "ws-hopper", "bf16", {"coalesce_distance": 3.5})
    assert W.constants_for(fitted, "ws-hopper", "bf16").coalesce_distance == 3.5
    assert W.constants_for(fitted, "ws-ampere", "bf16") == W.default_constants(GPU)
    new, old = tmp_path / "new.json", tmp_path / "old.json"
    fitted.save(new)
    text = new.read_text()
    assert '"constants"' in text and '"extra"' not in text
    old.write_text(text.replace('"constants"', '"extra"'))  # the layout before the rename
    for path in (new, old):
        loaded = ParamSet.load(path, GPU)
        assert W.constants_for(loaded, "ws-hopper", "bf16").coalesce_distance == 3.5


def test_limiter_names_and_scalar_inputs_broadcast():
    assert W.LIMITERS == ("load", "l2", "math", "smem", "latency", "epilogue", "writes")
    assert [W.LIMITERS[int(x)] for x in W.Limiter] == [x.name.lower() for x in W.Limiter]
    df = rows(m=[4096, 64], n=[4096, 8192], k=[4096, 8192])
    _, arr = W.prepare(df, PS)
    full = W.evaluate(**arr)
    # any input may be a scalar: it broadcasts against the others
    scal = W.evaluate(**{**arr, "t_init_us": float(arr["t_init_us"][0]), "sms": int(arr["sms"][0])})
    for name, values in full.items():
        assert np.array_equal(values, scal[name]), name
    with pytest.raises(TypeError, match="missing input"):
        W.evaluate(**{k: v for k, v in arr.items() if k != "stages"})


def test_each_switch_changes_only_its_effect():
    # every effect can be switched off on its own, by keyword or through model_options
    df = rows(m=[1000, 2047, 64], n=[1000, 2047, 8192], k=[3000, 2047, 8192], tile_m=[64, 128, 256],
              tile_n=[128, 256, 64])
    _, arr = W.prepare(df, PS)
    for effect in W.EFFECTS:
        by_kw = W.evaluate(**arr, **{effect: False})["predicted_us"]
        by_opt = W.evaluate(**arr, model_options={effect: False})["predicted_us"]
        assert np.array_equal(by_kw, by_opt), effect
    assert W.Switches.of({"padding": False}, {"padding": True}).padding


def _big(**extra):
    """One 8192^3 row of every configuration column (128x256, 4 stages, persistent, grouped), ``extra`` over it."""
    shape = {"m": extra.pop("m", 8192), "n": extra.pop("n", 8192), "k": extra.pop("k", 8192)}
    cfg = KernelConfig("ws-hopper", "bf16", 128, 256, 64, 4, persistent=True, raster="grouped").replace(**extra)
    return pl.DataFrame([{**shape, **cfg.as_dict()}])


def test_tma_store_epilogue_exposes_only_the_staging_writes():
    direct, tma = W.predict(_big(), PS), W.predict(_big(epilogue="tma"), PS)
    assert tma["epilogue_us"][0] < direct["epilogue_us"][0] and tma["predicted_us"][0] < direct["predicted_us"][0]
    off = W.predict(_big(epilogue="tma"), PS, tma_store=False)
    assert off["predicted_us"][0] == direct["predicted_us"][0]
    # its fixed cost is its own (tma_epilogue_us): it waits for no global store, so the
    # direct epilogue's t_epilogue_us does not enter it
    costly = C.with_values(PS, "ws-hopper", "bf16", {"t_epilogue_us": 20.0})
    assert W.predict(_big(epilogue="tma"), costly)["predicted_us"][0] == tma["predicted_us"][0]
    assert W.predict(_big(), costly)["predicted_us"][0] > direct["predicted_us"][0]
    dear = C.with_values(PS, "ws-hopper", "bf16", {"tma_epilogue_us": 5.0})
    assert W.predict(_big(epilogue="tma"), dear)["epilogue_us"][0] > tma["epilogue_us"][0]
    assert W.predict(_big(), dear)["predicted_us"][0] == direct["predicted_us"][0]


def test_pingpong_hides_epilogues_behind_the_other_warpgroups_main_loop():
    """(With the same epilogue per tile for both schedules: epilogue_threads off, which
    gives a ping-pong warpgroup's whole tile twice a cooperative one's per-thread work.)"""

    def predict_(df, ps, **flags):
        return W.predict(df, ps, epilogue_threads=False, **flags)

    coop = predict_(_big(tile_n=128), PS)
    pp = predict_(_big(tile_n=128, schedule="pingpong"), PS)
    assert pp["epilogue_us"][0] < coop["epilogue_us"][0] / 10
    assert predict_(_big(tile_n=128, schedule="pingpong"), PS, pingpong_overlap=False)["predicted_us"][0] \
        == coop["predicted_us"][0]
    # short K: each epilogue outlasts the other warpgroup's S*Tc; both warpgroups store at
    # once, so each tile but the last exposes half of the excess (the DRAM's write rate,
    # which binds every tile whichever warpgroup stores it, left out: dram_writes off)
    short = predict_(_big(tile_n=128, k=128, schedule="pingpong"), PS, dram_writes=False)
    waves = short["waves"][0]
    e = predict_(_big(tile_n=128, k=128), PS, dram_writes=False)["epilogue_us"][0] / waves  # a tile's E
    s_tc = short["k_stages"][0] * short["stage_math_us"][0]
    unhalved = (waves - 1) * (e - s_tc) + e
    assert waves > 8 and e > 2 * s_tc
    assert 0.4 * unhalved < short["epilogue_us"][0] < 0.6 * unhalved
    # one tile a CTA (not persistent): nothing to overlap
    np_pp = predict_(_big(tile_n=128, schedule="pingpong", persistent=False, raster="row"), PS)
    np_coop = predict_(_big(tile_n=128, persistent=False, raster="row"), PS)
    assert np_pp["predicted_us"][0] == np_coop["predicted_us"][0]


def test_a_tma_store_pingpong_tile_holds_the_sms_tma_engine():
    """tma_engine: one SM's TMA engine issues the loads and the TMA stores in turn, so two
    ping-pong warpgroups do not overlap their TMA-store epilogues, and a tile holds the
    engine for its epilogue E and its S k-blocks' boxes (Bs bytes each after multicast):
    exposed = max(E + S*Bs/sm_load_bytes_per_us - S*Tc, 0) (benchmarks/short_k_probe.py
    --ctas, lent H200: 16 CTAs of 65 one-k-block 128x128 tiles, 0.94 us a tile, about
    Tc + E). Direct stores leave from registers: nothing; cooperative tiles: nothing."""
    from gemmperf.models.ws_pipelined.inputs import Inputs, Switches

    c = W.constants_for(PS, "ws-hopper", "bf16")
    for cm, bs in ((1, (128 + 128) * 64 * 2), (2, (128 + 64) * 64 * 2)):  # 2x1 multicasts half of B
        df = _big(m=797, n=19040, k=64, tile_n=128, cluster_m=cm, schedule="pingpong", epilogue="tma")
        _, arr = W.prepare(df, PS)
        x = Inputs.of(arr, Switches(), None)
        assert EP.tma_engine(x, 1.0, 0.2)[0] == pytest.approx(1.0 + bs / c.sm_load_bytes_per_us - 0.2)
        assert EP.tma_engine(x, 0.1, 5.0)[0] == 0.0
        assert EP.tma_engine(Inputs.of(arr, Switches(tma_engine=False), None), 1.0, 0.2)[0] == 0.0
    one_kblock = dict(m=797, n=19040, k=64, tile_n=128, persistent_ctas=16)
    on = W.predict(_big(**one_kblock, schedule="pingpong", epilogue="tma"), PS)
    off = W.predict(_big(**one_kblock, schedule="pingpong", epilogue="tma"), PS, tma_engine=False)
    tiles = on["tiles"][0] / 16
    assert tiles > 60 and on["predicted_us"][0] - off["predicted_us"][0] > 0.1 * tiles * c.tma_epilogue_us
    for other in (dict(schedule="pingpong", epilogue="direct"), dict(schedule="cooperative", epilogue="tma")):
        df = _big(**one_kblock, **other)
        assert W.predict(df, PS)["predicted_us"][0] == W.predict(df, PS, tma_engine=False)["predicted_us"][0]


def test_clusters_take_units_and_fit_the_gpcs():
    out = W.predict(pl.concat([_big(cluster_m=1), _big(cluster_m=2), _big(cluster_m=2, cluster_n=2)]), PS)
    assert out["wave_ctas"].to_list() == [132, 132, 120]  # 30 clusters of 4 fit on the H100
    assert out["tiles"].to_list() == [64 * 32] * 3
    # an odd tile count rounds up to whole clusters
    odd = W.predict(rows(m=[8192 + 128], n=[8192], k=[512], tile_m=[128], tile_n=[256], cluster_m=[2]), PS)
    assert odd["tiles"][0] == 66 * 32
    # multicast halves the shared operand's bytes per CTA
    slow_l2 = ParamSet(GPU.replace(dram_bytes_per_s=GPU.dram_bytes_per_s / 20))
    small_k = dict(k=1024)
    assert W.predict(_big(cluster_m=2, **small_k), slow_l2)["stage_load_us"][0] \
        < W.predict(_big(**small_k), slow_l2)["stage_load_us"][0]


def test_a_cluster_runs_at_the_slowest_of_its_ctas_periods():
    single, pair, quad = (W.predict(_big(cluster_m=cm, cluster_n=cn), PS) for cm, cn in ((1, 1), (2, 1), (2, 2)))
    j = W.constants_for(PS, "ws-hopper", "bf16").cluster_jitter
    off = W.predict(_big(cluster_m=2), PS, cluster_lockstep=False)
    assert pair["stage_period_us"][0] == pytest.approx(off["stage_period_us"][0] * (1 + j * 0.5642))
    assert W.predict(_big(), PS, cluster_lockstep=False)["predicted_us"][0] == single["predicted_us"][0]
    off4 = W.predict(_big(cluster_m=2, cluster_n=2), PS, cluster_lockstep=False)
    assert quad["stage_period_us"][0] == pytest.approx(off4["stage_period_us"][0] * (1 + j * 1.0294))
    assert quad["predicted_us"][0] > off4["predicted_us"][0]


def test_clusters_start_and_leave_together_once_per_wave():
    sync = W.constants_for(PS, "ws-hopper", "bf16").cluster_sync_us
    lo, hi = W.ranges()["cluster_sync_us"]
    assert lo < sync < hi
    for persistent, raster in ((True, "grouped"), (False, "row")):
        for cm, cn in ((2, 1), (1, 2), (2, 2)):
            cfg = dict(cluster_m=cm, cluster_n=cn, persistent=persistent, raster=raster)
            on = W.predict(_big(**cfg), PS)
            off = W.predict(_big(**cfg), PS, cluster_sync=False)
            times = 1 if persistent else on["waves"][0]
            assert times == 1 if persistent else times > 8
            assert on["overhead_us"][0] - off["overhead_us"][0] == pytest.approx(sync * times)
            # at the boost clock: the power cap's clock drop (power_clock) stretches the sum
            assert boost(on)[0] - boost(off)[0] == pytest.approx(sync * times)
        single = _big(persistent=persistent, raster=raster)
        assert W.predict(single, PS)["predicted_us"][0] == W.predict(single, PS, cluster_sync=False)["predicted_us"][0]
    # the fit moves it only on clustered rows
    assert W.rows_of("cluster_sync_us", {"cluster_m": np.array([2, 1]), "cluster_n": np.array([1, 1])})
    assert not W.rows_of("cluster_sync_us", {"cluster_m": np.array([1]), "cluster_n": np.array([1])})


def test_persistent_ctas_caps_the_wave_and_group_m_moves_the_l2_panels():
    out = W.predict(pl.concat([_big(), _big(persistent_ctas=128), _big(persistent_ctas=64)]), PS)
    assert out["wave_ctas"].to_list() == [132, 128, 64]
    assert out["waves"].to_list() == [16, 16, 32]
    r1 = W.wave_panels(np.array([0]), np.array([132]), np.array([64]), np.array([32]), np.array([2]), 1)
    r16 = W.wave_panels(np.array([0]), np.array([132]), np.array([64]), np.array([32]), np.array([2]), 16)
    assert (r1[0][0], r1[1][0]) == (5, 32) and (r16[0][0], r16[1][0]) == (16, 9)
    hits = W.predict(pl.concat([_big(group_m=g) for g in (1, 8)]), PS)["l2_hit_rate_est"].to_list()
    assert hits[0] != hits[1]


# ---------------------------------------------------------------- split-K, stream-K, fp8 (issue 16)


def _decode(**extra):
    """1 x 4096 x 14336 (a decode GEMM: 32 tiles of 64x128, 224 k-blocks) on ws-hopper,
    ``extra`` over it (non-persistent, row raster, TMA epilogue, 6 stages)."""
    shape = {"m": extra.pop("m", 1), "n": extra.pop("n", 4096), "k": extra.pop("k", 14336)}
    cfg = KernelConfig("ws-hopper", "bf16", 64, 128, 64, 6, epilogue="tma").replace(**extra)
    return pl.DataFrame([{**shape, **cfg.as_dict()}])


def test_split_k_makes_items_of_shorter_k_loops_and_pays_their_fixup():
    out = W.predict(pl.concat([_decode(split_k=s) for s in (1, 2, 4, 16)]), PS)
    assert out["tiles"].to_list() == [32] * 4
    assert out["work_items"].to_list() == [32, 64, 128, 512]
    assert out["k_stages"].to_list() == [224, 112, 56, 14]
    assert out["waves"].to_list() == [1, 1, 1, 4]
    red = out["reduction_us"].to_list()
    assert red[0] == 0.0 and 0 < red[1] < red[2] < red[3]  # Sk partials read back per tile
    parts = out.select(pl.sum_horizontal("init_us", "fill_us", "mainloop_us", "epilogue_us", "reduction_us",
                                         "overhead_us", "power_us")).to_series().to_list()
    assert parts == pytest.approx(out["predicted_us"].to_list(), rel=1e-12)
    # the decode GEMM is bound by 32 CTAs' load paths: more CTAs in flight pay, the fix-up
    # is one row of fp32 partials (rows < M only); a square with many tiles does not pay
    t = out["predicted_us"].to_list()
    assert t[1] < 0.8 * t[0] and t[2] < 0.8 * t[0]
    big = W.predict(pl.concat([_big(persistent=False, raster="row", split_k=s) for s in (1, 2)]), PS)
    assert big["predicted_us"][1] > big["predicted_us"][0]
    rows128 = W.predict(_decode(m=128, split_k=4), PS)["reduction_us"][0]
    # 64 rows, not 1, of 128 fp32 columns, 4 partials read back
    assert rows128 > red[2] + 63 * 128 * 4 * 4 / W.default_constants(GPU).partial_read_bytes_per_us
    # switched off, the partials reduce for free: the items and their K loops stay
    off = W.predict(_decode(split_k=4), PS, split_k_fixup=False)
    assert off["reduction_us"][0] == 0.0 and off["mainloop_us"][0] == out["mainloop_us"][2]
    assert off["predicted_us"][0] < t[2]


def test_split_items_past_kt_load_nothing():
    """K = 64 is one k-block: of 16 splits, 15 items are empty; the wave's bytes are the
    one split's (the CTAs and their fix-ups still cost)."""
    out = W.predict(pl.concat([_decode(k=64), _decode(k=64, split_k=16)]), PS)
    assert out["k_stages"].to_list() == [1, 1]
    assert out["stage_load_us"][1] <= 1.01 * out["stage_load_us"][0]
    assert out["predicted_us"][1] > out["predicted_us"][0]


def test_stream_k_workers_share_the_iterations_and_fix_up_their_partial_tiles():
    sk = W.predict(_decode(persistent=True, raster="grouped", stream_k=True), PS).row(0, named=True)
    dp = W.predict(_decode(persistent=True, raster="grouped"), PS).row(0, named=True)
    # 32 units x 224 k-blocks over 132 workers: 55 iterations each, a tile shared by up to 6
    assert (sk["work_items"], sk["waves"], sk["k_stages"]) == (132, 1, 55)
    assert sk["reduction_us"] > 0 and sk["predicted_us"] < 0.8 * dp["predicted_us"]
    # a worker's 55 iterations cross one tile boundary: 53 steady periods, not 54
    assert sk["full_periods"] == 53
    off = W.predict(_decode(persistent=True, raster="grouped", stream_k=True), PS, stream_k_fixup=False)
    assert off["reduction_us"][0] == 0.0 and off["full_periods"][0] == 54
    # ranges that start and end on tiles (132 tiles, one per worker) share nothing:
    # stream-K is then the data-parallel persistent kernel, bit for bit
    even = dict(n=132 * 128, persistent=True, raster="grouped")
    a = W.predict(_decode(stream_k=True, **even), PS).drop("stream_k")
    b = W.predict(_decode(**even), PS).drop("stream_k")
    assert a.equals(b)


def test_a_stream_k_worker_stores_the_tiles_it_finishes():
    """StreamK.stores: a worker runs the epilogue of every segment but a shared first one,
    which ends a tile another worker finishes; the L2's write buffer (epilogue.store_rounds)
    and the extra epilogues (kshare.stream_k_fixup) read that one count (Grid.stores)."""
    from gemmperf.models.ws_pipelined.geometry import StreamK

    # 10 units of 8 k-blocks over 4 workers: 20 iterations each, starting mid-tile, so a
    # worker crosses 3 or 4 tiles (n_seg 4, parts 2) and finishes 3
    sk = StreamK.of(np.array([10]), np.array([8]), np.array([4]))
    assert (sk.iters[0], sk.segments[0], sk.parts[0], sk.stores[0]) == (20, 4, 2, 3)
    # ranges that start and end on tiles (8 units of 8 over 4 workers): 2 tiles, 2 stored
    even = StreamK.of(np.array([8]), np.array([8]), np.array([4]))
    assert (even.segments[0], even.parts[0], even.stores[0]) == (2, 1, 2)
    # one tile of 64 k-blocks over 4 workers: n_seg is an upper bound (2, a range may cross
    # a boundary), the tile is stored once, by one worker
    inside = StreamK.of(np.array([1]), np.array([64]), np.array([4]))
    assert (inside.segments[0], inside.parts[0], inside.stores[0]) == (2, 4, 1)
    from gemmperf.models.ws_pipelined.inputs import Inputs, Switches

    # the decode shape over the GPU's workers (a tile shared by up to 6), stream-K and not
    both = pl.concat([_decode(persistent=True, raster="grouped", stream_k=s) for s in (True, False)])
    x = Inputs.of(W.prepare(both, PS)[1], Switches.of({}))
    g = x.grid
    assert g.sk_parts[0] > 1 and g.stores[0] == g.sk_segments[0] - 1 and g.stores[1] == g.n_waves[1]
    assert list(EP.store_rounds(x)) == list(np.maximum(g.stores, 1))
    assert list(K.stream_k_fixup(x, g.first_a).epilogues) == [g.stores[0] - 1, 0]


def test_a_stream_k_wave_reads_back_each_partial_it_writes_once():
    """One 128x256 tile of 132 k-blocks over the GPU's 132 workers of one k-block: every
    worker writes one partial and the last arriver reads all 132 back, one after another.
    The wave's L2 reads are those 132 partials (readers a*w/parts = 1), not 132 readers'
    132 each, so the read-back is the last arriver's chain (with about the H100's fitted
    round trip, read-back and L2 rates, at which 132 x 132 partials would have been bound
    by the L2's rate)."""
    one_tile = dict(m=128, n=256, k=64 * 132, tile_m=128, tile_n=256, persistent=True, raster="grouped",
                    stages=4, schedule="cooperative", stream_k=True)
    from gemmperf.models.ws_pipelined.inputs import Inputs, Switches

    ps = C.with_values(PS, "ws-hopper", "bf16", {"partial_latency_us": 0.24, "partial_read_bytes_per_us": 2.0e5,
                                                 "l2_bytes_per_us": 1.0e7})
    x = Inputs.of(W.prepare(_decode(**one_tile), ps)[1], Switches.of({}))
    g, a = x.grid, x.grid.first_a
    assert (g.sk_parts[0], g.sk_segments[0], a[0]) == (132, 1, 132)
    c, pb = x.c, K.partial_bytes(x)
    write = np.maximum(pb / c.partial_write_bytes_per_us, a * pb / c.l2_bytes_per_us) + c.fixup_sync_us
    chain = 132 * (c.partial_latency_us * K.fixup_batches(x) + K.stream_k_lookup(x) + pb / c.partial_read_bytes_per_us)
    assert 132 * 132 * pb[0] / c.l2_bytes_per_us[0] > chain[0]
    assert K.stream_k_fixup(x, a).reduction[0] == pytest.approx((write + chain)[0], rel=1e-12)


def test_stream_k_read_back_looks_up_each_partials_slot():
    """Stream-K's read-back pays stream_k_lookup_us before each partial's loads, split-K's
    not (its slots sit at offsets fixed at compile time); off, neither does."""
    lookup = W.default_constants(GPU).stream_k_lookup_us
    assert 0.1 < lookup < 0.5  # 440 clocks at the H100's SM clock
    one_tile = dict(m=16, n=128, k=64 * 16, tile_m=128, tile_n=128, persistent=True, raster="grouped",
                    stages=4, schedule="cooperative")
    df = pl.concat([_decode(stream_k=True, **one_tile), _decode(split_k=16, **one_tile)])
    on, off = W.predict(df, PS), W.predict(df, PS, stream_k_lookup=False)
    # stream-K: 16 workers of one iteration, the last arriver reads 16 partials
    assert on["reduction_us"][0] - off["reduction_us"][0] == pytest.approx(16 * lookup, rel=1e-9)
    assert on["reduction_us"][1] == off["reduction_us"][1]  # split-K unchanged
    assert on.filter(pl.col("stream_k").not_()).equals(off.filter(pl.col("stream_k").not_()))


def test_a_slots_round_trip_waits_behind_the_slots_in_flight():
    """ring_queue: lat_q = ring_queue_us_per_mb * a * B * slot bytes / 1e6 * ((1 - h) + h * q)
    in the period's latency term (h the wave's L2 hit rate, q = queue_hit_share), so a
    latency-bound ring of one tile row slows with its CTAs and with its depth; the fill
    does not wait; off, every prediction is as before."""
    c = W.default_constants(GPU)
    row = dict(tile_m=128, tile_n=64, stages=4, persistent=True, raster="row", k=8192)
    df = pl.concat([_decode(m=128, n=64 * n, **row) for n in (1, 8, 64)])
    # the hit rate grows with the CTAs of the row too: the round trip's L2 share held out
    on, off = W.predict(df, PS, hit_latency=False), W.predict(df, PS, ring_queue=False, hit_latency=False)
    slot = (128 + 64) * 64 * 2  # a CTA's A and B boxes of a k-block, bf16
    for i, ctas in enumerate((1, 8, 64)):
        h = on["l2_hit_rate_est"][i]
        lat_q = c.ring_queue_us_per_mb * ctas * 4 * slot / 1e6 * ((1 - h) + h * c.queue_hit_share)
        assert on["fill_us"][i] == off["fill_us"][i]
        assert on["limiter"][i] == off["limiter"][i] == "latency"
        # a p-norm of the period's terms: at least most of lat_q's share a k-block, at most all
        more = on["stage_period_us"][i] - off["stage_period_us"][i]
        share = lat_q * per_round_trip(c, 4)
        assert 0.5 * share < more <= share + 1e-12
    assert on["stage_period_us"][2] > on["stage_period_us"][1] >= on["stage_period_us"][0]


def test_a_slot_the_l2_serves_waits_in_a_share_of_the_queue():
    """ring_queue: at a hit rate of 0 a slot waits the whole queue of the bytes in flight,
    at 1 the share queue_hit_share of it, linearly between."""
    from gemmperf.models.ws_pipelined import effects as E

    c = W.default_constants(GPU)
    assert 0.0 < c.queue_hit_share < 1.0
    x = SimpleNamespace(on=SimpleNamespace(ring_queue=True), c=c, stages=np.array([4.0] * 3), shape=(3,))
    lat_q = E.ring_queue(x, np.array([132.0] * 3), 24576.0, np.array([0.0, 0.5, 1.0]))
    whole = c.ring_queue_us_per_mb * 132 * 4 * 24576 / 1e6
    assert lat_q == pytest.approx([whole, whole * (0.5 + 0.5 * c.queue_hit_share), whole * c.queue_hit_share],
                                  rel=1e-12)


def test_a_slots_round_trip_is_shorter_where_the_l2_serves_it():
    """hit_latency: the round trip's extra beyond the load latency is (1 - h) *
    ring_extra_latency_us + h * hit_extra_latency_us in the period's latency term, h the
    wave's L2 hit rate; a ring whose panels the L2 holds (one tile row: every CTA reads
    the same A) gains more than one that misses; the fill does not change; off, or the two
    latencies equal, every prediction is as before."""
    c = W.default_constants(GPU)
    row = dict(tile_m=128, tile_n=64, stages=4, persistent=True, raster="row", k=8192)
    df = pl.concat([_decode(m=128, n=64 * 64, **row), _decode(m=128 * 64, n=64 * 64, **row)])
    on, off = W.predict(df, PS), W.predict(df, PS, hit_latency=False)
    same = C.with_values(PS, "ws-hopper", "bf16", {"hit_extra_latency_us": c.ring_extra_latency_us})
    assert W.predict(df, same).equals(off)
    assert c.hit_extra_latency_us < c.ring_extra_latency_us
    h = on["l2_hit_rate_est"].to_numpy()
    assert 0.0 < h[0] < h[1] < 1.0
    for i in range(2):
        assert on["fill_us"][i] == off["fill_us"][i]
        assert on["limiter"][i] == off["limiter"][i] == "latency"
        # a p-norm of the period's terms: at least most of the saving's share a k-block, at most all
        less = off["stage_period_us"][i] - on["stage_period_us"][i]
        share = h[i] * (c.ring_extra_latency_us - c.hit_extra_latency_us) * per_round_trip(c, 4)
        assert 0.5 * share < less <= share + 1e-12


def test_split_rows_lengthen_a_slots_round_trip():
    """split_row_latency: a pitch off the 32-byte sector (K = 3000: 6000 bytes a row) adds
    lat_s = slot bytes * (lines - 1) / sm_load_bytes_per_us to the round trip of a
    latency-bound ring: one CTA's whole boxes, in a 2x1 cluster its A box and half the B box;
    an aligned pitch (K = 3072) and the effect off leave every prediction as before."""
    c = W.default_constants(GPU)
    row = dict(m=128, n=64 * 8, tile_m=128, tile_n=64, stages=4, persistent=True, raster="row")
    df = pl.concat([_decode(k=3000, **row), _decode(k=3072, **row), _decode(k=3000, cluster_m=2, **{**row, "m": 256})])
    # the engine's own time for the split rows (engine_rows) off: it binds x on these rows
    on, off = W.predict(df, PS, engine_rows=False), W.predict(df, PS, split_row_latency=False, engine_rows=False)
    lines = E.line_factor(3000, 2, c.line_split_cost, c.sector_split_cost)
    assert lines > 1.5  # 6000 = 16 mod 32: off its line and its sector
    # the 2x1 cluster's CTAs wait for the slower of two (cluster_lockstep: 1 + 0.56 sigma)
    lockstep = (1.0, 1.0 + 0.56 * c.cluster_jitter)
    for i, slot, factor in ((0, (128 + 64) * 64 * 2, lockstep[0]), (2, (128 + 64 // 2) * 64 * 2, lockstep[1])):
        lat_s = slot * (lines - 1) / c.sm_load_bytes_per_us
        assert on["limiter"][i] == off["limiter"][i] == "latency"
        assert on["fill_us"][i] == off["fill_us"][i]
        # a p-norm of the period's terms: at least most of lat_s's share a k-block, at most all
        more = on["stage_period_us"][i] - off["stage_period_us"][i]
        share = lat_s * per_round_trip(c, 4)
        assert 0.5 * share < more <= factor * share + 1e-9
    assert on.row(1) == off.row(1)


def test_k_sharing_switches_leave_every_other_row_bit_for_bit():
    df = pl.concat([_big(), _big(epilogue="tma", cluster_m=2), _big(schedule="pingpong", tile_n=128),
                    _decode(), _decode(persistent=True, raster="column", stages=4)])
    on = W.predict(df, PS)
    off = W.predict(df, PS, split_k_fixup=False, stream_k_fixup=False, stream_k_lookup=False)
    assert on.equals(off)
    assert (on["reduction_us"] == 0).all() and (on["work_items"] == on["tiles"]).all()


def test_fp8_reads_one_byte_runs_twice_the_math_rate_and_writes_bf16():
    from gemmperf.models import columns

    f8 = KernelConfig("ws-hopper", "fp8", 128, 256, 128, 4, persistent=True, raster="grouped")
    bf = KernelConfig("ws-hopper", "bf16", 128, 256, 64, 4, persistent=True, raster="grouped")
    df = pl.DataFrame([{"m": 8192, "n": 8192, "k": 8192, **c.as_dict()} for c in (f8, bf)])
    assert columns.fill_configs(df)["out_dtype"].to_list() == ["bf16", "bf16"]
    out = W.predict(df, PS)
    # a k-block of fp8 (TK 128 at the fp8 tensor rate) takes the time of a bf16 one (TK 64)
    assert out["stage_math_us"][0] == pytest.approx(out["stage_math_us"][1], rel=1e-12)
    assert out["k_stages"].to_list() == [64, 128]
    assert out["predicted_us"][0] < 0.6 * out["predicted_us"][1]
    # C is bf16 whether the row says so or not; an fp8 C would be half the bytes
    named = W.predict(df.head(1).with_columns(pl.lit("bf16").alias("out_dtype")), PS)
    assert named["predicted_us"][0] == out["predicted_us"][0]
    one = W.predict(df.head(1).with_columns(pl.lit("fp8").alias("out_dtype")), PS)
    assert one["epilogue_us"][0] < out["epilogue_us"][0]
    for name in ("sol", "sync", "ws-stage", "ws-persistent"):  # the other models take fp8 rows too
        assert np.isfinite(predict(df, PS, name)["predicted_us"].to_numpy()).all()


def test_other_models_predict_k_sharing_rows_as_their_tiling():
    base = _decode(persistent=True, raster="grouped")
    df = pl.concat([base, _decode(split_k=4, persistent=True, raster="grouped"),
                    _decode(persistent=True, raster="grouped", stream_k=True)])
    for name in ("sol", "sync", "ws-stage", "ws-persistent"):
        t = predict(df, PS, name)["predicted_us"].to_list()
        assert t[0] == t[1] == t[2], name


def test_k_sharing_constants_are_fitted_only_on_rows_that_share_k():
    _, plain = W.prepare(pl.concat([_decode(), _big()]), PS)
    _, shared = W.prepare(pl.concat([_decode(), _decode(split_k=2)]), PS)
    for name in ("partial_write_bytes_per_us", "partial_read_bytes_per_us", "fixup_sync_us"):
        assert name in W.FITTED
        assert not W.rows_of(name, plain) and W.rows_of(name, shared)
    assert W.rows_of("l2_bytes_per_us", plain)


def test_ring_jitter_is_a_p_norm_of_the_rings_terms():
    """The period is at least its slowest term, 2^(1/p) times it where two terms are equal,
    the hard max where ring_jitter is off; a deeper ring still shortens a period past the
    point where the hard max stops caring (L/B below max(Tc, x))."""
    p = W.constants_for(PS, "ws-hopper", "bf16").period_sharpness
    assert 1.5 <= p <= 16.0
    deep = rows(m=[8192] * 3, n=[8192] * 3, k=[8192] * 3, tile_m=[128] * 3, tile_n=[256] * 3, stages=[4, 6, 8],
                persistent=[True] * 3)
    on = W.predict(deep, PS)
    off = W.predict(deep, PS, ring_jitter=False)
    terms = np.stack([on["stage_math_us"], on["stage_smem_us"], on["stage_load_us"]]).max(axis=0)
    assert (on["stage_period_us"].to_numpy() >= off["stage_period_us"].to_numpy() - 1e-12).all()
    assert (off["stage_period_us"].to_numpy() >= terms - 1e-12).all()
    assert np.all(np.diff(on["stage_period_us"].to_numpy()) < 0)  # every slot helps
    assert off["stage_period_us"][1] == pytest.approx(off["stage_period_us"][2])  # the hard max: no more
    x = SimpleNamespace(on=SimpleNamespace(ring_jitter=True), c=SimpleNamespace(period_sharpness=2.0))
    assert W.effects.ring_jitter(x, np.array([3.0]), np.array([4.0]), np.array([0.0]))[0] == pytest.approx(5.0)
    x.on.ring_jitter = False
    assert W.effects.ring_jitter(x, np.array([3.0]), np.array([4.0]), np.array([0.0]))[0] == 4.0


def test_the_direct_epilogue_costs_each_thread_its_accumulators():
    """epilogue_threads adds epilogue_acc_us per accumulator a consumer thread holds: a
    cooperative 128x128 tile and a 64x128 one hold 64 each (two warpgroups, one), a
    ping-pong 128x128 tile 128 (each warpgroup a whole tile); the TMA-store epilogue gains
    nothing. With ``second_warpgroup`` a thread of a CTA of two consumer warpgroups (the
    cooperative 128-row tile, ping-pong) takes second_warpgroup_factor (measured: 1.19) as
    long. One wave, not persistent: the epilogue is that one tile's."""
    df = rows(m=[256] * 4, n=[1024] * 4, k=[256] * 4, tile_m=[128, 64, 128, 128], tile_n=[128] * 4,
              schedule=["cooperative", "cooperative", "pingpong", "cooperative"],
              epilogue=["direct", "direct", "direct", "tma"], persistent=[False] * 4)
    consts = W.constants_for(PS, "ws-hopper", "bf16")
    c, f = consts.epilogue_acc_us, consts.second_warpgroup_factor
    assert c == pytest.approx(8.0 / GPU.sm_clock_mhz) and f == 1.19  # 8 clocks; the probe's ratio
    on = W.predict(df, PS)["epilogue_us"].to_numpy()
    one = W.predict(df, PS, second_warpgroup=False)["epilogue_us"].to_numpy()
    off = W.predict(df, PS, epilogue_threads=False)["epilogue_us"].to_numpy()
    assert on - off == pytest.approx([64 * c * f, 64 * c, 128 * c * f, 0.0])
    assert one - off == pytest.approx([64 * c, 64 * c, 128 * c, 0.0])


def test_the_model_counts_the_kernels_consumer_warpgroups():
    """Inputs.consumer_warpgroups (second_warpgroup's rule) and Inputs.accumulators follow
    the kernel as it is launched: WsHopper's warpgroups and the rows each holds."""
    hopper = get_family("ws-hopper")
    for tile_m in (64, 128, 256):
        for tile_n in (64, 128, 256):
            for schedule, code in SCHEDULE_CODES.items():
                cfg = KernelConfig("ws-hopper", "bf16", tile_m, tile_n, 64, 4, schedule=schedule)
                wg = consumer_warpgroups(np.array([tile_m]), np.array([code]))[0]
                acc = accumulators(np.array([tile_m]), np.array([tile_n]), np.array([code]))[0]
                assert wg == hopper.consumer_warpgroups(cfg), (tile_m, schedule)
                assert acc == hopper.warpgroup_rows(cfg) * tile_n / 128, (tile_m, tile_n, schedule)


def test_the_fit_keeps_the_math_rate_under_the_tensor_cores_peak():
    """Data made with a math rate 1.2x the descriptor's peak: the fitted rate stops at the
    peak (constants.ceilings) instead of following an impossible rate."""
    peak = default_params(PS.gpu, "ws-hopper", "bf16").math_flops_per_us
    truth = C.with_values(PS, "ws-hopper", "bf16", {"math_flops_per_us": 1.2 * peak})
    shapes = list(itertools.product([2048, 8192], [4096, 8192], [4096, 16384]))
    cfgs = pl.DataFrame([{"tile_m": 128, "tile_n": tn, "stages": 4, "persistent": True} for tn in (128, 256)])
    meas = A.synthetic_measurements(truth, shapes, cfgs, noise=0.01, seed=5)
    start = C.with_values(PS, "ws-hopper", "bf16", {"math_flops_per_us": 0.7 * peak})
    _, rep = C.fit_constants(meas, start, names=("math_flops_per_us", "t_epilogue_us"))
    assert rep["ws-hopper/bf16"]["values"]["math_flops_per_us"] == pytest.approx(peak, rel=1e-3)
    assert C.ceilings(PS, "ws-hopper", "bf16") == {"math_flops_per_us": peak,
                                                    "dram_eff_bytes_per_us": PS.gpu.dram_bytes_per_s / 1e6}


def test_split_k_waves_before_the_last_pay_the_read_back_and_epilogue_over_sk():
    """split_k_overlap: of a tile's Sk CTAs only the last to arrive reads the partials back
    and runs the epilogue; the others' SMs take the next wave's CTAs, so each wave but the
    last costs (read + epilogue) / Sk. 99 tiles x Sk = 4 make three full waves of 132 CTAs:
    two of them pay 1/4 of the epilogue (half the three waves' epilogue time is gone) and of
    the read-back (less than the same share of the whole fix-up, whose writes stay). One
    wave, and Sk = 1, are untouched."""
    df = rows(m=[1152, 1024, 1152], n=[1408, 256, 1408], k=[4096] * 3, tile_m=[128] * 3, tile_n=[128] * 3,
              split_k=[4, 4, 1], persistent=[False] * 3)
    on, off = W.predict(df, PS), W.predict(df, PS, split_k_overlap=False)
    assert list(on["waves"]) == [3, 1, 1]
    assert on["epilogue_us"][0] == pytest.approx(off["epilogue_us"][0] / 2)
    saved_read = off["reduction_us"][0] - on["reduction_us"][0]
    assert 0 < saved_read < 2 * 0.75 * off["reduction_us"][0] / 3
    for i in (1, 2):
        assert on["predicted_us"][i] == off["predicted_us"][i]


def test_the_read_back_pays_a_round_trip_per_partial():
    """partial_latency_us: the fix-up's read-back loop takes the Sk partials one after
    another, each an L2 round trip before its bytes. A decode tile's partials (M = 8 rows)
    are a few KB: with Sk = 16 (one wave) the read-back costs 16 round trips more than with
    none."""
    df = rows(m=[8], n=[1024], k=[8192], tile_m=[128], tile_n=[128], split_k=[16], persistent=[False])
    lat = W.constants_for(PS, "ws-hopper", "bf16").partial_latency_us
    assert lat == pytest.approx(0.5)
    none = C.with_values(PS, "ws-hopper", "bf16", {"partial_latency_us": 0.0})
    on, off = W.predict(df, PS)["reduction_us"][0], W.predict(df, none)["reduction_us"][0]
    assert on - off == pytest.approx(16 * lat)


def test_stream_k_reuse_tabulates_the_lag_to_the_nearest_worker_ahead_on_a_panel():
    """Three workers over 1 x 4 units of 8 k-blocks (row raster): ranges [0, 10), [10, 21),
    [21, 32). At the four sampled positions the workers on the one A panel are 2 and 3
    k-blocks apart (a worker that crossed onto the next unit of the row read the k-block a
    tile ago, which is no nearer), the last of each sample has nobody ahead: of 12 reads
    4 lag 2, 4 lag 3. Every unit is a column of its own: no B read has a user ahead."""
    from gemmperf.models.ws_pipelined.geometry import HOLDS, ROW, stream_k_reuse

    share_m, share_n = stream_k_reuse(np.array([1]), np.array([4]), np.array([8]), np.array([3]), np.array([ROW]),
                                      np.array([8]), np.array([True]))
    assert list(HOLDS[:4]) == [0, 1, 3, 7]
    assert share_m[0, :4] == pytest.approx([0, 0, 8 / 12, 8 / 12])
    assert (share_n == 0).all()
    # two workers at the same offset of the one panel: one read of each pair is a hit at any hold
    pair = stream_k_reuse(np.array([1]), np.array([2]), np.array([4]), np.array([2]), np.array([ROW]),
                          np.array([8]), np.array([True]))[0]
    assert pair[0] == pytest.approx(0.5)
    off = stream_k_reuse(np.array([1]), np.array([2]), np.array([4]), np.array([2]), np.array([ROW]),
                         np.array([8]), np.array([False]))
    assert (off[0] == 0).all() and (off[1] == 0).all()


def test_stream_k_workers_at_offsets_far_apart_share_little_l2():
    """stream_k_offsets: 2048 x 4096 x 14336 in 128x128 tiles (column raster, 512 tiles of
    224 k-blocks over 132 workers of 869 iterations): neighbouring workers run 27
    k-blocks apart on a B panel and the L2 keeps far fewer k-blocks of the wave's stream,
    so the hit rate falls well below the data-parallel wave's and the row slows down.
    4096^3 in 128x256 tiles (row raster, KT 64, workers 249 iterations: neighbours 7
    k-blocks apart on an A panel) keeps more of its reuse. Rows whose ranges start on
    tiles are untouched."""
    big = _decode(m=2048, n=4096, k=14336, tile_m=128, tile_n=128, stages=7, persistent=True, raster="column",
                  stream_k=True)
    near = _decode(m=4096, n=4096, k=4096, tile_m=128, tile_n=256, stages=2, persistent=True, raster="row",
                   stream_k=True)
    even = _decode(n=132 * 128, persistent=True, raster="grouped", stream_k=True)
    df = pl.concat([big, near, even])
    on, off = W.predict(df, PS), W.predict(df, PS, stream_k_offsets=False)
    h_on, h_off = on["l2_hit_rate_est"].to_list(), off["l2_hit_rate_est"].to_list()
    assert h_off[0] > 0.85 and h_on[0] < 0.5 and on["predicted_us"][0] > 1.2 * off["predicted_us"][0]
    assert h_on[1] - h_on[0] > 0.2
    assert on.row(2) == off.row(2)


def test_stream_k_hit_rate_is_the_least_fixed_point_of_its_hold(monkeypatch):
    """stream_k_offsets steps its hit rate from h = 0 until no row moves by more than
    SPREAD_TOL: the rates agree with a run of a thousand steps to within 1e-3; four steps
    (the first version's) rise towards it from below and leave the 4096^3 row's (0.75)
    short by more than 0.1."""
    from gemmperf.models.ws_pipelined import effects as E
    df = pl.concat([_decode(m=2048, n=4096, k=14336, tile_m=128, tile_n=128, stages=7, persistent=True,
                            raster="column", stream_k=True),
                    _decode(m=4096, n=4096, k=4096, tile_m=128, tile_n=256, stages=2, persistent=True,
                            raster="row", stream_k=True)])
    def rate():  # the fixed point itself, not capped by the wave in step (stream_k_ceiling)
        return W.predict(df, PS, stream_k_ceiling=False)["l2_hit_rate_est"].to_numpy()

    h = rate()
    monkeypatch.setattr(E, "SPREAD_TOL", 0.0)
    monkeypatch.setattr(E, "SPREAD_MAX_STEPS", 1000)
    h_ref = rate()
    monkeypatch.setattr(E, "SPREAD_MAX_STEPS", 4)
    h_4 = rate()
    assert np.allclose(h, h_ref, atol=1e-3)
    assert np.all(h_4 <= h_ref + 1e-12) and h_ref[1] - h_4[1] > 0.1


def test_a_stream_k_wave_shares_no_more_l2_than_a_wave_in_step():
    """stream_k_ceiling: benchmarks/stream_k_picks_probe.py (lent H200): 1152 x 8640 x
    14591 in 128x256 tiles, row raster, 132 workers of 528.5 iterations (KT 228): workers
    44 apart sit on one B panel at the same k offset and the fixed point of the hold rose
    to a hit rate of 0.70, the stream-K kernel predicted 0.71x its data-parallel twin; it
    ran 1.36x (623 against 460 us), and no stream-K run of the probe beat its twin by more
    than 3%. The rate is at most the wave-in-step rate (stream_k_offsets off); off, the
    fixed point alone; rows whose ranges start on tiles are untouched. On the H200's
    catalog constants (its L2 holds more of the stream than the H100's)."""
    ps = ParamSet(CATALOG["h200-sxm-141gb"])
    sk = _decode(m=1152, n=8640, k=14591, tile_m=128, tile_n=256, stages=4, persistent=True, raster="row",
                 stream_k=True, epilogue="tma")
    even = _decode(n=132 * 128, persistent=True, raster="grouped", stream_k=True)
    df = pl.concat([sk, even])
    on, off = W.predict(df, ps), W.predict(df, ps, stream_k_ceiling=False)
    in_step = W.predict(df, ps, stream_k_offsets=False)
    h_on, h_off, h_step = (t["l2_hit_rate_est"].to_numpy() for t in (on, off, in_step))
    assert h_on[0] == pytest.approx(min(h_off[0], h_step[0])) and h_on[0] < h_off[0] - 0.1
    assert on["predicted_us"][0] > off["predicted_us"][0]
    assert on.row(1) == off.row(1)


@pytest.mark.parametrize("cluster,expected", [
    ((1, 1), [0, 0, 0, 0, 0, 0, 0]),
    ((2, 1), [0, 0, 0, 0, 0, 0, 0]),  # A is not multicast: the padding tile's box is its own
    ((1, 2), [1, 1, 0, 0, 1, 1, 0]),
    ((2, 2), [3, 3, 2, 2, 1, 1, 0]),
])
def test_oob_slices_count_the_edge_clusters_wholly_out_of_bounds_multicast_slices(cluster, expected):
    """geometry.oob_slices on benchmarks/oob_box_probe.py's rows (128x64 tiles, N = 3712 =
    58 tiles of 64), the bracketed counts of its table: M = 1, 64, 65, 128, 129, 192, 256."""
    from gemmperf.models.ws_pipelined.geometry import oob_slices
    m = np.array([1, 64, 65, 128, 129, 192, 256])
    a, b = oob_slices(m, np.full(7, 3712), np.full(7, 128), np.full(7, 64), np.full(7, cluster[0]),
                      np.full(7, cluster[1]))
    assert a.tolist() == expected and b.tolist() == [0] * 7


def test_oob_slices_count_b_slices_past_n_in_clusters_along_m():
    """A 2x1 cluster loads each B box as two 32-row slices of a 64-wide tile: N = 3660 ends
    in the first slice of the last tile column (rows 3648..3679), so the second (from 3680)
    is wholly past N; N = 3690 (in the second slice) and N = 3712 (whole tiles) have none.
    In 2x2 clusters the edge cluster's padding column counts too: N = 3590 is 57 tile
    columns, the last unit holds column 56 (its second slice, from 3616, past N) and the
    padding column 57 (both slices)."""
    from gemmperf.models.ws_pipelined.geometry import oob_slices
    n = np.array([3660, 3690, 3712, 3590])
    a, b = oob_slices(np.full(4, 4096), n, np.full(4, 128), np.full(4, 64), np.full(4, 2), np.array([1, 1, 1, 2]))
    assert a.tolist() == [0, 0, 0, 0] and b.tolist() == [1, 0, 0, 3]


def test_wholly_out_of_bounds_multicast_slices_cost_the_wave_per_k_block():
    """oob_multicast: benchmarks/oob_box_probe.py's rows in 2x2 clusters (128x64 tiles, 8
    stages, 29 clusters): 3, 2, 1 and 0 wholly out-of-bounds 8 KB A slices each at M = 1,
    65, 129 and 256. Their term z_mc is (a/cs) * slices * 8 KB / oob_multicast_bytes_per_us
    (one unit row), the period does not fall below it, and what it adds grows with the
    count; a wave of 16 clusters pays a quarter of one of 66 (the rows of
    zero_fill_rows_probe.py in 1x2 clusters, N = 2048 and 8448, M = 64). The row without
    such a slice, and a row of 1x1 clusters, are untouched bit for bit."""
    base = dict(n=3712, k=14280, tile_m=128, tile_n=64, stages=8, schedule="pingpong", persistent=True,
                cluster_m=2, cluster_n=2)
    df = pl.concat([_decode(m=m, **base) for m in (1, 65, 129, 256)]
                   + [_decode(m=1, **{**base, "cluster_m": 1, "cluster_n": 1})])
    on, off = W.predict(df, PS), W.predict(df, PS, oob_multicast=False)
    rate = W.constants_for(PS, "ws-hopper", "bf16").oob_multicast_bytes_per_us
    z_mc = 29 * np.array([3, 2, 1]) * 64 * 64 * 2 / rate
    period_on, period_off = on["stage_period_us"].to_numpy(), off["stage_period_us"].to_numpy()
    assert np.all(period_on[:3] >= z_mc)
    added = period_on[:3] - period_off[:3]
    assert added[0] > added[1] > added[2] > 0
    assert on.row(3) == off.row(3) and on.row(4) == off.row(4)
    wave = pl.concat([_decode(m=64, n=n, k=8192, tile_m=128, tile_n=64, stages=4, persistent=True, cluster_n=2)
                      for n in (2048, 8448)])
    fill = W.predict(wave, PS)["fill_us"].to_numpy() - W.predict(wave, PS, oob_multicast=False)["fill_us"].to_numpy()
    assert fill[1] == pytest.approx(66 / 16 * fill[0], rel=1e-9)


def test_a_non_persistent_tma_store_wave_waits_for_its_staging_to_drain_before_its_ctas_exit():
    """store_exit: a non-persistent grid's TMA-store CTAs leave their SMs only once the copy
    engine has read their staging buffers, so each of W waves holds the tile's drain from
    shared memory (TM*TN*2 / store_bytes_per_us), where a persistent grid pays it once, after
    its last tile: with a small C (no DRAM backlog) the kernel takes (W - 1) drains longer;
    persistent grids and the direct epilogue are as before, bit for bit."""
    c = W.default_constants(GPU)
    shape = dict(m=2048, n=4096, k=64, tile_m=128, tile_n=128)  # 512 tiles: 4 waves of 132 or fewer
    df = pl.concat([_big(epilogue="tma", persistent=False, **shape), _big(epilogue="tma", **shape),
                    _big(persistent=False, **shape)])
    on, off = W.predict(df, PS), W.predict(df, PS, store_exit=False)
    assert on["waves"][0] == 4
    drain = 128 * 128 * 2 / c.store_bytes_per_us
    assert boost(on)[0] - boost(off)[0] == pytest.approx(3 * drain, rel=1e-9)
    assert on["epilogue_us"][0] - off["epilogue_us"][0] == pytest.approx(3 * drain, rel=1e-9)
    assert on.row(1) == off.row(1) and on.row(2) == off.row(2)


def test_a_held_slot_and_the_round_trip_without_the_transfer():
    """slot_release: the consumer holds h of the B slots and a slot's round trip is its
    latency and its multiply, so a latency-bound ring's term is round_trip / (B - h) (with
    ring_saturation off); off, (round_trip + x) / B. At two stages the held slot makes the
    ring slower; the fill and the stage times do not move."""
    c = W.default_constants(GPU)
    assert 0.0 < c.held_slots <= 1.5
    row = dict(tile_m=128, tile_n=64, persistent=True, raster="row", k=8192)
    df = pl.concat([_decode(m=128, n=64 * 8, stages=b, **row) for b in (2, 4, 8)])
    on = W.predict(df, PS, ring_saturation=False)
    off = W.predict(df, PS, ring_saturation=False, slot_release=False)
    assert on["limiter"][0] == off["limiter"][0] == "latency"
    assert on["stage_period_us"][0] > off["stage_period_us"][0]  # 2 - h slots against 2
    for col in ("fill_us", "stage_load_us", "stage_math_us", "init_us"):
        assert on[col].to_list() == off[col].to_list()
    # the free slots: B - h, and B off
    b, wide = np.array([2.0, 4.0, 8.0]), np.full(3, 128)
    assert np.all(E.free_slots(SimpleNamespace(stages=b, tile_m=wide, c=c, on=SimpleNamespace(slot_release=True)))
                  == b - c.held_slots)
    assert np.all(E.free_slots(SimpleNamespace(stages=b, tile_m=wide, c=c,
                                               on=SimpleNamespace(slot_release=False))) == b)
    # a held share above B - 1 leaves one slot (a one-slot ring is serial), never none
    many = dataclasses.replace(c, held_slots=1.5)
    assert list(E.free_slots(SimpleNamespace(stages=np.array([1.0, 2.0, 4.0]), tile_m=wide, c=many,
                                             on=SimpleNamespace(slot_release=True)))) == [1.0, 1.0, 2.5]


def test_a_64_row_tile_holds_its_own_share_of_slots():
    """short_tile_held_slots: a 64-row tile's consumer, whose multiply is short, holds its
    slot while it waits for the next k-block, so its ring has B - h64 free slots while the
    128- and 256-row tiles' have B - h; a share from 0 to 1.5 slots, the kernel's one by
    default. A larger h64 slows a latency-bound ring of 64-row tiles and leaves the others'."""
    c = W.default_constants(GPU)
    assert 0.0 <= c.short_tile_held_slots <= 1.5
    meta = next(f.metadata for f in dataclasses.fields(c) if f.name == "short_tile_held_slots")
    assert meta["unit"] == "slots" and meta["range"] == (0.0, 1.5)
    split = dataclasses.replace(c, held_slots=0.5, short_tile_held_slots=0.8)
    b, tiles = np.array([4.0, 4.0, 4.0]), np.array([64, 128, 256])
    free = E.free_slots(SimpleNamespace(stages=b, tile_m=tiles, c=split, on=SimpleNamespace(slot_release=True)))
    assert list(free) == [3.2, 3.5, 3.5]
    slow = C.with_values(PS, "ws-hopper", "bf16", {"ring_extra_latency_us": 1.0})  # the round trip binds
    df = pl.concat([_decode(m=m, n=64 * 4, stages=4, tile_m=m, tile_n=64, persistent=True, raster="row", k=16384)
                    for m in (64, 128)])
    base = W.predict(df, C.with_values(slow, "ws-hopper", "bf16", {"short_tile_held_slots": 0.5}))
    more = W.predict(df, C.with_values(slow, "ws-hopper", "bf16", {"short_tile_held_slots": 1.0}))
    assert (base["limiter"] == "latency").all()
    assert more["stage_period_us"][0] > base["stage_period_us"][0]
    assert more["stage_period_us"][1] == base["stage_period_us"][1]


def test_a_deep_ring_saturates():
    """ring_saturation: each slot in flight lengthens its own ring's round trip by
    1 / B_sat of it, so from 4 to 8 stages a latency-bound ring's term falls by
    (1/(8 - h) + 1/B_sat) / (1/(4 - h) + 1/B_sat), less than (4 - h) / (8 - h); off, every
    prediction is as before, and on, every ring is slower."""
    assert 2.0 <= W.default_constants(GPU).ring_saturation_slots <= 200.0
    slow = C.with_values(PS, "ws-hopper", "bf16", {"ring_extra_latency_us": 1.0})  # the round trip binds
    c = W.constants_for(slow, "ws-hopper", "bf16")
    row = dict(tile_m=64, tile_n=64, persistent=True, raster="row", k=16384)
    df = pl.concat([_decode(m=64, n=64 * 4, stages=b, **row) for b in (4, 8)])
    on, off = W.predict(df, slow), W.predict(df, slow, ring_saturation=False)
    assert (on["limiter"] == "latency").all() and (off["limiter"] == "latency").all()
    assert (on["stage_period_us"] > off["stage_period_us"]).all()
    deeper_on = on["stage_period_us"][1] / on["stage_period_us"][0]
    deeper_off = off["stage_period_us"][1] / off["stage_period_us"][0]
    assert deeper_off < deeper_on < 1.0
    h, sat = c.short_tile_held_slots, c.ring_saturation_slots  # 64-row tiles
    assert deeper_on == pytest.approx((1 / (8 - h) + 1 / sat) / (1 / (4 - h) + 1 / sat), rel=0.05)
    assert E.ring_saturation(SimpleNamespace(c=c, on=SimpleNamespace(ring_saturation=False))) == 0.0


def test_an_edge_tile_stores_only_its_part_inside_c():
    """partial_stores: the epilogue's global stores cover only the tile's part inside C
    (predicated direct stores, clipped TMA boxes), so a wave's fullest tile stores
    min(TM, M) x min(TN, N16) and its DRAM writes are the in-bounds share of its tiles;
    the staging writes to shared memory stay whole. Tiles inside C are as before, bit for
    bit."""
    c = W.default_constants(GPU)

    def stores(on, m, n, tile_m, tile_n):
        _, arr = W.prepare(_big(m=m, n=n, tile_m=tile_m, tile_n=tile_n), PS)  # bf16: out_bytes 2
        return EP.partial_stores(SimpleNamespace(tile_m=tile_m, tile_n=tile_n, out_bytes=2, grid=W.grid_of(arr),
                                                 on=SimpleNamespace(partial_stores=on)))

    # M = 3 of a 128-row tile, N = 100 padded to 104 (16 bytes of bf16) of a 128-column one
    s = stores(True, m=3, n=100, tile_m=128, tile_n=128)
    assert s.tile == 3 * 104 * 2 and s.share == pytest.approx(3 * 104 / (128 * 128))
    # C a tile multiple: the whole tile, share 1
    s = stores(True, m=256, n=512, tile_m=128, tile_n=256)
    assert s.tile == 128 * 256 * 2 and s.share == 1.0
    off = stores(False, m=3, n=100, tile_m=128, tile_n=128)
    assert off.tile == 128 * 128 * 2 and off.share == 1.0
    # a decode GEMM (M = 8) of 128x128 tiles, one k-block: the direct epilogue stores 8 rows
    df = pl.concat([_big(m=8, n=4096, k=64, tile_n=128, persistent=False),
                    _big(m=8, n=4096, k=64, tile_n=128, persistent=False, epilogue="tma"),
                    _big(m=1024, n=4096, k=64, tile_n=128)])
    on, no = W.predict(df, PS), W.predict(df, PS, partial_stores=False)
    saved = (128 - 8) * 128 * 2 / c.store_bytes_per_us
    assert no["epilogue_us"][0] - on["epilogue_us"][0] == pytest.approx(saved, rel=1e-9)
    # TMA stores: the staging is whole, the exit's drain (store_exit) and the last drain are 8 rows
    assert on["epilogue_us"][1] < no["epilogue_us"][1]
    assert on.row(2) == no.row(2)


def test_a_two_stage_ring_of_256_row_tiles_waits_for_its_consumers_issue():
    """issue_wait: a sub-partition takes (TK * b / 32) * (TM / 64) wgmmas a k-block and
    queues 8, so a 256-row tile's consumer waits half its multiply issuing the next
    k-block (bf16 and fp8 alike), which a two-stage ring's round trip waits for too; other
    tiles and deeper rings do not, and off nothing moves."""
    def wait(tile_m, stages, tile_k=64, in_bytes=2.0, on=True):
        x = SimpleNamespace(tile_m=np.array([tile_m]), tile_k=np.array([tile_k]), in_bytes=np.array([in_bytes]),
                            stages=np.array([stages]), on=SimpleNamespace(issue_wait=on))
        return float(np.asarray(E.issue_wait(x, np.array([0.6]))).ravel()[0])

    assert wait(256, 2) == pytest.approx(0.3)
    assert wait(256, 2, tile_k=128, in_bytes=1.0) == pytest.approx(0.3)  # fp8: 128-wide k-blocks
    assert wait(128, 2) == wait(64, 2) == wait(256, 3) == wait(256, 4) == 0.0
    assert wait(256, 2, on=False) == 0.0
    slow = C.with_values(PS, "ws-hopper", "bf16", {"ring_extra_latency_us": 1.0})  # the round trip binds
    row = dict(tile_n=128, persistent=True, raster="row", k=8192, stages=2)
    df = pl.concat([_decode(m=256, n=128 * 32, tile_m=256, **row), _decode(m=128, n=128 * 32, tile_m=128, **row),
                    _decode(m=256, n=128 * 32, tile_m=256, **{**row, "stages": 3})])
    on, off = W.predict(df, slow), W.predict(df, slow, issue_wait=False)
    assert on["limiter"][0] == "latency"
    assert on["stage_period_us"][0] > off["stage_period_us"][0]
    assert on.row(1) == off.row(1) and on.row(2) == off.row(2)


def test_a_128_accumulator_tiles_fixup_reads_each_partial_in_two_round_trips():
    """fixup_batches: a consumer thread loads a partial FIXUP_BATCH (64) values at a time,
    one per accumulator it holds (WG_M * TN / 128), so 64x256, 128x256 and 256x128 tiles
    wait two round trips a partial and the others one; the split-K read-back of a
    128x256 tile grows by reads * partial_latency_us, others do not move, off nothing
    moves."""
    def batches(tile_m, tile_n, schedule=0, on=True):
        x = SimpleNamespace(accumulators=accumulators(np.array([tile_m]), np.array([tile_n]), np.array([schedule])),
                            on=SimpleNamespace(fixup_batches=on))
        return float(np.asarray(K.fixup_batches(x)).ravel()[0])

    assert batches(64, 256) == batches(128, 256) == batches(256, 128) == 2.0
    assert batches(128, 128) == batches(64, 128) == batches(256, 64) == batches(64, 64) == 1.0
    assert batches(128, 256, on=False) == 1.0
    df = pl.concat([_decode(tile_m=128, tile_n=256, stages=4, split_k=4), _decode(split_k=4)])
    ps = C.with_values(PS, "ws-hopper", "bf16", {"partial_latency_us": 0.5})
    on, off = W.predict(df, ps), W.predict(df, ps, fixup_batches=False)
    assert on["work_items"][0] == 64  # one wave: the 16 tiles' four reads of 0.5 us each once more
    assert on["reduction_us"][0] - off["reduction_us"][0] == pytest.approx(4 * 0.5, rel=1e-6)
    assert on.row(1) == off.row(1)


def test_the_rows_of_a_last_k_block_that_overhangs_k_join_the_zero_filled_rows():
    """k_tail_fill: where K is not a multiple of TK, a tile's last k-block's A and B boxes
    have every row zero-filled past K: (TM + TN) rows over the tile's KT k-blocks join
    boundary_fill's rows in flight; at a multiple of TK, or off, none do. Over 8 waves of
    128x128 tiles the K tail makes the kernel slower, an aligned K moves nothing."""
    def rows(k, tile_m=128, tile_n=128, on=True):
        x = SimpleNamespace(k=np.array([k]), tile_k=np.array([64]), tile_m=np.array([tile_m]),
                            tile_n=np.array([tile_n]), grid=SimpleNamespace(k_tiles=np.array([-(-k // 64)])),
                            on=SimpleNamespace(k_tail_fill=on))
        return float(np.asarray(E.k_tail_rows(x)).ravel()[0])

    assert rows(32) == 256.0 and rows(96) == 128.0 and rows(480, 64, 256) == 320.0 / 8
    assert rows(64) == rows(512) == 0.0
    assert rows(96, on=False) == 0.0
    df = pl.concat([_decode(m=2048, n=8448, k=k, tile_m=128, tile_n=128, stages=4, persistent=True)
                    for k in (96, 128)])
    on, off = W.predict(df, PS), W.predict(df, PS, k_tail_fill=False)
    assert on["predicted_us"][0] > off["predicted_us"][0]
    assert on.row(1) == off.row(1)


def test_power_clock_stretches_long_busy_runs_only():
    """power_clock adds drop * Tb * (1 - exp(-Tb / tau)), Tb the padded tiles' flops over the
    GPU's multiply rate: nothing a decode GEMM of some us would notice, a share of a long
    busy run, more for tiles that waste more multiplies, and the same at every ring depth
    (the optimizer's split time = A + K(B) relies on it). Off, nothing but the term changes."""
    c = W.default_constants(GPU)
    df = pl.concat([rows(m=[1], n=[4096], k=[4096], tile_m=[64], tile_n=[64]),
                    rows(m=[16384], n=[16384], k=[16384], tile_m=[128], tile_n=[256]),
                    rows(m=[16000], n=[16000], k=[16384], tile_m=[128], tile_n=[256])], how="diagonal_relaxed")
    on, off = W.predict(df, PS), W.predict(df, PS, power_clock=False)
    assert (off["power_us"].to_numpy() == 0).all()
    assert boost(on) == pytest.approx(off["predicted_us"].to_numpy(), rel=1e-12)
    pw, t0 = on["power_us"].to_numpy(), off["predicted_us"].to_numpy()
    assert pw[0] < 1e-3 * t0[0]  # some us: the limiter has not acted
    rate = PS.get("ws-hopper", "bf16").math_flops_per_us * GPU.sms
    busy = 2.0 * 16384 ** 3 / rate
    assert pw[1] == pytest.approx(c.power_clock_drop * busy * (1 - math.exp(-busy / c.power_time_constant_us)))
    assert 0.01 < pw[1] / t0[1] < c.power_clock_drop  # a share of the run, never more than the drop
    padded = 2.0 * (125 * 128) * (63 * 256) * 16384 / rate  # 16000 = 125 x 128 rows, 62.5 -> 63 tiles of 256
    assert pw[2] == pytest.approx(c.power_clock_drop * padded * (1 - math.exp(-padded / c.power_time_constant_us)))
    depths = W.predict(pl.concat([rows(m=[8192], n=[8192], k=[8192], stages=[b]) for b in (2, 4, 7)],
                                 how="diagonal_relaxed"), PS)
    assert depths["power_us"].n_unique() == 1 and depths["power_us"][0] > 0


def test_a_tiles_first_slot_waits_for_the_engine_to_issue_its_split_rows():
    """engine_rows: one SM's TMA engine issues the extra requests of a box row that starts
    off its 32-byte sector one after another, split_row_engine_us a row; a tile's first
    slot waits for them: R * sector_off * split_row_engine_us (R = TM/cn + TN/cm, the rows
    a CTA issues) in the fill's transfer and once a tile in a TMA-store ping-pong tile's
    hold on the engine (benchmarks/short_k_probe.py --rows). Rows on their sector, or the
    effect off, leave every prediction as before."""
    from gemmperf.models.ws_pipelined import effects as E
    from gemmperf.models.ws_pipelined.inputs import Inputs, Switches

    c = W.constants_for(PS, "ws-hopper", "bf16")
    assert 2.0 / GPU.sm_clock_mhz < c.split_row_engine_us < 4.0 / GPU.sm_clock_mhz  # about 3 clocks
    for k, off in ((1016, 0.5), (1008, 0.0), (1024, 0.0)):  # pitch 2032 (16 into a sector), 2016 (on it), 2048
        for cm, cn, rows in ((1, 1, 256), (2, 1, 192), (1, 2, 192)):
            df = _big(m=797, n=19040, k=k, tile_n=128, cluster_m=cm, cluster_n=cn, schedule="pingpong",
                      epilogue="tma")
            _, arr = W.prepare(df, PS)
            x, plain = Inputs.of(arr, Switches(), None), Inputs.of(arr, Switches(engine_rows=False), None)
            bs = x.grid.a_bytes[0] + x.grid.b_bytes[0]
            split = rows * off * c.split_row_engine_us
            assert E.split_rows(x)[0] == pytest.approx(split) and E.split_rows(plain)[0] == 0.0
            assert E.first_slot(x, 0.0, bs)[0] == pytest.approx(bs / c.sm_load_bytes_per_us + split)
            assert E.first_slot(x, 1e3, bs)[0] == 1e3 and E.first_slot(plain, 0.0, bs) == 0.0
            assert EP.tma_engine(x, 1.0, 0.2)[0] == pytest.approx(EP.tma_engine(plain, 1.0, 0.2)[0] + split)
    for k in (1024, 1008):
        df = _big(k=k, tile_n=128, schedule="pingpong", epilogue="tma")
        assert W.predict(df, PS).equals(W.predict(df, PS, engine_rows=False))
    # one k-block a tile on 16 CTAs (the probe's K = 56): the split rows once a tile (and
    # once in the kernel's first fill), no more
    one = dict(m=797, n=19040, k=56, tile_n=128, persistent_ctas=16, schedule="pingpong", epilogue="tma")
    on, off = W.predict(_big(**one), PS), W.predict(_big(**one), PS, engine_rows=False)
    tiles = on["tiles"][0] / 16
    more = on["predicted_us"][0] - off["predicted_us"][0]
    assert 0.5 * tiles * 128 * c.split_row_engine_us < more <= (tiles + 1) * 128 * c.split_row_engine_us + 1e-6
