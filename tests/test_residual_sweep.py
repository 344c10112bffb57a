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
        # grown best split first: named by its leaves, but for the 31 that every variant
        # named before step 53 grew (the default then), which those names keep unsaid
        leaves = settings.get("max_leaf_nodes")
        if leaves in (None, 31):
            assert "leaves" not in name or name == f"leaves{leaves}", name
        else:
            assert name == f"leaves{leaves}" or f"{leaves}leaves" in name, name


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


def test_bad_random_states_are_refused_in_one_line(capsys):
    sweep = load_script(ROOT / "benchmarks" / "residual_sweep.py")
    for bad in ("0,x", "-1", "", "1,,2"):
        assert sweep.main(["--variants", "leaf32", "--random-states", bad]) == 2, bad
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "--random-states" in err and repr(bad) in err, bad


def test_row_alignment_flags_and_the_shipped_shares_are_line_shares():
    """The correction's row shares (fit.residual.ROW_SHARES, step 37) are
    geometry.line_shares' shares, and the row-alignment variant's flags the same as flags:
    A's and B's rows by K's padded pitch (fp8 rows padded to 16 elements, bf16 to 8), C's
    by N's (2-byte outputs)."""
    from gemmperf.models.ws_pipelined.geometry import line_shares

    sweep = load_script(ROOT / "benchmarks" / "residual_sweep.py")
    assert sweep.ROW_SHARES == R.ROW_SHARES
    ks, ns = [16, 20, 24, 48, 57, 64, 4096, 4100, 4104, 4112, 8184], [8, 12, 16, 24, 33, 4096, 13320]
    rows = [(k, n, dt) for k in ks for n in ns for dt in ("bf16", "fp8")]
    df = pl.DataFrame(rows, schema=["k", "n", "dtype"], orient="row")
    shares = R.row_shares(df)
    flags = shares.select(**{name: make() for name, make in sweep.FEATURE_VARIANTS["row-alignment"][1].items()})
    for i, (k, n, dt) in enumerate(rows):
        line_off, sector_off = line_shares(k, 1 if dt == "fp8" else 2)
        assert (flags["ab_line_flag"][i], flags["ab_sector_flag"][i]) == (float(line_off > 0), float(sector_off > 0))
        assert flags["c_sector_flag"][i] == float(line_shares(n, 2)[1] > 0), n
        assert (shares["_ab_line_off"][i], shares["_ab_sector_off"][i]) == (line_off, sector_off), (k, dt)
        assert shares["_c_sector_off"][i] == line_shares(n, 2)[1], n
    assert flags["ab_sector_flag"].sum() > 0 and flags["c_sector_flag"].sum() > 0
    assert set(shares["_ab_line_off"].unique()) == {0.0, 0.5, 0.75, 0.875}  # pitches 128, 64, 32, 16 bytes off
