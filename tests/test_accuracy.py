"""Accuracy: metrics on hand-made tables, grouped folds never share a shape, held-out never fitted."""

from __future__ import annotations

import itertools
import math

import numpy as np
import polars as pl
import pytest

from gemmperf.fit import accuracy as A
from gemmperf.fit import constants as C
from gemmperf.hardware import CATALOG
from gemmperf.models import ws_pipelined as W
from gemmperf.params import ParamSet

PS = ParamSet(CATALOG["h100-sxm5-80gb"])


def test_metrics_by_hand():
    df = pl.DataFrame({
        "m": [1, 1, 1, 2, 2], "n": [1] * 5, "k": [1] * 5, "dtype": ["bf16"] * 5, "family": ["f"] * 5,
        "time_us": [10.0, 20.0, 30.0, 10.0, 12.0],
        "predicted_us": [11.0, 18.0, 30.0, 13.0, 12.0],
    })
    m = A.metrics(df)
    ape = np.array([10, 10, 0, 30, 0.0])
    assert m["mape_pct"] == pytest.approx(ape.mean())
    assert m["median_ape_pct"] == pytest.approx(10.0)
    assert m["max_ape_pct"] == pytest.approx(30.0)
    assert m["within_10pct"] == pytest.approx(0.8)
    assert m["geomean_ratio"] == pytest.approx(np.exp(np.mean(np.log([1.1, 0.9, 1.0, 1.3, 1.0]))))
    assert m["spearman_mean"] == pytest.approx(1.0)  # only shape 1 has >= 3 configs; order kept
    # shape 1: the model ranks the 10 us config first (regret 0); shape 2: it picks 12 us over 10 (20 %)
    assert m["regret_mean_pct"] == pytest.approx(10.0)
    bad = df.with_columns(pl.Series("predicted_us", [30.0, 20.0, 10.0, 12.0, 13.0]))
    mb = A.metrics(bad)
    assert mb["spearman_mean"] == pytest.approx(-1.0)
    assert mb["regret_mean_pct"] == pytest.approx((200.0 + 0.0) / 2)


def synthetic():
    cfgs = pl.DataFrame([{"tile_m": tm, "tile_n": tn, "persistent": p}
                         for tm, tn, p in itertools.product([64, 128], [128, 256], [False, True])])
    dev_a = A.synthetic_measurements(PS, list(itertools.product([512, 4096], [1024, 8192], [512, 4096])), cfgs, seed=1)
    held = A.synthetic_measurements(PS, [(3000, 5120, 1000), (1024, 8192, 4096), (777, 999, 2048)], cfgs, seed=2)
    return {"squares": dev_a, "llm": held}


def test_group_folds_never_share_a_shape():
    dev, held = A.split_rows(synthetic(), "llm")
    folds, k = A.group_folds(dev.get_column("shape"), 5)
    assert k == 5
    seen = set()
    for train, test in folds:
        tr, te = set(dev["shape"].gather(train)), set(dev["shape"].gather(test))
        assert not tr & te
        seen |= te
    assert seen == set(dev["shape"])
    # a held-out shape measured in a development list is dropped from development
    assert "1024x8192x4096xbf16" not in set(dev["shape"]) and held.height == 24


def test_heldout_never_enters_a_fit(monkeypatch):
    meas = synthetic()
    held_shapes = set(A.shape_id(meas["llm"]))
    fitted_on = []
    real = C.fit_constants

    def spy(rows, *args, **kw):
        fitted_on.append(set(A.shape_id(rows)))
        return real(rows, *args, **kw)

    monkeypatch.setattr(C, "fit_constants", spy)
    acc, preds = A.evaluate_accuracy(meas, PS, heldout="llm", models=["sol", "ws-pipelined"], n_splits=3,
                                     ablations=False, progress=lambda s: None)
    assert len(fitted_on) == 3 + 1
    # the held-out list is scored by the fit on every development row
    assert fitted_on[-1] == set(A.shape_id(A.split_rows(meas, "llm")[0]))
    for shapes in fitted_on:
        assert not shapes & held_shapes
    for name in ("ws-pipelined+fit", "ws-pipelined+fit+residual", "sol"):
        assert acc[name]["all"]["n"] == acc["meta"]["dev_rows"]
        assert acc["heldout"][name]["all"]["n"] == 24
    assert acc["ws-pipelined+fit"]["all"]["folds"] == 3
    # "all" pools both splits: every row once, each predicted out of sample
    for name in ("ws-pipelined+fit+residual", "sol"):
        pooled = preds.filter(pl.col("model") == name)
        assert acc["all"][name]["all"]["n"] == acc["meta"]["dev_rows"] + 24 == pooled.height
        assert acc["all"][name]["all"]["mape_pct"] == pytest.approx(A.metrics(pooled)["mape_pct"])
    # model-generated data with 2% noise: the fitted model is accurate out of sample
    assert acc["heldout"]["ws-pipelined+fit"]["all"]["mape_pct"] < 5
    t = A.table(acc)
    assert {"split", "model", "family", "mape_pct", "regret_mean_pct"} <= set(t.columns)
    assert set(preds["split"]) == {"cv", "heldout"}
    assert set(t["split"]) == {"cv", "heldout", "all"}


