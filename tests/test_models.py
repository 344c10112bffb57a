"""Tests of the performance models: hand-computed cases, gemm-model's worked examples,
the WS-stage closed form against the event simulator, and the polars wrapper."""

from __future__ import annotations

import math
import subprocess
import sys

import numpy as np
import polars as pl
import pytest

from gemmperf.errors import UserError
from gemmperf.hardware import CATALOG
from gemmperf.models import MODELS, columns, predict, ws_stage
from gemmperf.params import Params, ParamSet
from gemmperf.problem import DTYPE_BYTES, KernelConfig, Shape

# ---------------------------------------------------------------- fixtures

# A small made-up GPU and round parameters so that the expected values are easy by hand.
TOY_GPU = CATALOG["h100-sxm5-80gb"].replace(sms=4)
TOY = Params(t_init_us=2.0, t_epilogue_us=1.0, load_bytes_per_us=1024.0, load_latency_us=0.5,
             math_flops_per_us=2.0**20, math_latency_us=0.25)


def toy_params(**changes) -> ParamSet:
    return ParamSet(TOY_GPU, {("ws-hopper", "bf16"): TOY.replace(**changes)})


def one(m, n, k, **cfg) -> pl.DataFrame:
    return pl.DataFrame([{"m": m, "n": n, "k": k, **cfg}])


# gemm-model's B200 at its locked 1300 MHz clock, 8192-bit x 4 GHz DDR HBM
B200 = CATALOG["b200"].replace(sm_clock_mhz=1300, dram_bytes_per_s=8192 * 2 * 4000e6 / 8)


def b200_params(dtype: str) -> ParamSet:
    p = Params(t_init_us=8000 / 1300, t_epilogue_us=1000 / 1300, load_bytes_per_us=1.0,
               load_latency_us=0.0, math_flops_per_us=B200.flops_per_clk_sm(dtype) * 1300,
               math_latency_us=0.0, l2_hit_rate=0.0)
    return ParamSet(B200, {("ws-hopper", dtype): p})


def close(a, b, rel=1e-9):
    return math.isclose(a, b, rel_tol=rel)


# ---------------------------------------------------------------- registry


def test_registry_names_and_unknown_model():
    assert set(MODELS) == {"sol", "sync", "ws-stage", "ws-persistent", "ws-pipelined"}
    for name, mod in MODELS.items():
        assert mod.NAME == name
    with pytest.raises(UserError, match="unknown model 'roofline'.*sol.*ws-persistent"):
        predict(one(128, 128, 64), toy_params(), "roofline")


def test_package_import_does_not_pull_polars():
    code = "import sys, gemmperf; assert 'polars' not in sys.modules, 'polars imported'"
    subprocess.run([sys.executable, "-c", code], check=True)


# ---------------------------------------------------------------- sol


def test_sol_math_bound_by_hand():
    gpu = CATALOG["h100-sxm5-80gb"]
    out = predict(one(4096, 4096, 4096, dtype="bf16"), ParamSet(gpu), "sol").row(0, named=True)
    math_us = 2 * 4096**3 / (4096 * 132 * 1980e6) * 1e6  # 4096 FLOP/clk/SM bf16
    dram_us = 3 * 4096 * 4096 * 2 / 3.35e12 * 1e6
    assert close(out["math_us"], math_us) and close(out["dram_us"], dram_us)
    assert close(out["predicted_us"], math_us) and out["limiter"] == "math"


def test_sol_dram_bound_nvfp4_counts_scale_factors_and_simt_uses_fma():
    gpu = CATALOG["b200"]
    m, n, k = 8192, 8192, 256
    out = predict(one(m, n, k, dtype="nvfp4", out_dtype="bf16"), ParamSet(gpu), "sol").row(0, named=True)
    nbytes = (m * k + k * n) * 0.5 + (m * k + k * n) / 16 + m * n * 2
    assert close(out["dram_us"], nbytes / 8.0e12 * 1e6)
    assert close(out["math_us"], 2 * m * n * k / (32768 * 148 * 1965e6) * 1e6)
    assert out["limiter"] == "dram" and close(out["predicted_us"], out["dram_us"])
    simt = predict(one(m, n, k, dtype="fp32", family="simt"), ParamSet(gpu), "sol").row(0, named=True)
    assert close(simt["math_us"], 2 * m * n * k / (256 * 148 * 1965e6) * 1e6)


