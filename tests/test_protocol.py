"""Issue 17's accuracy protocol (fit.protocol): leave-one-testlist-out never trains on a
left-out shape, (n, k) folds never share a weight matrix, tied picks count at their mean,
shape classes select what they say."""

from __future__ import annotations

import itertools

import numpy as np
import polars as pl
import pytest

from gemmperf.errors import UserError
from gemmperf.fit import accuracy as A
from gemmperf.fit import protocol as P
from gemmperf.hardware import CATALOG
from gemmperf.params import ParamSet

PS = ParamSet(CATALOG["h100-sxm5-80gb"])
CFGS = pl.DataFrame([{"tile_m": tm, "tile_n": tn, "persistent": p}
                     for tm, tn, p in itertools.product([64, 128], [128, 256], [False, True])])


def lists():
    # "b" shares the shape 512x1024x512 with "a": leaving "b" out must drop it from training
    a = A.synthetic_measurements(PS, list(itertools.product([512, 4096], [1024, 8192], [512, 4096])), CFGS, seed=1)
    b = A.synthetic_measurements(PS, [(512, 1024, 512), (3000, 5120, 1000), (16, 777, 64)], CFGS, seed=2)
    c = A.synthetic_measurements(PS, [(1, 4096, 4096), (2048, 2048, 200)], CFGS, seed=3)
    return {"a": a, "b": b, "c": c}


def test_tied_picks_count_at_their_mean():
    df = pl.DataFrame({"m": [1] * 3, "n": [1] * 3, "k": [1] * 3, "dtype": ["bf16"] * 3, "family": ["f"] * 3,
                       "time_us": [10.0, 14.0, 20.0], "predicted_us": [5.0, 5.0, 9.0]})
    # the model cannot tell 10 us from 14 us: its pick is worth their mean, 12 us (20 % regret)
    assert A.metrics(df)["regret_mean_pct"] == pytest.approx(20.0)
    # row order does not matter
    assert A.metrics(df.reverse())["regret_mean_pct"] == pytest.approx(20.0)
    # a strict winner is not a tie
    strict = df.with_columns(pl.Series("predicted_us", [5.0, 5.0 * (1 + 1e-3), 9.0]))
    assert A.metrics(strict)["regret_mean_pct"] == pytest.approx(0.0)


def test_leave_one_testlist_out_never_trains_on_a_left_out_shape():
    dev = P.development(lists())
    folds = P.folds(dev, "testlist")
    assert [name for name, _, _ in folds] == ["a", "b", "c"]
    for name, train, test in folds:
        tr, te = dev[train], dev[test]
        assert set(te.get_column("testlist")) == {name}
        assert name not in set(tr.get_column("testlist"))
        assert not set(tr.get_column("shape")) & set(te.get_column("shape"))
    # leaving "b" out also drops list "a"'s copy of the shared shape
    _, train_b, _ = folds[1]
    assert "512x1024x512xbf16" not in set(dev[train_b].get_column("shape"))
    assert len(train_b) < (dev.get_column("testlist") != "b").sum()


def test_weight_matrix_folds_never_share_n_k():
    dev = P.development(lists())
    folds = P.folds(dev, "nk")
    seen = set()
    for _, train, test in folds:
        tr, te = set(dev[train].get_column("nk")), set(dev[test].get_column("nk"))
        assert not tr & te
        seen |= te
    assert seen == set(dev.get_column("nk"))


def test_folds_refuse_what_cannot_be_split():
    dev = P.development({"a": lists()["a"]})
    with pytest.raises(UserError, match="needs >= 2 testlists"):
        P.folds(dev, "testlist")
    with pytest.raises(UserError, match="grouping"):
        P.folds(dev, "shape-ish")
    with pytest.raises(UserError, match="no valid measurements"):
        P.development(lists(), families=("simt",))


def test_classes_select_what_they_say():
    df = pl.DataFrame({"m": [1, 64, 65, 4096], "n": [8, 12, 4096, 4096], "k": [256, 257, 64, 4096],
                       "persistent": [True, False, True, True]})
    got = {name: df.filter(expr).get_column("m").to_list() for name, expr in P.CLASSES.items()}
    assert got == {"decode (M <= 64)": [1, 64], "small K (K <= 256)": [1, 65], "odd N (N % 8 != 0)": [64],
                   "huge (M N K >= 2^36)": [4096], "non-persistent": [64]}


def test_evaluate_predicts_every_row_out_of_sample():
    dev = P.development(lists())
    preds = P.evaluate(dev, PS, "testlist", residual=False)
    assert preds.height == dev.height
    assert set(preds.get_column("fold")) == {"a", "b", "c"}
    for col in ("base_us", "fitted_us"):
        v = preds.get_column(col).to_numpy()
        assert np.all(np.isfinite(v)) and np.all(v > 0)
    # the synthetic times are the model's own, with 2 % noise: the fitted model is close
    s = P.summary(preds)
    fit_all = s.filter((pl.col("model") == "ws-pipelined+fit") & (pl.col("class") == "all")).row(0, named=True)
    assert fit_all["n"] == dev.height and fit_all["mape_pct"] < 10.0
    assert "corrected_us" not in preds.columns
    # per testlist: one row per (model, class, testlist) where the class has rows
    by = P.summary(preds, by="testlist").filter(pl.col("class") == "all")
    assert sorted(by.filter(pl.col("model") == "ws-pipelined+fit").get_column("testlist")) == ["a", "b", "c"]


