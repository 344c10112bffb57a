"""nvMatmulHeuristics beside gemmperf (models/nvmmh.py): its runtime estimate of measured
configurations, called through the C API with the GPU passed explicitly, and a typed
"not available" answer, never an exception, without the package."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from gemmperf.errors import UserError
from gemmperf.hardware import get_gpu
from gemmperf.models import nvmmh
from gemmperf.optimize import tilings
from gemmperf.params import ParamSet
from gemmperf.problem import KernelConfig, Shape
from gemmperf.tables import read_measurements, valid_rows

ROOT = Path(__file__).resolve().parent.parent
H100, H200, A100 = get_gpu("h100-sxm5-80gb"), get_gpu("h200-sxm-141gb"), get_gpu("a100-sxm4-80gb")
SHIPPED = ROOT / "results" / "h100-sxm5-80gb" / "shipped" / "measurements" / "squares.csv"

_why = nvmmh.unavailable()
needs_library = pytest.mark.skipif(_why is not None, reason=str(_why))


def rows(*specs) -> pl.DataFrame:
    """A measurement-like frame: one row per (m, n, k, KernelConfig fields)."""
    out = []
    for (m, n, k), fields in specs:
        out.append({"m": m, "n": n, "k": k, **KernelConfig(**fields).as_dict()})
    return pl.DataFrame(out)


BF16 = {"tile_m": 128, "tile_n": 128, "tile_k": 64, "stages": 4}
FP8 = {"dtype": "fp8", "tile_m": 128, "tile_n": 128, "tile_k": 128, "stages": 4}


# ------------------------------------------------------------------ with the library


@needs_library
def test_estimates_are_finite_positive_seconds_that_grow_with_k():
    shapes = [(4096, 4096, 4096), (2048, 8192, 1024), (1024, 1024, 2048)]
    df = rows(*[(s, BF16) for s in shapes], *[((m, n, 2 * k), BF16) for m, n, k in shapes])
    s = nvmmh.estimate_seconds(df, H100)
    assert isinstance(s, np.ndarray) and s.shape == (6,)
    assert np.all(np.isfinite(s)) and np.all(s > 0)
    assert np.all(s < 1e-2)  # milliseconds at most: seconds, not microseconds
    ratio = s[3:] / s[:3]  # twice the K: more time, at most about twice as much
    assert np.all(ratio > 1.2) and np.all(ratio < 2.5), ratio
    # 4096^3 bf16 on an H100 SXM: within 2x of the tensor cores' 989 TFLOP/s
    flops = 2 * 4096**3
    assert 0.5 * flops / 989e12 < s[0] < 2 * flops / 989e12


@needs_library
def test_bf16_and_fp8_differ_and_fp8_is_faster_when_compute_bound():
    df = rows(((8192, 8192, 8192), BF16), ((8192, 8192, 8192), FP8))
    s = nvmmh.estimate_seconds(df, H100)
    assert s[1] < 0.8 * s[0]


@needs_library
def test_the_gpu_is_passed_explicitly():
    df = rows(((4096, 4096, 4096), BF16), ((1024, 1024, 1024), BF16))
    h100, h200 = nvmmh.estimate_seconds(df, H100), nvmmh.estimate_seconds(df, "h200-sxm-141gb")
    assert np.all(np.isfinite(h200)) and not np.allclose(h100, h200)
    for gpu in ("no-such-gpu", H100.replace(slug="h100-pcie-custom")):
        answer = nvmmh.estimate_seconds(df, gpu)
        assert isinstance(answer, nvmmh.Unavailable) and "no predefined profile" in answer.reason
    assert isinstance(nvmmh.picks(df, "no-such-gpu"), nvmmh.Unavailable)
    assert isinstance(nvmmh.top_configs(Shape(64, 64, 64), "no-such-gpu"), nvmmh.Unavailable)


@needs_library
def test_what_it_cannot_express_is_nan_with_a_reason():
    cannot = [((4096, 4096, 4096), {**BF16, "persistent": True, "stream_k": True}),
              ((4096, 4096, 4096), {**BF16, "mode": "load-only"}),
              ((512, 512, 512), {"family": "simt", "dtype": "fp32", "tile_m": 64, "tile_n": 64, "tile_k": 16}),
              ((4096, 4096, 4096), {**BF16, "tile_m": 256, "tile_n": 256, "tile_k": 64, "stages": 8})]  # 512 KB
    t = nvmmh.estimate_table(rows(*cannot), H100)
    assert t.get_column("nvmmh_us").null_count() == len(cannot)
    why = t.get_column("nvmmh_why").to_list()
    assert "stream-K" in why[0] and "mode load-only" in why[1] and "simt" in why[2] and "illegal" in why[3]
    # ws-hopper does not run on an A100: no estimate there, though the GPU has a profile
    a100 = nvmmh.estimate_table(rows(((4096, 4096, 4096), BF16)), A100)
    assert a100.get_column("nvmmh_us").null_count() == 1 and "does not run" in a100.get_column("nvmmh_why")[0]


@needs_library
def test_what_the_estimate_ignores_and_what_it_sees():
    """The module doc's claims: stages, persistence and the schedule do not move the
    estimate; cluster, raster, group and split-K do."""
    base = ((16384, 2048, 4096), BF16)
    same = [((16384, 2048, 4096), {**BF16, "stages": 6}), ((16384, 2048, 4096), {**BF16, "persistent": True}),
            ((16384, 2048, 4096), {**BF16, "schedule": "pingpong"})]
    seen = [((16384, 2048, 4096), {**BF16, "cluster_m": 2, "cluster_n": 2}),
            ((16384, 2048, 4096), {**BF16, "raster": "column"}),
            ((16384, 2048, 4096), {**BF16, "raster": "grouped", "group_m": 4}),
            ((16384, 2048, 4096), {**BF16, "split_k": 2})]
    s = nvmmh.estimate_seconds(rows(base, *same, *seen), H100)
    assert np.all(s[1:4] == s[0])
    assert np.all(s[4:] != s[0])


@needs_library
def test_ranking_and_picks_among_the_rows():
    configs = [{**BF16, "tile_m": tm, "tile_n": tn, "stages": st}
               for tm, tn in ((64, 64), (128, 128), (128, 256)) for st in (3, 4)]
    df = rows(*[((4096, 4096, 4096), c) for c in configs], *[((256, 256, 8192), c) for c in configs])
    t = nvmmh.estimate_table(df, H100)
    assert t.height == df.height and t.get_column("nvmmh_rank").min() == 1
    p = nvmmh.picks(df, H100)
    assert p.height == 2 and set(p.get_column("nvmmh_ranked")) == {len(configs)}
    for shape in p.iter_rows(named=True):
        mine = t.filter((pl.col("m") == shape["m"]) & (pl.col("k") == shape["k"]))
        assert shape["nvmmh_us"] == mine.get_column("nvmmh_us").min()
        assert shape["nvmmh_tied"] == 2  # the two stage counts tie: stages do not move the estimate
        assert shape["stages"] == 3  # ties broken by the configuration columns


@needs_library
def test_every_shipped_ws_hopper_row_without_a_k_split_gets_an_estimate():
    meas = valid_rows(read_measurements(SHIPPED))
    t = nvmmh.estimate_table(meas, H100)
    hopper = t.filter(pl.col("family") == "ws-hopper")
    # every configuration without a K split gets an estimate; of split-K and stream-K ones,
    # the library answers some (its split-K kinds) and not others
    plain = hopper.filter((pl.col("split_k") == 1) & ~pl.col("stream_k"))
    assert plain.height > 100 and plain.get_column("nvmmh_us").null_count() == 0
    ratio = (plain.get_column("nvmmh_us") / plain.get_column("time_us")).median()
    assert 0.25 < ratio < 4  # the same order of magnitude as the measured kernels


@needs_library
def test_top_configs_and_the_tilings_columns():
    top = nvmmh.top_configs(Shape(4096, 4096, 4096), H100, count=3)
    assert 1 <= len(top) <= 3 and all(t["nvmmh_us"] > 0 for t in top)
    assert [t["nvmmh_us"] for t in top] == sorted(t["nvmmh_us"] for t in top)
    assert isinstance(nvmmh.top_configs(Shape(4096, 4096, 4096), H100, "simt"), nvmmh.Unavailable)
    t = tilings.tilings_table([Shape(1024, 1024, 1024)], H100, ParamSet(H100), ["ws-hopper"], "ws-stage", nvmmh=True)
    assert set(tilings.NVMMH_COLUMNS) <= set(t.columns) and t.get_column("nvmmh_runtime_us")[0] > 0


@needs_library
def test_another_library_version_is_refused(monkeypatch):
    monkeypatch.setattr(nvmmh, "_LOADED", {})
    monkeypatch.setattr(nvmmh, "VERSION", (9, 9))
    answer = nvmmh.estimate_seconds(rows(((64, 64, 64), BF16)), H100)
    assert isinstance(answer, nvmmh.Unavailable) and "version" in answer.reason


# ------------------------------------------------------------------ without it


def test_without_the_package_every_answer_is_unavailable(monkeypatch):
    monkeypatch.setitem(sys.modules, "nvMatmulHeuristics", None)  # import raises ImportError
    df = rows(((4096, 4096, 4096), BF16))
    answers = [nvmmh.unavailable(), nvmmh.unavailable(H100), nvmmh.estimate_seconds(df, H100),
               nvmmh.estimate_table(df, H100), nvmmh.picks(df, H100), nvmmh.top_configs(Shape(64, 64, 64), H100)]
    for answer in answers:
        assert isinstance(answer, nvmmh.Unavailable), answer
        assert "nvidia-matmul-heuristics" in answer.reason and ".[nvmmh]" in answer.reason
    assert str(answers[0]).startswith("nvMatmulHeuristics not available: ")


@needs_library
def test_rows_without_configuration_columns_are_a_user_error():
    with pytest.raises(UserError, match="lack column"):
        nvmmh.estimate_seconds(pl.DataFrame({"m": [1], "n": [1], "k": [1]}), H100)
