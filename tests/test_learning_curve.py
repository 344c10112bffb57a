"""benchmarks/learning_curve.py without the shipped data: a share drawn by shape keeps
whole shapes, one drawn by row keeps every shape and its share of rows, the same seed
draws the same rows; a draw's scoring corrects every left-out row by trees of the share
alone (and with --refit, constants of the share alone); the power law finds a known
curve; bad arguments are refused in one line with status 2."""

from __future__ import annotations

import itertools
import math
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from gemmperf.fit import accuracy as A
from gemmperf.fit import protocol as P
from gemmperf.hardware import CATALOG
from gemmperf.models import ws_pipelined as W
from gemmperf.params import ParamSet
from scripts import load_script

ROOT = Path(__file__).resolve().parent.parent
GPU = CATALOG["h100-sxm5-80gb"]
PS = ParamSet(GPU)
CFGS = pl.DataFrame([{"tile_m": tm, "tile_n": tn, "stages": s, "persistent": p}
                     for tm, tn, s, p in itertools.product([64, 128], [128, 256], [3, 5], [False, True])])
LISTS = {"a": [(512, 4096, 1024), (4096, 8192, 512), (64, 1024, 4096), (1, 4096, 4096)],
         "b": [(2048, 2048, 2048), (16, 4096, 8192), (3000, 5120, 1000), (256, 256, 256)],
         "c": [(8192, 1024, 256), (128, 128, 8192), (1, 14336, 4096), (777, 999, 1111)]}


@pytest.fixture(scope="module")
def curve():
    return load_script(ROOT / "benchmarks" / "learning_curve.py")


@pytest.fixture(scope="module")
def dev():
    return P.development({name: A.synthetic_measurements(PS, shapes, CFGS, noise=0.05, seed=seed).with_columns(
        pl.lit(name).alias("testlist")) for seed, (name, shapes) in enumerate(LISTS.items())})


def test_a_share_by_shape_keeps_whole_shapes(curve, dev):
    part = curve.subsample(dev, "shape", 0.5, 7)
    sizes = dev.group_by("shape").len()
    kept = part.group_by("shape").len().join(sizes, on="shape", suffix="_all")
    assert kept.height == round(0.5 * sizes.height) and (kept["len"] == kept["len_all"]).all()
    assert part.equals(curve.subsample(dev, "shape", 0.5, 7))  # the seed decides
    assert not part.equals(curve.subsample(dev, "shape", 0.5, 8))
    assert curve.subsample(dev, "shape", 0.01, 0)["shape"].n_unique() == 1  # at least one shape
    assert curve.subsample(dev, "shape", 1.0, 0).equals(dev)


def test_a_share_by_row_keeps_every_shape_and_its_share(curve, dev):
    part = curve.subsample(dev, "row", 0.3, 7)
    kept = part.group_by("shape").len().join(dev.group_by("shape").len(), on="shape", suffix="_all")
    assert kept.height == dev["shape"].n_unique() and "_draw" not in part.columns
    assert all(n == math.ceil(0.3 * n_all) for n, n_all in kept.select("len", "len_all").iter_rows())
    assert part.equals(curve.subsample(dev, "row", 0.3, 7))
    with pytest.raises(ValueError):
        curve.subsample(dev, "configuration", 0.3, 7)


@pytest.mark.parametrize("refit", [False, True])
def test_a_draw_corrects_every_left_out_row_from_its_share(curve, dev, refit, monkeypatch):
    folds = [(fold, dev[train], dev[test]) for fold, train, test in P.folds(dev, "testlist")]
    if not refit:
        folds = [(fold, W.predict(train, PS), W.predict(test, PS)) for fold, train, test in folds]
    from gemmperf.fit import residual as R

    seen, fit = [], R.Correction.fit.__func__

    def few_trees(cls, pred, sms, **kw):  # the rows the trees learn from; 50 trees for speed
        seen.append(pred.height)
        return fit(cls, pred, sms, n_estimators=50, **kw)

    monkeypatch.setattr(R.Correction, "fit", classmethod(few_trees))
    key, rows, preds = curve._score((("shape", 0.5, 3), folds, GPU.sms, PS if refit else None))
    assert key == ("shape", 0.5, 3)
    assert preds.height == dev.height and sorted(preds["fold"].unique().to_list()) == ["a", "b", "c"]
    assert (preds["corrected_us"] > 0).all() and (preds["corrected_us"] != preds["fitted_us"]).any()
    # each fold's trees were trained on half of its 8 training shapes
    assert seen == [4 * CFGS.height] * 3 and rows == 4 * CFGS.height
    if refit:  # constants of the share: the fitted predictions move from the defaults'
        default = pl.concat([W.predict(test, PS) for _, _, test in folds])["predicted_us"]
        assert (preds["fitted_us"] != default).any()


def test_the_power_law_finds_a_known_curve(curve):
    f = np.array([0.25, 0.5, 0.75, 1.0, 0.25, 0.5])
    a, b, c = curve.power_law(f, 5.5 + 0.6 * f ** -1.2)
    assert abs(a - 5.5) < 0.01 and abs(b - 0.6) < 0.01 and abs(c - 1.2) < 0.01
    assert curve.power_law([0.5, 1.0, 0.5], [6.5, 6.1, 6.6]) is None


@pytest.mark.parametrize("argv, words", [(["--by", "shape,configuration"], "--by"),
                                         (["--fractions", "0.5,1.5"], "--fractions"),
                                         (["--fractions", "half"], "--fractions"),
                                         (["--seeds", "0"], "--seeds")])
def test_bad_arguments_are_refused_in_one_line(curve, capsys, argv, words):
    assert curve.main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and words in err