# ---------------------------------------------------------------- sync


def test_sync_by_hand():
    # TM=TN=128, TK=64, bf16: T_LOAD = 128*64*2/1024 + 0.5 = 16.5; T_MATH = 2 + 0.25
    # M=N=256 -> 4 tiles on 4 SMs -> W=1; K=200 -> S=4 (last stage partial, paid fully)
    out = predict(one(256, 256, 200), toy_params(), "sync").row(0, named=True)
    assert (out["waves"], out["k_stages"], out["tiles"]) == (1, 4, 4)
    assert out["stage_load_a_us"] == 16.5 and out["stage_math_us"] == 2.25
    assert out["predicted_us"] == 4 * (16.5 + 16.5 + 2.25) + 1.0 + 2.0 == 144.0
    assert (out["load_us"], out["math_us"], out["epilogue_us"], out["init_us"]) == (132.0, 9.0, 1.0, 2.0)
    assert out["limiter"] == "load"
    fast = predict(one(256, 256, 200), toy_params(load_bytes_per_us=2.0**20), "sync").row(0, named=True)
    assert fast["limiter"] == "math"


def test_tail_shapes_count_padded_tiles():
    # M=129 needs two 128-row tiles, like M=256: 8 tiles on 4 SMs, two waves instead of one
    for name in ("sync", "ws-stage", "ws-persistent"):
        a = predict(one(129, 512, 256), toy_params(), name).row(0, named=True)
        b = predict(one(256, 512, 256), toy_params(), name).row(0, named=True)
        c = predict(one(128, 512, 256), toy_params(), name).row(0, named=True)
        assert a["predicted_us"] == b["predicted_us"] and c["predicted_us"] < a["predicted_us"], name
        assert (a["tiles"], a["waves"], c["tiles"], c["waves"]) == (8, 2, 4, 1), name
    out = predict(one(129, 384, 256), toy_params(), "sync").row(0, named=True)
    assert (out["tiles"], out["waves"]) == (6, 2)


# ---------------------------------------------------------------- ws-stage


def test_simulator_by_hand_double_buffer():
    # a=1, b=2, m=4, B=2: Sa=0,3,7  Sb=1,4,8  Sm=3,7,11 (stage 3's A load waits for slot 1)
    sim = ws_stage.simulate(3, 2, 1.0, 2.0, 4.0, t_epilogue=0.5)
    assert sim["Sa"].tolist() == [0, 3, 7] and sim["Sb"].tolist() == [1, 4, 8]
    assert sim["Sm"].tolist() == [3, 7, 11]
    assert sim["wait"].tolist() == [3, 0, 0] and sim["math_wait_us"] == 3
    assert sim["wave_us"] == 11 + 4 + 0.5
    assert ws_stage.simulate(3, 2, 1.0, 2.0, 4.0, 0.5, wave_end="paper")["wave_us"] == 11.5


def test_simulator_by_hand_single_buffer_serializes():
    # B=1: every load waits for the previous multiply: Sm = 3, 10, 17 = S*L + (S-1)*m
    sim = ws_stage.simulate(3, 1, 1.0, 2.0, 4.0)
    assert sim["Sa"].tolist() == [0, 7, 14] and sim["Sm"].tolist() == [3, 10, 17]
    assert sim["wait"].tolist() == [3, 3, 3]


def test_simulator_by_hand_load_bound():
    # a=b=2, m=1, B=3: the DMA never stalls, Sm(i) = 4i, each multiply waits 3
    sim = ws_stage.simulate(4, 3, 2.0, 2.0, 1.0)
    assert sim["Sm"].tolist() == [4, 8, 12, 16] and sim["wait"].tolist() == [4, 3, 3, 3]


