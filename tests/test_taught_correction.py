"""The residual correction taught the optimizer's timed answers (gemmperf fit --answers):
the answers read as configuration rows, the fit's record of them, the checks that keep a
fit and its scores on the same inputs, and the answer band cross-fitted by set so that no
corrected ratio is read back from a correction that learned it."""

from __future__ import annotations

import itertools
import json

import polars as pl
import pytest

from gemmperf.app.cli import main
from gemmperf.fit import accuracy as A
from gemmperf.hardware import CATALOG
from gemmperf.models import ws_pipelined as W
from gemmperf.params import ParamSet
from gemmperf.problem import KernelConfig
from gemmperf.tables import answer_rows, answer_set

GPU = "h100-sxm5-80gb"
CONFIGS = [KernelConfig(family="ws-hopper", dtype="bf16", tile_m=tm, tile_n=128, persistent=p)
           for tm, p in itertools.product([64, 128], [False, True])]


def _answers(path, shapes, scale: float = 1.3, status: str = "ok"):
    """A timed answers file: every CONFIGS on ``shapes``, the 64-row tiles ``scale`` x
    their default-parameter prediction (a region the testlists do not teach)."""
    rows = pl.DataFrame([{"m": m, "n": n, "k": k, **c.as_dict()} for m, n, k in shapes for c in CONFIGS])
    pred = W.predict(rows, ParamSet(CATALOG[GPU]))
    out = [{"shape": f"{r['m']}x{r['n']}x{r['k']}", "config": c.key(), "kinds": "sample", "status": status,
            "time_us": r["predicted_us"] * (scale if c.tile_m == 64 else 1.0)}
           for r, c in zip(pred.iter_rows(named=True), CONFIGS * len(shapes))]
    pl.DataFrame(out).write_csv(path)
    return path


def one_line(err: str) -> str:
    """The one line of a refusal, after the note that no --microbench was given."""
    lines = [line for line in err.splitlines() if not line.startswith("no --microbench")]
    assert len(lines) == 1 and "Traceback" not in err, err
    return lines[0]


@pytest.fixture
def fitted(tmp_path, monkeypatch):
    """Synthetic dev/llm measurements and three answers files (two sets, one re-timed
    round), in a working folder; (folder, measurement paths, answers paths)."""
    monkeypatch.chdir(tmp_path)
    ps = ParamSet(CATALOG[GPU])
    cfgs = pl.DataFrame([{"tile_m": c.tile_m, "tile_n": 128, "persistent": c.persistent} for c in CONFIGS])
    meas = []
    for name, shapes in (("dev", itertools.product([512, 4096], [1024, 8192], [512, 4096])),
                         ("llm", [(1024, 8192, 4096)])):
        meas.append(tmp_path / f"{name}.csv")
        A.synthetic_measurements(ps, list(shapes), cfgs, seed=1).write_csv(meas[-1])
    answers = [_answers(tmp_path / "dev-set.csv", [(777, 3000, 1000)]),
               _answers(tmp_path / "dev-set-picks2.csv", [(777, 3000, 1000)], scale=1.25),
               _answers(tmp_path / "fresh.csv", [(1500, 2500, 700), (90, 6000, 300)])]
    return tmp_path, meas, answers


def test_answers_read_as_configuration_rows_of_their_set(fitted):
    _, _, answers = fitted
    assert [answer_set(p) for p in answers] == ["dev-set", "dev-set", "fresh"]
    rows = answer_rows(answers)
    assert rows.height == 4 * len(CONFIGS)
    assert rows.filter(pl.col("set") == "dev-set").height == 2 * len(CONFIGS)
    assert set(rows.columns) >= {"m", "n", "k", "tile_m", "persistent", "time_us", "kinds", "set"}
    first = rows.row(0, named=True)
    assert KernelConfig(**{f: first[f] for f in KernelConfig().as_dict()}) == CONFIGS[0]
    failed = _answers(answers[0].parent / "failed.csv", [(5, 5, 5)], status="wrong_result")
    assert answer_rows([failed]).height == 0  # only verified runs teach anything


def test_fit_learns_from_the_answers_and_records_them(fitted, capsys):
    tmp_path, meas, answers = fitted
    common = ["--gpu", GPU, "--measurements", *map(str, meas), "--heldout", "llm", "--families", "ws-hopper"]
    assert main(["fit", *common, "--answers", *map(str, answers), "--out", "params.json",
                 "--correction-out", "correction.json"]) == 0
    record = json.loads((tmp_path / "params.json").read_text())["fit"]
    assert record["answers"] == list(map(str, answers)) and record["answer_rows"] == 4 * len(CONFIGS)
    taught = json.loads((tmp_path / "correction.json").read_text())["meta"]
    assert taught["also_trained_on_rows"] == 4 * len(CONFIGS)
    assert main(["fit", *common, "--out", "alone.json", "--correction-out", "alone_corr.json"]) == 0
    assert json.loads((tmp_path / "alone.json").read_text())["fit"]["answer_rows"] == 0
    assert "also_trained_on_rows" not in json.loads((tmp_path / "alone_corr.json").read_text())["meta"]
    # the constants never see the answers: only the correction differs
    assert json.loads((tmp_path / "alone.json").read_text())["entries"] == \
        json.loads((tmp_path / "params.json").read_text())["entries"]
    capsys.readouterr()
    # scoring with that fit but without its answers is refused, one line
    score = ["accuracy", *common, "--params", "params.json", "--correction", "correction.json", "--models", "sol",
             "--jobs", "1", "--out", "acc.json"]
    assert main(score) == 2
    err = capsys.readouterr().err  # after the note that no --microbench was given
    last = err.splitlines()[-1]
    assert "Traceback" not in err and "params.json: fitted with answer_rows = 16, this run has 0" in last
    assert main([*score, "--answers", *map(str, answers)]) == 0


