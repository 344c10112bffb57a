"""benchmarks/cross_gpu.py without the shipped data: two GPUs' rows paired by testlist
and configuration; their errors split into what both share and what each has alone; the
shared-worst rows point the same way on both; each value carried is costed alone."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import polars as pl
import pytest

from gemmperf.hardware import get_gpu
from gemmperf.params import ParamSet, default_params
from gemmperf.tables import CONFIG_KEY
from scripts import load_script

ROOT = Path(__file__).resolve().parent.parent
H100 = get_gpu("h100-sxm5-80gb")


@pytest.fixture(scope="module")
def cg():
    return load_script(ROOT / "benchmarks" / "cross_gpu.py")


def _table(cg, errors, times, shapes):
    """A prediction table: one configuration per row (tile_m counts the rows), its error."""
    n = len(errors)
    cols = {key: [1] * n for key in CONFIG_KEY}
    cols["tile_m"] = list(range(n))
    return pl.DataFrame({**cols, "testlist": ["t"] * n, "shape": shapes, "time_us": times,
                         "predicted_us": [t * float(np.exp(e)) for t, e in zip(times, errors)]})


def test_rows_pair_by_testlist_and_configuration(cg):
    a = _table(cg, [0.1, 0.2, 0.3], [1.0, 2.0, 3.0], ["s", "s", "s"])
    b = _table(cg, [0.1, -0.2], [1.5, 2.5], ["s", "s"]).with_columns(
        pl.Series("testlist", ["t", "other"]))
    pair = cg.paired(pl, a, b)
    assert pair.height == 1
    row = pair.row(0, named=True)
    assert (row["time_a_us"], row["time_b_us"]) == (1.0, 1.5)
    assert row["err_a"] == pytest.approx(0.1) and row["err_b"] == pytest.approx(0.1)


def test_shared_and_own_parts_are_recovered(cg):
    rng = np.random.default_rng(3)
    shapes = np.repeat(["p", "q", "r", "s"], 50)
    offset = {"p": 0.1, "q": -0.1, "r": 0.05, "s": -0.05}
    shared = np.array([offset[s] for s in shapes]) + rng.normal(0, 0.08, shapes.size)
    own = rng.normal(0, 0.02, shapes.size)
    times = list(rng.uniform(1, 10, shapes.size))
    a = _table(cg, list(shared + own), times, list(shapes))
    b = _table(cg, list(shared - own), times, list(shapes))
    f = cg.shared_errors(pl, cg.paired(pl, a, b))
    assert f["rows"] == shapes.size and f["shapes"] == 4
    assert f["shared_sd"] == pytest.approx(shared.std(ddof=1))
    assert f["own_sd"] == pytest.approx(own.std(ddof=1))
    assert f["shared_shape_sd"] > f["own_shape_sd"]  # the offsets per shape are shared
    assert f["shared_within_sd"] == pytest.approx(0.08, rel=0.15)
    assert f["correlation"] == pytest.approx(np.corrcoef(shared + own, shared - own)[0, 1])
    assert f["own_mape_pct"] == pytest.approx(np.mean(np.abs(np.exp(own) - 1)) * 100)
    assert f["mape_a_pct"] > f["own_mape_pct"]


def test_the_shared_worst_point_the_same_way(cg):
    a = _table(cg, [0.5, -0.45, 0.3, 0.9], [1.0] * 4, ["s"] * 4)
    b = _table(cg, [0.4, -0.6, 0.2, -0.9], [1.0] * 4, ["s"] * 4)
    worst = cg.shared_worst(pl, cg.paired(pl, a, b), 2)
    assert worst.get_column("tile_m").to_list() == [1, 0]  # the smaller size 0.45, then 0.4; 0.9 / -0.9 disagree


def test_each_carried_value_is_costed_alone(cg):
    key = ("ws-hopper", "bf16")
    p = default_params(H100, *key)
    own = ParamSet(gpu=H100, entries={key: p.replace(t_init_us=1.0, constants={"cta_launch_us": 0.1,
                                                                              "cluster_jitter": 0.1})})
    carried = ParamSet(gpu=H100, entries={key: p.replace(t_init_us=1.5, constants={"cta_launch_us": 0.1,
                                                                                  "cluster_jitter": 0.3})})
    seen = []

    def mape(params, rows):  # a stand-in score: how far each value is from the own fit's
        q = params.get(*key)
        seen.append(q)
        return abs(q.t_init_us - 1.0) * 10 + abs(q.constants["cluster_jitter"] - 0.1) * 100

    out = cg.swap_costs(None, own, carried, key, mape, together=())
    assert [name for name, *_ in out] == ["cluster_jitter", "t_init_us"]  # equal values are not costed
    assert out[0][1:3] == ("0.1", "0.3") and out[0][3] == pytest.approx(20.0)
    assert out[1][1:3] == ("1", "1.5") and out[1][3] == pytest.approx(5.0)
    assert all((q.t_init_us == 1.0) != (q.constants["cluster_jitter"] == 0.1) for q in seen)  # one at a time
    both = cg.swap_costs(None, own, carried, key, mape, together=(("t_init_us", "cluster_jitter"),))
    assert both[0][0] == "t_init_us + cluster_jitter" and both[0][3] == pytest.approx(25.0)
    assert len(both) == 3