def test_closed_form_equals_simulator_random():
    rng = np.random.default_rng(20261122)
    checked = 0
    for trial in range(3000):
        S = int(rng.integers(1, 301))
        B = int(rng.integers(1, 9))
        if trial % 3 == 0:  # small integers: many exact ties between L and T_MATH
            ta, tb, tm = (float(x) for x in rng.integers(1, 5, size=3))
        elif trial % 3 == 1:  # wide dynamic range
            ta, tb, tm = (float(x) for x in 10.0 ** rng.uniform(-3, 3, size=3))
        else:  # T_MATH exactly equal to L
            ta, tb = (float(x) for x in rng.uniform(0.01, 5, size=2))
            tm = ta + tb
        sim = ws_stage.simulate(S, B, ta, tb, tm)
        last, wait = ws_stage.closed_form(S, B, ta, tb, tm)
        assert math.isclose(sim["last_math_start_us"], float(last), rel_tol=1e-12), (S, B, ta, tb, tm)
        # the simulator's wait sum subtracts large timestamps: tolerance scales with Sm(S)
        assert math.isclose(sim["math_wait_us"], float(wait), rel_tol=1e-12,
                            abs_tol=1e-12 * sim["last_math_start_us"]), (S, B, ta, tb, tm)
        checked += 1
    assert checked == 3000


def test_closed_form_vectorized_matches_simulator_for_every_B():
    rng = np.random.default_rng(7)
    S = rng.integers(1, 301, size=400)
    B = np.tile(np.arange(1, 9), 50)
    ta, tb, tm = rng.uniform(0.05, 3, size=(3, 400))
    last, wait = ws_stage.closed_form(S, B, ta, tb, tm)
    for i in range(400):
        sim = ws_stage.simulate(S[i], B[i], ta[i], tb[i], tm[i])
        assert math.isclose(sim["last_math_start_us"], last[i], rel_tol=1e-12)
        assert math.isclose(sim["math_wait_us"], wait[i], rel_tol=1e-12,
                            abs_tol=1e-12 * last[i])


def test_ws_stage_predict_by_hand():
    # same stage times as test_sync_by_hand: L = 33 > T_MATH = 2.25, B = 2
    out = predict(one(256, 256, 200, stages=2), toy_params(), "ws-stage").row(0, named=True)
    last = 33 + 3 * 33  # Sm(4)
    assert out["wave_us"] == last + 2.25 + 1.0
    assert out["predicted_us"] == last + 2.25 + 1.0 + 2.0
    assert out["total_math_wait_us"] == 33 + 3 * (33 - 2.25)
    assert out["limiter"] == "load"
    # single buffer: loads and multiplies serialize, 4*33 + 3*2.25
    b1 = predict(one(256, 256, 200, stages=1), toy_params(), "ws-stage").row(0, named=True)
    assert b1["wave_us"] == 4 * 33 + 3 * 2.25 + 2.25 + 1.0
    # math bound: 16x faster loads, no latency -> L = 2 * 1.0 < T_MATH = 2.25; MATH never waits
    mb = predict(one(256, 256, 200, stages=4), toy_params(load_bytes_per_us=16384.0, load_latency_us=0.0),
                 "ws-stage").row(0, named=True)
    assert mb["limiter"] == "math"
    assert mb["wave_us"] == 2.0 + 3 * 2.25 + 2.25 + 1.0
    assert mb["total_math_wait_us"] == 2.0
    # epilogue longer than the K loop
    ep = predict(one(256, 256, 64), toy_params(t_epilogue_us=100.0), "ws-stage").row(0, named=True)
    assert ep["limiter"] == "epilogue"


def test_ws_stage_paper_wave_end_drops_last_multiply():
    a = one(256, 512, 1024, stages=3)
    arrs = columns.arrays(pl.concat([columns.fill_configs(a).select(columns.INT_COLUMNS),
                                    columns.param_columns(columns.fill_configs(a), toy_params())],
                                   how="horizontal"), ws_stage.INPUTS)
    ours = ws_stage.evaluate(**arrs)
    paper = ws_stage.evaluate(**arrs, wave_end="paper")
    w = ours["waves"][0]
    assert w == 2
    assert math.isclose(ours["predicted_us"][0] - paper["predicted_us"][0],
                        w * ours["stage_math_us"][0], rel_tol=1e-12)
    with pytest.raises(UserError, match="wave_end"):
        ws_stage.evaluate(**arrs, wave_end="late")


