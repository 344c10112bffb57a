"""The fit recovers known parameters from microbenchmarks generated with noise."""

import numpy as np
import polars as pl
import pytest

from gemmperf.errors import UserError
from gemmperf.fit.microbench import fit_family, fit_paramset
from gemmperf.hardware import CATALOG

TRUE = dict(t_init_us=2.5, t_epilogue_us=1.2, load_bytes_per_us=20000.0, load_latency_us=0.4,
            math_flops_per_us=6.0e6, math_latency_us=0.05)


def synthetic(noise=0.005, seed=0):
    rng = np.random.default_rng(seed)
    jitter = lambda t: t * (1 + noise * rng.standard_normal())
    rows = []
    base = dict(family="ws-hopper", dtype="bf16", tile_k=64, stages=4, status="ok")
    for _ in range(8):
        rows.append(dict(base, kind="init", tile_m=128, tile_n=128, k_stages=0, time_us=jitter(TRUE["t_init_us"])))
        rows.append(dict(base, kind="epilogue", tile_m=128, tile_n=128, k_stages=0,
                         time_us=jitter(TRUE["t_init_us"] + TRUE["t_epilogue_us"])))
    for tm, tn in [(64, 64), (128, 64), (128, 128), (128, 256), (256, 128)]:
        for S in (4, 16, 64, 256):
            load = ((tm + tn) * 64 * 2) / TRUE["load_bytes_per_us"] + 2 * TRUE["load_latency_us"]
            rows.append(dict(base, kind="load", tile_m=tm, tile_n=tn, k_stages=S,
                             time_us=jitter(TRUE["t_init_us"] + S * load)))
            math = 2 * tm * tn * 64 / TRUE["math_flops_per_us"] + TRUE["math_latency_us"]
            rows.append(dict(base, kind="math", tile_m=tm, tile_n=tn, k_stages=S,
                             time_us=jitter(TRUE["t_init_us"] + S * math)))
    rows.append(dict(base, kind="load", tile_m=64, tile_n=64, k_stages=8, time_us=1e9, status="wrong_result"))
    return pl.DataFrame(rows)


def test_fit_recovers_known_parameters_with_uncertainties():
    p = fit_family(synthetic(), CATALOG["h100-sxm5-80gb"], "ws-hopper", "bf16")
    assert p.source == "fitted"
    for name, value in TRUE.items():
        got = getattr(p, name)
        tol = 0.05 * value if name not in ("math_latency_us", "load_latency_us") else 0.3 * value
        assert abs(got - value) <= tol, (name, got, value)
        assert p.uncertainty[name] >= 0
    assert p.quality["load_r2"] > 0.99 and p.quality["math_r2"] > 0.99


def test_fit_without_noise_is_exact():
    p = fit_family(synthetic(noise=0.0), CATALOG["h100-sxm5-80gb"], "ws-hopper", "bf16")
    for name, value in TRUE.items():
        assert getattr(p, name) == pytest.approx(value, rel=1e-6), name


def test_missing_kinds_are_a_clear_error(tmp_path):
    df = synthetic().filter(pl.col("kind") != "math")
    with pytest.raises(UserError, match="lack math"):
        fit_family(df, CATALOG["h100-sxm5-80gb"], "ws-hopper", "bf16")
    path = tmp_path / "mb.csv"
    synthetic().write_csv(path)
    pset = fit_paramset(CATALOG["h100-sxm5-80gb"], path, ["ws-hopper", "simt"], "bf16")
    assert pset.entries[("ws-hopper", "bf16")].source == "fitted"
    assert pset.entries[("simt", "fp32")].source == "default"