def test_bad_answers_are_one_line(fitted, capsys):
    tmp_path, meas, answers = fitted
    common = ["fit", "--gpu", GPU, "--measurements", *map(str, meas), "--families", "ws-hopper", "--out", "p.json"]
    assert main([*common, "--answers", str(answers[0])]) == 2  # no correction to teach
    assert "--correction-out" in one_line(capsys.readouterr().err)
    text = answers[0].read_text().splitlines()
    bad = tmp_path / "bad.csv"
    bad.write_text("\n".join([text[0], text[1], text[2].replace("ws-hopper-bf16-", "ws-hopper-bf16-x", 1)]) + "\n")
    assert main([*common, "--correction-out", "c.json", "--answers", str(bad)]) == 2
    err = one_line(capsys.readouterr().err)
    assert "bad.csv:3" in err and "config" in err
    assert main([*common, "--dtype", "fp8", "--correction-out", "c.json", "--answers", str(answers[0])]) == 2
    err = one_line(capsys.readouterr().err)
    assert "dev-set.csv" in err and "dtype bf16" in err
    assert not (tmp_path / "p.json").exists() and not (tmp_path / "c.json").exists()


def test_fold_corrections_never_see_their_own_sets(fitted):
    _, meas, answers = fitted
    rows = answer_rows(answers + [_answers(answers[0].parent / f"s{i}.csv", [(100 + i, 256, 256)])
                                  for i in range(5)])
    folds = A.answer_folds(rows)
    assert len(folds) == A.ANSWER_FOLDS and sorted(sum(folds, [])) == sorted(rows.get_column("set").unique())
    assert A.answer_folds(answer_rows(answers)) == [["dev-set"], ["fresh"]]  # fewer sets: one fold each
    dev, _ = A.split_rows({p.stem: pl.read_csv(p) for p in meas}, "llm")
    ps = ParamSet(CATALOG[GPU])
    for fold, corr in A.fold_corrections(dev, ps, CATALOG[GPU].sms, answer_rows(answers)):
        others = answer_rows(answers).filter(~pl.col("set").is_in(fold)).height
        assert corr.meta["also_trained_on_rows"] == others and corr.meta["trained_on_rows"] == dev.height


def test_fold_corrections_on_workers_are_the_same_trees(fitted):
    """`gemmperf answer-band --jobs`: the folds' corrections fitted on worker processes are
    those fitted one after another (single-threaded trees), so the band does not depend on
    the cores."""
    _, meas, answers = fitted
    dev, _ = A.split_rows({p.stem: pl.read_csv(p) for p in meas}, "llm")
    ps = ParamSet(CATALOG[GPU])
    one = A.fold_corrections(dev, ps, CATALOG[GPU].sms, answer_rows(answers))
    two = A.fold_corrections(dev, ps, CATALOG[GPU].sms, answer_rows(answers), jobs=2)
    assert [fold for fold, _ in two] == [fold for fold, _ in one] and len(one) == 2
    assert [c.to_dict() for _, c in two] == [c.to_dict() for _, c in one]


def test_the_band_of_a_taught_correction_is_cross_fitted(fitted, capsys):
    tmp_path, meas, answers = fitted
    common = ["--gpu", GPU, "--measurements", *map(str, meas), "--heldout", "llm", "--families", "ws-hopper"]
    assert main(["fit", *common, "--answers", *map(str, answers), "--out", "params.json",
                 "--correction-out", "correction.json"]) == 0
    band = ["answer-band", "--gpu", GPU, "--params", "params.json", "--correction", "correction.json",
            "--runs", *map(str, answers), "--level", "0.5", "--out", "band.json"]
    capsys.readouterr()
    assert main(band) == 2  # the correction saw these answers: no band without refitting it
    err = one_line(capsys.readouterr().err)
    assert "cross-fitted" in err and not (tmp_path / "band.json").exists()
    assert main([*band, "--measurements", str(meas[0])]) == 2  # not the measurements it was fitted on
    assert "fitted with testlists = ['dev', 'llm']" in one_line(capsys.readouterr().err)
    assert main([*band, "--measurements", *map(str, meas), "--heldout", "llm"]) == 0
    found = json.loads((tmp_path / "band.json").read_text())
    assert found["corrected_folds"] == [["dev-set"], ["fresh"]] and found["shapes"] == 3