def test_timeline_matches_prediction_and_dependencies():
    params = toy_params()
    shape = Shape(512, 256, 1000, "bf16")
    cfg = KernelConfig(stages=3)
    bars = ws_stage.timeline(cfg, params, shape)
    row = {"m": 512, "n": 256, "k": 1000, "stages": 3}
    pred = predict(pl.DataFrame([row]), params, "ws-stage").row(0, named=True)
    S, W = pred["k_stages"], pred["waves"]
    assert (S, W) == (16, 2)
    assert len(bars) == W * (3 * S + 1)
    assert math.isclose(max(b["end_us"] for b in bars), pred["predicted_us"], rel_tol=1e-12)
    assert bars == ws_stage.timeline(row, params)  # a plain row gives the same chart
    for w in range(W):
        mine = {(b["warp"], b["stage"]): b for b in bars if b["wave"] == w}
        for i in range(1, S + 1):
            assert mine["MATH", i]["start_us"] >= mine["DMA-B", i]["end_us"] - 1e-9
            assert mine["DMA-B", i]["start_us"] >= mine["DMA-A", i]["end_us"] - 1e-9
            if i > 3:  # buffer slot reuse
                assert mine["DMA-A", i]["start_us"] >= mine["MATH", i - 3]["end_us"] - 1e-9
        assert mine["EPILOGUE", 0]["start_us"] == mine["MATH", S]["end_us"]
    assert {b["warp"] for b in bars} == {"DMA-A", "DMA-B", "MATH", "EPILOGUE"}
    assert len(ws_stage.timeline(cfg, params, shape, max_waves=1)) == 3 * S + 1


# ---------------------------------------------------------------- ws-persistent


def _example(out, total, setup, first, limiter, wave, last):
    assert math.isclose(out["predicted_us"], total, rel_tol=1e-9)
    assert math.isclose(out["setup_us"], setup, rel_tol=1e-12)
    assert math.isclose(out["first_dma_us"], first, rel_tol=1e-9)
    assert out["limiter"] == limiter
    got_wave = (out["wave_dma_us"], out["wave_math_us"], out["wave_epilogue_us"])
    got_last = (out["last_wave_dma_us"], out["last_wave_math_us"], out["last_wave_epilogue_us"])
    for g, e in zip(got_wave + got_last, wave + last):
        assert math.isclose(g, e, rel_tol=1e-9), (g, e)
    assert out["last_epilogue_us"] == out["last_wave_epilogue_us"]


def test_gemm_model_example_nvfp4_dma_bound():
    configs = one(4096, 4096, 16384, dtype="nvfp4", out_dtype="fp32", tile_m=128, tile_n=64,
                  tile_k=64, cluster_m=2, cluster_n=1, persistent=True)
    out = predict(configs, b200_params("nvfp4"), "ws-persistent").row(0, named=True)
    _example(out, 376.1631394230768, 6.153846153846154, 0.1040625, "dma",
             (26.64, 6.3015384615384615, 1.3612307692307695),
             (22.32, 6.3015384615384615, 1.2652307692307694))
    # 2048 tiles on 148 SMs: 13 full waves and 124 CTAs left over
    assert (out["tiles"], out["full_waves"], out["waves"], out["last_wave_sms"]) == (2048, 13, 14, 124)


def test_gemm_model_example_fp8_epilogue_bound():
    # gemm-model's example writes fp8 C (1 byte); a row without out_dtype is the kernel's
    # output type (fp8 -> bf16, problem.OUT_DTYPES), so the example names its own
    configs = one(4096, 7168, 257, dtype="fp8", out_dtype="fp8", tile_m=64, tile_n=256, tile_k=32,
                  cluster_m=2, cluster_n=1, persistent=True)
    out = predict(configs, b200_params("fp8"), "ws-persistent").row(0, named=True)
    _example(out, 20.65007692307692, 6.153846153846154, 0.111, "epilogue",
             (0.89146875, 0.3953846153846154, 1.0652307692307692),
             (0.096375, 0.3953846153846154, 0.8012307692307692))
    assert (out["tiles"], out["full_waves"], out["waves"]) == (1792, 12, 13)