def test_fits_do_not_depend_on_the_order_of_the_rows():
    # the workflow and the CLI list the measurement files in different orders; constants
    # and correction must come out the same (they once moved the pooled p95 by 0.5 points)
    truth = C.with_values(PS, "ws-hopper", "bf16", {"dram_eff_bytes_per_us": 2.4e6, "t_epilogue_us": 1.2})
    shapes = list(itertools.product([512, 2048, 8192], [1024, 4096], [256, 4096]))
    cfgs = pl.DataFrame([{"tile_m": tm, "tile_n": tn, "stages": 4, "persistent": p}
                         for tm, tn, p in itertools.product([64, 128], [128, 256], [False, True])])
    meas = A.synthetic_measurements(truth, shapes, cfgs, noise=0.05, seed=4)
    shuffled = meas.sample(fraction=1.0, shuffle=True, seed=9)
    names = ("dram_eff_bytes_per_us", "t_epilogue_us", "math_flops_per_us", "l2_window_kblocks")
    fa, ca, _ = A.fit_all(meas, PS, names=names)
    fb, cb, _ = A.fit_all(shuffled, PS, names=names)
    assert fa.get("ws-hopper", "bf16").constants == fb.get("ws-hopper", "bf16").constants
    pa = ca(W.predict(meas, fa))["corrected_us"].to_numpy()
    pb = cb(W.predict(meas, fb))["corrected_us"].to_numpy()
    np.testing.assert_array_equal(pa, pb)


def test_fit_step_equals_the_heldout_scoring_fit(tmp_path):
    # `gemmperf fit` writes params.json and correction.json from fit_shipped; they are the
    # fit that scores the held-out list (where the correction came from before), bit for bit
    from gemmperf.fit.residual import Correction

    meas = synthetic()
    quiet = dict(heldout="llm", models=["sol"], n_splits=3, progress=lambda s: None)
    acc, preds = A.evaluate_accuracy(meas, PS, **quiet)
    fitted, corr, _ = A.fit_shipped(meas, PS, "llm", residual=True)
    # so accuracy --params/--correction scores the held-out list with those files (read
    # back from JSON) instead of refitting: the same figures and predictions, bit for bit
    fitted.save(tmp_path / "params.json")
    corr.save(tmp_path / "correction.json")
    params, back = ParamSet.load(tmp_path / "params.json", PS.gpu), Correction.load(tmp_path / "correction.json")
    record = A.fit_record(meas, "llm")
    reused, reused_preds = A.evaluate_accuracy(meas, PS, shipped=A.Shipped(params, back, record), **quiet)
    assert reused == acc and reused_preds.equals(preds)
    # a fit of other rows, or without the correction the corrected model needs, is refused
    for other, match in (({**record, "dev_rows": 1}, "dev_rows"), ({**record, "heldout": None}, "heldout")):
        with pytest.raises(A.UserError, match=match):
            A.evaluate_accuracy(meas, PS, shipped=A.Shipped(params, back, other), **quiet)
    with pytest.raises(A.UserError, match="correction"):
        A.evaluate_accuracy(meas, PS, shipped=A.Shipped(params, None, record), **quiet)
    _, held = A.split_rows(meas, "llm")
    mine = corr(W.predict(held, fitted))
    for model, col in (("ws-pipelined+fit", "predicted_us"), ("ws-pipelined+fit+residual", "corrected_us")):
        scored = preds.filter((pl.col("model") == model) & (pl.col("split") == "heldout"))
        np.testing.assert_array_equal(scored["predicted_us"].to_numpy(), mine[col].to_numpy())
    # without the correction the constants are the same
    alone, none, _ = A.fit_shipped(meas, PS, "llm", residual=False)
    assert none is None and alone.to_dict() == fitted.to_dict()


def assert_same_scores(a: dict, b: dict) -> None:
    """Equal scores (to the last bits: a mean over polars groups may sum in any order)."""
    assert a.keys() == b.keys()
    for key, x in a.items():
        if isinstance(x, dict):
            assert_same_scores(x, b[key])
        elif isinstance(x, float):
            assert math.isclose(x, b[key], rel_tol=1e-12) or (math.isnan(x) and math.isnan(b[key])), key
        else:
            assert x == b[key], key


def test_ablations_alone_equal_those_of_the_full_scoring(monkeypatch):
    # the workflow scores the ablations in their own, opt-in job (results/<gpu>/ablations.json):
    # "ws-pipelined+fit" and each effect switched off, the figures of evaluate_accuracy's
    monkeypatch.setattr(W, "EFFECTS", W.EFFECTS[:2])  # two effects keep the test quick
    meas = synthetic()
    quiet = dict(heldout="llm", n_splits=3, progress=lambda s: None)
    full, _ = A.evaluate_accuracy(meas, PS, models=["sol"], ablations=True, **quiet)
    alone, preds = A.evaluate_ablations(meas, PS, **quiet)
    names = {"ws-pipelined+fit", *(f"ws-pipelined+fit-no-{e}" for e in W.EFFECTS)}
    assert {k for k in alone if k not in A.SPLIT_KEYS} == names == set(preds["model"])
    for name in names:
        for a, b in ((alone, full), (alone["heldout"], full["heldout"]), (alone["all"], full["all"])):
            assert_same_scores(a[name], b[name])
    no_ablations, _ = A.evaluate_accuracy(meas, PS, models=["sol"], ablations=False, **quiet)
    assert not any("-no-" in k for k in no_ablations)