def test_score_heldout_trains_without_the_held_shapes(monkeypatch):
    seen = []
    real = P._run_tasks
    monkeypatch.setattr(P, "_run_tasks", lambda tasks, jobs: seen.extend(tasks) or real(tasks, jobs))
    meas = lists()
    dev = P.development({"a": meas["a"], "b": meas["b"]})
    held = P.development({"c": meas["c"].vstack(meas["a"].head(8))})
    preds = P.score_heldout(dev, held, PS, residual=False)
    assert preds.height == held.height and set(preds.get_column("fold")) == {"held-out"}
    (train, test, *_), = seen
    assert not set(train.get_column("shape")) & set(held.get_column("shape"))
    # a's first shape, 512x1024x512, is in "b" too: both lists' rows of it leave the training set
    assert train.height == dev.height - 2 * CFGS.height



def test_picks_count_ties_at_their_mean_and_skip_rows_a_model_cannot_estimate():
    preds = pl.DataFrame({"split": ["testlist"] * 4, "testlist": ["a"] * 4, "m": [1] * 4, "n": [8] * 4,
                          "k": [8] * 4, "dtype": ["bf16"] * 4, "time_us": [10.0, 14.0, 20.0, 11.0],
                          "fitted_us": [5.0, 5.0, 9.0, 7.0], "nvmmh_us": [float("nan"), 3.0, 4.0, 0.0]})
    got = P.picks(preds, {"ws-pipelined+fit": "fitted_us", "nvMatmulHeuristics": "nvmmh_us"}).row(0, named=True)
    assert got["measured best us"] == 10.0 and got["configurations"] == 4
    assert got["ws-pipelined+fit pick us"] == pytest.approx(12.0)
    assert got["ws-pipelined+fit regret %"] == pytest.approx(20.0)
    # NaN (cannot say) and 0 (refused) are not picks: its fastest estimate is 3 us, measured 14 us
    assert got["nvMatmulHeuristics regret %"] == pytest.approx(40.0)


def test_bands_are_the_measured_over_predicted_ratios_of_the_headline_split():
    """fit.protocol.bands: per model, the split-conformal band of measured / predicted over
    the leave-one-testlist-out rows only (what `gemmperf predict` gives with a prediction)."""
    from gemmperf.intervals import conformal_band

    n = 40
    ratios = [0.8 + 0.01 * i for i in range(n)]
    preds = pl.DataFrame({"split": ["testlist"] * n + ["nk"] * n, "time_us": [10.0] * (2 * n),
                          "fitted_us": [10.0 / r for r in ratios] + [1.0] * n,
                          "corrected_us": [10.0 / (2 - r) for r in ratios] + [1.0] * n})
    got = P.bands(preds)
    assert set(got) == {"ws-pipelined+fit", "ws-pipelined+fit+residual"}
    assert got["ws-pipelined+fit"] == pytest.approx(conformal_band(ratios))  # the nk rows (10x) not counted
    assert got["ws-pipelined+fit"]["low"] == pytest.approx(0.81) and got["ws-pipelined+fit"]["high"] == pytest.approx(1.18)
    assert got["ws-pipelined+fit+residual"]["median"] == pytest.approx(2 - np.median(ratios))
    assert P.bands(preds.drop("corrected_us").head(10)) == {}  # too few rows for a 90% band


def test_the_correction_also_learns_from_rows_of_shapes_no_fold_tests(monkeypatch):
    """correction_rows (the timed optimizer answers) reach each fold's correction, never
    the constants, and a fold drops those of a shape it tests."""
    meas = lists()
    dev = P.development(meas)
    answers = A.synthetic_measurements(PS, [(700, 3000, 900), (512, 1024, 512)], CFGS, seed=5)
    seen = []
    real = A.fit_all

    def spy(train, pset, *args, correction_rows=None, **kw):
        seen.append((train.height, correction_rows))
        return real(train, pset, *args, correction_rows=correction_rows, **kw)

    monkeypatch.setattr(A, "fit_all", spy)
    plain = P.evaluate(dev, PS, "testlist", residual=True)
    more = P.evaluate(dev, PS, "testlist", residual=True, correction_rows=answers)
    # a's and b's folds test 512x1024x512: its answer rows leave their corrections
    by_fold = dict(zip(sorted(dev.get_column("testlist").unique()), [c.height for _, c in seen[3:]]))
    assert by_fold == {"a": CFGS.height, "b": CFGS.height, "c": 2 * CFGS.height}
    assert all(c is None for _, c in seen[:3])
    # the constants are the same fit; the corrections differ
    np.testing.assert_array_equal(plain.get_column("fitted_us").to_numpy(), more.get_column("fitted_us").to_numpy())
    assert not np.array_equal(plain.get_column("corrected_us").to_numpy(), more.get_column("corrected_us").to_numpy())