def test_ws_persistent_l2_hits_and_math_limiter():
    base = one(4096, 4096, 16384, dtype="nvfp4", out_dtype="fp32", tile_m=128, tile_n=64,
               tile_k=64, cluster_m=2, cluster_n=1)
    ps = b200_params("nvfp4")
    ps.entries[("ws-hopper", "nvfp4")] = ps.get("ws-hopper", "nvfp4").replace(l2_hit_rate=0.9)
    out = predict(base, ps, "ws-persistent").row(0, named=True)
    assert math.isclose(out["wave_dma_us"], 26.64 * 0.1, rel_tol=1e-12)
    assert out["limiter"] == "math"  # 2.664 < 6.30 us of MMA per wave
    # one partial wave only: tiles < SMs, every term uses the active SMs
    small = predict(base.with_columns(m=pl.lit(256), n=pl.lit(640)), ps, "ws-persistent").row(0, named=True)
    assert (small["tiles"], small["full_waves"], small["waves"], small["wave_sms"]) == (20, 0, 1, 20)
    assert small["wave_dma_us"] == small["last_wave_dma_us"]


# ---------------------------------------------------------------- the polars wrapper


def _mixed_table(n: int = 240, seed: int = 1) -> pl.DataFrame:
    rng = np.random.default_rng(seed)
    combos = [("ws-hopper", "bf16"), ("ws-hopper", "fp16"), ("ws-ampere", "bf16"),
              ("simt", "fp32"), ("ws-hopper", "fp8")]
    pick = rng.integers(0, len(combos), size=n)
    return pl.DataFrame({
        "m": rng.integers(1, 9000, size=n), "n": rng.integers(1, 9000, size=n),
        "k": rng.integers(1, 9000, size=n),
        "family": [combos[i][0] for i in pick], "dtype": [combos[i][1] for i in pick],
        "tile_m": rng.choice([64, 128, 256], size=n), "tile_n": rng.choice([64, 128, 256], size=n),
        "tile_k": rng.choice([32, 64, 128], size=n), "stages": rng.integers(1, 9, size=n),
        "cluster_m": rng.choice([1, 2], size=n), "cluster_n": rng.choice([1, 2], size=n),
        "persistent": rng.integers(0, 2, size=n).astype(bool),
        "raster": ["row"] * n, "note": [f"r{i}" for i in range(n)],
    })


