"""Residual correction: JSON round trip equals sklearn, learns a known bias, loads from results/."""

from __future__ import annotations

import json

import numpy as np
import polars as pl
import pytest

from gemmperf.errors import UserError
from gemmperf.fit.residual import FEATURES, Correction, ResidualRegressor, features, load_correction
from gemmperf.hardware import CATALOG
from gemmperf.models import ws_pipelined as W
from gemmperf.params import ParamSet

PS = ParamSet(CATALOG["h100-sxm5-80gb"])


def table(seed=0, n=300):
    rng = np.random.default_rng(seed)
    df = pl.DataFrame({"m": rng.integers(64, 8192, n), "n": rng.integers(64, 8192, n),
                       "k": rng.integers(64, 8192, n), "tile_n": rng.choice([64, 128, 256], n),
                       "persistent": rng.random(n) < 0.5})
    return W.predict(df, PS)


EXACT = {"splits": "exact", "loss": "huber", "learning_rate": 0.05}  # the estimator until step 43


def test_tree_arrays_match_sklearn_and_json_roundtrip():
    from sklearn.ensemble import GradientBoostingRegressor, HistGradientBoostingRegressor

    rng = np.random.default_rng(0)
    X = rng.normal(size=(400, 5))
    y = np.sin(X[:, 0]) + 0.3 * (X[:, 1] > 0) + 0.01 * rng.normal(size=400)
    for settings in ({"n_estimators": 50, "max_depth": 3, "max_leaf_nodes": None, **EXACT},  # depth-first, step 16
                     {"n_estimators": 50, "max_leaf_nodes": 31, **EXACT},  # best split first to 31 leaves (step 22)
                     {"n_estimators": 120, "max_depth": 3, "max_leaf_nodes": None},  # binned, depth-first
                     {"n_estimators": 120}):  # as shipped: binned, best split first to 63 leaves
        est = ResidualRegressor(**settings).fit(X, y)
        if est.splits == "exact":
            ref = GradientBoostingRegressor(
                **{"max_depth": None, **{k: v for k, v in settings.items() if k != "splits"}},
                min_samples_leaf=est.min_samples_leaf, random_state=0).fit(X, y)
        else:  # sklearn's own binned fit, the same settings
            ref = HistGradientBoostingRegressor(
                max_iter=settings["n_estimators"], max_depth=settings.get("max_depth"),
                max_leaf_nodes=est.max_leaf_nodes, learning_rate=est.learning_rate,
                min_samples_leaf=est.min_samples_leaf, early_stopping=False, random_state=0).fit(X, y)
        np.testing.assert_allclose(est.predict(X), ref.predict(X), rtol=1e-10, atol=1e-10)
        back = ResidualRegressor.from_dict(json.loads(json.dumps(est.to_dict())))
        np.testing.assert_array_equal(back.predict(X), est.predict(X))
        with pytest.raises(UserError):
            est.predict(X[:, :3])
    # the shipped trees are the leaf count's, not a depth's: 63 leaves where the rows allow
    X = rng.normal(size=(3000, 5))
    est = ResidualRegressor(n_estimators=5).fit(X, np.sin(3 * X[:, 0]) * X[:, 1] + (X[:, 2] > 1.5))
    assert {int((t["left"] < 0).sum()) for t in est.trees_} == {63} and est.depth_ > 5


@pytest.mark.parametrize("settings", [{"loss": "huber"}, {"subsample": 0.5}, {"splits": "approximate"}])
def test_a_fit_the_binned_trees_cannot_make_is_refused(settings):
    """Huber loss and row subsampling are the exact fit's; an unknown splits is neither:
    one line naming the value, never a silently other fit."""
    X = np.random.default_rng(0).normal(size=(100, 3))
    with pytest.raises(UserError, match=repr(next(iter(settings.values())))):
        ResidualRegressor(n_estimators=5, **settings).fit(X, X[:, 0])