def test_fit_all_records_the_rows_its_correction_also_learned_from():
    meas = lists()
    answers = A.synthetic_measurements(PS, [(700, 3000, 900)], CFGS, seed=5)
    fitted, corr, _ = A.fit_all(meas["a"], PS, names=("t_epilogue_us",), correction_rows=answers)
    alone, corr0, _ = A.fit_all(meas["a"], PS, names=("t_epilogue_us",))
    assert fitted.get("ws-hopper", "bf16").constants == alone.get("ws-hopper", "bf16").constants
    assert corr.meta["also_trained_on_rows"] == answers.height and "also_trained_on_rows" not in corr0.meta
    assert corr.meta["n_train"] == corr0.meta["n_train"] + answers.height


def fp8_lists():
    """lists()'s shapes in another dtype (other noise, labelled fp8): the run lists()' bf16
    rows teach."""
    return {name: A.synthetic_measurements(PS, df.select("m", "n", "k").unique(maintain_order=True).rows(), CFGS,
                                           seed=seed + 10).with_columns(pl.lit("fp8").alias("dtype"))
            for (name, df), seed in zip(lists().items(), (1, 2, 3))}


def test_teacher_rows_teach_only_the_correction_outside_what_a_fold_tests(monkeypatch):
    """Rows of another dtype (an fp8 run's bf16 rows) reach each fold's fit, but a fold
    keeps none of its left-out list or shapes (or, by (n, k), weight matrices); they are
    never scored, and the run's own constants are as without them."""
    dev, teacher = P.development(fp8_lists()), P.development(lists())
    assert set(dev.get_column("dtype")) == {"fp8"} and set(teacher.get_column("dtype")) == {"bf16"}
    seen = []
    real = A.fit_all

    def spy(train, pset, *args, **kw):
        seen.append(train)
        return real(train, pset, *args, **kw)

    monkeypatch.setattr(A, "fit_all", spy)
    plain = P.evaluate(dev, PS, "testlist", residual=True)
    taught = P.evaluate(dev, PS, "testlist", residual=True, teacher=teacher)
    assert taught.height == dev.height and set(taught.get_column("dtype")) == {"fp8"}
    for (name, _, test), train in zip(P.folds(dev, "testlist"), seen[3:]):
        bf16 = train.filter(pl.col("dtype") == "bf16")
        assert bf16.height and name not in set(bf16.get_column("testlist"))
        mnk = lambda df: set(df.select("m", "n", "k").rows())  # noqa: E731
        assert not mnk(bf16) & mnk(dev[test])
    # leaving "b" out drops list "a"'s bf16 copy of b's shape 512x1024x512 too
    assert (512, 1024, 512) not in set(seen[4].select("m", "n", "k").rows())
    np.testing.assert_array_equal(plain.get_column("fitted_us").to_numpy(), taught.get_column("fitted_us").to_numpy())
    assert not np.array_equal(plain.get_column("corrected_us").to_numpy(), taught.get_column("corrected_us").to_numpy())
    seen.clear()
    P.evaluate(dev, PS, "nk", residual=True, teacher=teacher)
    for (_, _, test), train in zip(P.folds(dev, "nk"), seen):
        nk = lambda df: set(df.select("n", "k").rows())  # noqa: E731
        assert not nk(train.filter(pl.col("dtype") == "bf16")) & nk(dev[test])
    seen.clear()
    P.evaluate(dev, PS, "testlist", residual=False, teacher=teacher)  # no correction: nothing to teach
    assert all(set(train.get_column("dtype")) == {"fp8"} for train in seen)


def test_the_shipped_fit_learns_from_teacher_rows_and_ships_its_own_dtype():
    meas, teacher = fp8_lists(), P.development(lists())
    fitted, corr, _ = A.fit_shipped(meas, PS, "c", residual=True, teacher=teacher)
    alone, corr0, _ = A.fit_shipped(meas, PS, "c", residual=True)
    assert {dtype for _, dtype in fitted.entries} == {"fp8"}
    assert fitted.to_dict() == alone.to_dict()
    # c's list and shapes stay out of it in bf16 too
    kept = A.outside(teacher, A.split_rows(meas, "c")[1], A.HELD_KEYS)
    assert 0 < kept.height < teacher.height and "c" not in set(kept.get_column("testlist"))
    assert corr.meta["n_train"] == corr0.meta["n_train"] + kept.height
    record = A.fit_record(meas, "c", teacher=teacher)
    assert record["teacher_rows"] == kept.height and A.fit_record(meas, "c")["teacher_rows"] == 0