@pytest.mark.parametrize("name", list(MODELS))
def test_predict_mixed_table_matches_evaluate(name):
    gpu = CATALOG["h100-sxm5-80gb"]
    fitted = ParamSet(gpu).get("ws-hopper", "bf16").replace(t_init_us=3.5, l2_hit_rate=0.3)
    params = ParamSet(gpu, {("ws-hopper", "bf16"): fitted})
    table = _mixed_table()
    out = MODELS[name].predict(table, params)
    mod = MODELS[name]
    assert out.height == table.height
    assert out.columns[: table.width] == table.columns  # input columns first, unchanged
    assert out.select(table.columns).equals(table.with_columns(pl.col("tile_m", "tile_n", "tile_k",
                                                                      "cluster_m", "cluster_n").cast(pl.Int64)))
    assert out.schema["predicted_us"] == pl.Float64 and out.schema["limiter"] == pl.Utf8
    assert "out_dtype" in out.columns and "mode" in out.columns  # filled defaults
    us_cols = [c for c in out.columns if c.endswith("_us")]
    assert len(us_cols) >= 3
    assert not out.select(pl.col(us_cols).is_nan().any()).row(0).__contains__(True)
    assert out.select(pl.col(us_cols).is_null().any()).row(0) == (False,) * len(us_cols)
    assert (out["predicted_us"] > 0).all()
    assert set(out["limiter"].unique()) <= set(mod.LIMITERS)

    # row by row, evaluate() on scalars built by hand gives the same numbers
    for r in out.sample(12, seed=3).iter_rows(named=True):
        p = params.get(r["family"], r["dtype"])
        scal = {**{c: np.array([r[c]]) for c in columns.INT_COLUMNS},
                **{c: np.array([getattr(p, c)]) for c in ("t_init_us", "t_epilogue_us",
                                                          "load_bytes_per_us", "load_latency_us",
                                                          "math_flops_per_us", "math_latency_us",
                                                          "l2_hit_rate")},
                "in_bytes": np.array([DTYPE_BYTES[r["dtype"]]], dtype=float),
                "out_bytes": np.array([DTYPE_BYTES[r["out_dtype"]]], dtype=float),
                "sf_bytes_per_elem": np.array([0.0]), "sms": np.array([gpu.sms]),
                "dram_bytes_per_us": np.array([gpu.dram_bytes_per_s / 1e6]),
                "peak_flops_per_us": np.array([gpu.peak_flops(r["dtype"], r["family"] != "simt") / 1e6])}
        if name == "ws-pipelined":  # its inputs include per-family model constants
            scal = mod.prepare(table.filter(pl.col("m") == r["m"], pl.col("n") == r["n"], pl.col("k") == r["k"],
                                            pl.col("family") == r["family"], pl.col("dtype") == r["dtype"],
                                            pl.col("tile_m") == r["tile_m"], pl.col("tile_n") == r["tile_n"]).head(1),
                               params)[1]
        ev = mod.evaluate(**{k: scal[k] for k in mod.INPUTS})
        assert ev["predicted_us"][0] == r["predicted_us"]
        assert mod.LIMITERS[ev["limiter"][0]] == r["limiter"]
    # the fitted (ws-hopper, bf16) entry is used for its rows only
    if "init_us" in out.columns or "setup_us" in out.columns:
        col = "init_us" if "init_us" in out.columns else "setup_us"
        by = out.group_by("family", "dtype").agg(pl.col(col).unique())
        for fam, dt, vals in by.iter_rows():
            assert vals == ([3.5] if (fam, dt) == ("ws-hopper", "bf16") else [2.0])


def test_predict_fills_defaults_and_repredicts():
    params = ParamSet(CATALOG["h100-sxm5-80gb"])
    out = predict(pl.DataFrame({"m": [1024], "n": [1024], "k": [1024]}), params, "ws-stage")
    d = KernelConfig()
    row = out.row(0, named=True)
    assert (row["family"], row["dtype"], row["tile_m"], row["stages"], row["out_dtype"]) == \
        (d.family, d.dtype, d.tile_m, d.stages, d.dtype)
    again = predict(out, params, "ws-stage")  # earlier prediction columns are replaced
    assert again.columns == out.columns and again.equals(out)
    empty = predict(pl.DataFrame({"m": [], "n": [], "k": []}, schema={c: pl.Int64 for c in "mnk"}),
                    params, "sol")
    assert empty.height == 0 and "predicted_us" in empty.columns


@pytest.mark.parametrize("bad, message", [
    (pl.DataFrame({"m": [1], "n": [1]}), "missing column"),
    (pl.DataFrame({"m": [1], "n": [1], "k": [1], "dtype": ["fp7"]}), "dtype = 'fp7'"),
    (pl.DataFrame({"m": [1], "n": [1], "k": [1], "tile_m": [0]}), "tile_m = 0"),
])
def test_predict_bad_tables(bad, message):
    with pytest.raises(UserError, match=message):
        predict(bad, ParamSet(CATALOG["h100-sxm5-80gb"]), "sync")


def test_sol_and_sync_are_bounds_of_ws_stage_on_the_same_table():
    params = ParamSet(CATALOG["h100-sxm5-80gb"])
    table = _mixed_table(seed=5)
    s = predict(table, params, "sync")["predicted_us"]
    w = predict(table, params, "ws-stage")["predicted_us"]
    # overlapping loads with math never makes a wave slower than doing them in turn
    assert (w <= s * (1 + 1e-12)).all()
