"""benchmarks/residual_sweep.py without the shipped data: every variant names settings the
residual regressor takes, every feature variant computes its features (and only within
its scoring), an unknown variant is refused in one line with status 2, and a variant's
scoring corrects every left-out row of every fold, each by the trees of its own fold."""

from __future__ import annotations

import itertools
import re
from pathlib import Path

import polars as pl

from gemmperf.fit import accuracy as A
from gemmperf.fit import protocol as P
from gemmperf.fit import residual as R
from gemmperf.fit.residual import ResidualRegressor
from gemmperf.hardware import CATALOG
from gemmperf.models import ws_pipelined as W
from gemmperf.params import ParamSet
from scripts import load_script

ROOT = Path(__file__).resolve().parent.parent
GPU = CATALOG["h100-sxm5-80gb"]
PS = ParamSet(GPU)


def test_every_variant_is_a_regressor_setting():
    sweep = load_script(ROOT / "benchmarks" / "residual_sweep.py")
    for name, settings in sweep.VARIANTS.items():
        model = ResidualRegressor(**settings)
        assert all(getattr(model, k) == v for k, v in settings.items()), name
        leaf = settings.get("min_samples_leaf")  # each named with its leaf size, or the shipped one's
        assert (f"leaf{leaf}" in name) if leaf else not re.match(r"leaf\d", name), name
        leaves = settings.get("max_leaf_nodes")  # grown best split first: named by its leaves
        assert (name == f"leaves{leaves}") if leaves else "leaves" not in name, name


def test_every_feature_variant_computes_its_features_only_within():
    sweep = load_script(ROOT / "benchmarks" / "residual_sweep.py")
    pred = W.predict(pl.DataFrame([{"m": m, "n": n, "k": 4096, "tile_m": 128, "tile_n": 256, "stages": 4}
                                   for m, n in [(1, 4096), (4096, 4096), (333, 1000)]]), PS)
    for name, (drop, add) in sweep.FEATURE_VARIANTS.items():
        with sweep.features_of(name):
            f = R.features(pred, GPU.sms)
        assert set(drop) <= set(R.FEATURES) and not set(add) & set(R.FEATURES), name
        assert list(f.columns) == [c for c in R.FEATURES if c not in drop] + list(add), name
        assert all(f[c].is_finite().all() for c in f.columns), name
        assert list(R.features(pred, GPU.sms).columns) == list(R.FEATURES)  # as shipped again


def test_an_unknown_variant_is_refused_in_one_line(capsys):
    sweep = load_script(ROOT / "benchmarks" / "residual_sweep.py")
    assert sweep.main(["--variants", "leaf32,leaf7"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "unknown leaf7" in err and "leaf32" in err


def test_a_variant_corrects_every_left_out_row():
    sweep = load_script(ROOT / "benchmarks" / "residual_sweep.py")
    cfgs = pl.DataFrame([{"tile_m": tm, "tile_n": tn, "stages": s, "persistent": p}
                         for tm, tn, s, p in itertools.product([64, 128], [128, 256], [3, 5], [False, True])])
    lists = {name: A.synthetic_measurements(PS, shapes, cfgs, noise=0.05, seed=seed).with_columns(
        pl.lit(name).alias("testlist")) for seed, (name, shapes) in enumerate({
            "a": [(512, 4096, 1024), (4096, 8192, 512), (64, 1024, 4096)],
            "b": [(2048, 2048, 2048), (16, 4096, 8192), (3000, 5120, 1000)],
            "c": [(8192, 1024, 256), (128, 128, 8192), (1, 14336, 4096)]}.items())}
    dev = P.development(lists)
    folds = [(fold, W.predict(dev[train], PS), W.predict(dev[test], PS))
             for fold, train, test in P.folds(dev, "testlist")]
    name, preds = sweep._score(("leaf8-300trees", sweep.VARIANTS["leaf8-300trees"], folds, GPU.sms))
    assert name == "leaf8-300trees" and preds.height == dev.height
    assert sorted(preds["fold"].unique().to_list()) == ["a", "b", "c"]
    assert (preds["corrected_us"] > 0).all() and (preds["fitted_us"] == preds["predicted_us"]).all()
    # the correction moves the predictions: trees fitted on the noise of the other lists
    assert (preds["corrected_us"] != preds["fitted_us"]).any()