def test_a_correction_file_of_step_16s_trees_still_loads():
    """A correction.json written before step 22 names no max_leaf_nodes: it loads as the
    depth-4 trees it holds and predicts as they did."""
    rng = np.random.default_rng(2)
    X = rng.normal(size=(300, 4))
    y = X[:, 0] - 0.5 * (X[:, 3] > 0.2)
    est = ResidualRegressor(n_estimators=30, max_depth=4, max_leaf_nodes=None, **EXACT).fit(X, y)
    data = est.to_dict()
    del data["params"]["max_leaf_nodes"], data["params"]["splits"], data["scale"]  # keys of later steps
    back = ResidualRegressor.from_dict(json.loads(json.dumps(data)))
    np.testing.assert_array_equal(back.predict(X), est.predict(X))


def test_stochastic_boosting_is_sklearns_and_repeats_with_its_seed():
    """subsample / max_features (residual_sweep's stochastic variants) reach sklearn's fit, and
    a fixed random_state gives the same trees twice; another seed other trees."""
    from sklearn.ensemble import GradientBoostingRegressor

    rng = np.random.default_rng(1)
    X = rng.normal(size=(300, 6))
    y = X[:, 0] ** 2 + 0.5 * (X[:, 2] > 0) + 0.01 * rng.normal(size=300)
    settings = {"n_estimators": 40, "max_depth": 3, "max_leaf_nodes": None, "subsample": 0.5, "max_features": 0.5,
                **EXACT}
    est = ResidualRegressor(**settings).fit(X, y)
    ref = GradientBoostingRegressor(**{k: v for k, v in settings.items() if k != "splits"},
                                    min_samples_leaf=est.min_samples_leaf, random_state=0).fit(X, y)
    np.testing.assert_allclose(est.predict(X), ref.predict(X), rtol=1e-10, atol=1e-10)
    np.testing.assert_array_equal(ResidualRegressor(**settings).fit(X, y).predict(X), est.predict(X))
    assert np.abs(ResidualRegressor(**settings, random_state=1).fit(X, y).predict(X) - est.predict(X)).max() > 1e-6


def test_features_are_finite_and_named():
    f = features(table(), 132)
    assert tuple(f.columns) == FEATURES
    assert np.isfinite(f.to_numpy()).all()


def test_correction_learns_a_physical_bias_out_of_sample(tmp_path):
    # "measured" = model x 1.3 when N is not a multiple of 8, else x 1.0
    def measured(df):
        return df.with_columns((pl.col("predicted_us") * pl.when(pl.col("n") % 8 == 0).then(1.0).otherwise(1.3))
                               .alias("time_us"))

    train, test = measured(table(0, 600)), measured(table(1, 200))
    corr = Correction.fit(train, 132)
    out = corr(test)
    err = (out["corrected_us"] / out["time_us"] - 1).abs().mean()
    raw = (out["predicted_us"] / out["time_us"] - 1).abs().mean()
    assert err < 0.03 < raw
    path = tmp_path / "h100-sxm5-80gb" / "correction.json"
    corr.save(path)
    loaded = load_correction(tmp_path, "h100-sxm5-80gb")
    np.testing.assert_array_equal(loaded(test)["corrected_us"].to_numpy(), out["corrected_us"].to_numpy())
    with pytest.raises(UserError, match="no residual correction"):
        load_correction(tmp_path, "a100-sxm4-80gb")


def test_the_binned_fit_grows_the_same_trees_with_a_bar_as_without(monkeypatch):
    """With a bar shown the binned fit is warm-started in steps; the trees are one call's."""
    monkeypatch.setenv("GEMMPERF_PROGRESS", "1")
    rng = np.random.default_rng(3)
    X = rng.normal(size=(500, 4))
    y = np.sin(2 * X[:, 0]) * X[:, 1] + 0.05 * rng.normal(size=500)
    from sklearn.ensemble import HistGradientBoostingRegressor

    calls = []
    fit = HistGradientBoostingRegressor.fit
    monkeypatch.setattr(HistGradientBoostingRegressor, "fit", lambda self, *a: calls.append(1) or fit(self, *a))
    stepped = ResidualRegressor(n_estimators=40).fit(X, y, progress=True)
    assert len(calls) == ResidualRegressor.BINNED_STEPS > 1  # the bar showed: the fit went in steps
    plain = ResidualRegressor(n_estimators=40).fit(X, y)
    assert len(calls) == ResidualRegressor.BINNED_STEPS + 1  # no bar: one call
    np.testing.assert_array_equal(stepped.predict(X), plain.predict(X))
