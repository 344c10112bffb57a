"""benchmarks/model_ceiling.py's --anatomy on made-up tables: taking out a group's median
error removes exactly the error that is a factor of that group, and the buckets split the
rows and the error without losing any."""

import math
from pathlib import Path

import polars as pl
import pytest

from scripts import load_script

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def ceiling():
    return load_script(ROOT / "benchmarks" / "model_ceiling.py")


def _table(factor_of_tile: dict, scatter: float = 0.0) -> pl.DataFrame:
    """Two tiles x two shapes x three stages; predicted = measured x the tile's factor, and
    x (1 + scatter) where tile, stages and shape add up odd (a pattern no group owns: every
    group holds rows of both parities)."""
    rows = []
    for tile, stages, shape in ((t, s, m) for t in factor_of_tile for s in (2, 3, 4) for m in (64, 128)):
        wobble = 1.0 + scatter * ((tile // 64 + stages + shape // 64) % 2)
        rows.append({"tile_m": tile, "tile_n": 128, "schedule": "cooperative", "cluster_m": 1, "cluster_n": 1,
                     "stages": stages, "epilogue": "tma", "persistent": True, "split_k": 1, "stream_k": False,
                     "m": shape, "n": 256, "k": 512, "time_us": 10.0 * shape,
                     "predicted_us": 10.0 * shape * factor_of_tile[tile] * wobble})
    return pl.DataFrame(rows)


def test_a_factor_per_tile_is_all_the_tile_group_takes_out(ceiling):
    table = _table({64: 1.2, 128: 0.9})
    out = {name: (groups, mape) for name, groups, mape in ceiling.anatomy(pl, table)}
    assert out["none"][1] == pytest.approx((20.0 + 10.0) / 2)
    assert out["tile"] == (2, pytest.approx(0.0, abs=1e-9))
    assert out["+ stages"][0] == 6 and out["+ stages"][1] == pytest.approx(0.0, abs=1e-9)
    # the shape does not own the tile's factor: medians over both tiles leave it
    assert out["shape (m, n, k)"][1] > 5.0


def test_scatter_no_group_owns_is_left(ceiling):
    table = _table({64: 1.0, 128: 1.0}, scatter=0.1)
    out = {name: mape for name, _, mape in ceiling.anatomy(pl, table)}
    assert out["none"] == pytest.approx(5.0)
    # every group holds as many wobbled rows as plain ones: its median moves half way, the
    # scatter stays
    assert all(mape == pytest.approx(5.0, rel=0.1) for mape in out.values())


def test_buckets_split_the_rows_and_the_error(ceiling):
    table = _table({64: 1.2, 128: 0.9})  # times 640 and 1280 us
    out = ceiling.buckets(pl, table, "time_us", (1000.0,))
    assert out.get_column("bucket").to_list() == ["(-inf, 1000]", "(1000, inf]"]
    assert out.get_column("rows").to_list() == [6, 6]
    assert out.get_column("error_share").sum() == pytest.approx(1.0)
    assert out.get_column("geomean").to_list() == pytest.approx([math.sqrt(1.2 * 0.9)] * 2)
    # an empty bucket is left out, not reported as a number
    assert ceiling.buckets(pl, table, "time_us", (100.0, 1000.0)).height == 2
