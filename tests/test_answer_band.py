"""How long, as a band: optimize.band and `gemmperf answer-band` (how long the optimizer's
answer runs against its predicted time, read off answers timed on fresh shapes, given by
`optimize`), and the leave-one-testlist-out band `predict` gives with a prediction."""

from __future__ import annotations

import json
import math

import polars as pl
import pytest

from gemmperf.app.cli import main
from gemmperf.fit.residual import Correction
from gemmperf.hardware import get_gpu
from gemmperf.intervals import conformal_band as band
from gemmperf.models import ws_pipelined as W
from gemmperf.optimize import solve
from gemmperf.optimize.band import answer_times, bands
from gemmperf.params import ParamSet, default_params
from gemmperf.problem import KernelConfig, Shape

FAM, DT = "ws-hopper", "bf16"
H100 = get_gpu("h100-sxm5-80gb")
SHAPES = ((2440, 5879, 541), (300, 4096, 4096))


def _fitted(scale: float = 1.5) -> ParamSet:
    """A fitted set: every default constant x ``scale``."""
    constants = {name: value * scale for name, value in W.default_constants(H100).as_dict().items()}
    p = default_params(H100, FAM, DT).replace(constants=constants, source="fitted")
    return ParamSet(gpu=H100, entries={(FAM, DT): p})


def _correction(pset: ParamSet) -> Correction:
    """A correction learned on kernels whose 64-row tiles run 1.3x their prediction."""
    rows = [{"m": m, "n": n, "k": k, "family": FAM, "dtype": DT, "tile_m": tm, "tile_n": 128, "tile_k": 64,
             "stages": 4} for m in (128, 2048) for n in (4096, 8192) for k in (512, 4096) for tm in (64, 128)]
    pred = W.predict(pl.DataFrame(rows), pset)
    return Correction.fit(pred.with_columns(time_us=pl.col("predicted_us") * pl.when(pl.col("tile_m") == 64)
                                            .then(1.3).otherwise(1.0)), H100.sms)


def _runs(pset: ParamSet, times: dict) -> pl.DataFrame:
    """Timed runs of SHAPES: each shape's answer under ``pset`` at ``times[shape]`` (a list
    of (status, time_us) rows; none: not timed), beside a configuration that is not it."""
    rows = []
    for m, n, k in SHAPES:
        name = f"{m}x{n}x{k}"
        answer = solve(Shape(m, n, k), FAM, H100, pset, runner_up=False).config.key()
        other = KernelConfig(family=FAM, dtype=DT, tile_m=64, tile_n=64, stages=2).key()
        rows.append({"shape": name, "config": other, "status": "ok", "time_us": 1.0})
        rows += [{"shape": name, "config": answer, "status": s, "time_us": t} for s, t in times.get(name, [])]
    return pl.DataFrame(rows, schema={"shape": pl.Utf8, "config": pl.Utf8, "status": pl.Utf8, "time_us": pl.Float64})


def test_the_band_is_the_median_and_the_split_conformal_order_statistics():
    ratios = [0.8 + 0.02 * i for i in range(19)][::-1]
    got = band(ratios)  # 19 ratios: the 1st and the 19th smallest at 90%
    assert got == {"n": 19, "median": pytest.approx(0.98), "low": pytest.approx(0.8), "high": pytest.approx(1.16),
                   "level": 0.9}
    assert band(ratios[:18]) is None  # too few for a 90% interval
    many = [1.0 + 0.01 * i for i in range(39)]  # 40 (n + 1) x 0.05 = 2: the 2nd and the 38th
    assert (band(many)["low"], band(many)["high"]) == (pytest.approx(1.01), pytest.approx(1.37))
    assert band([*ratios, None, math.nan, -1.0]) == got  # what is not a ratio is not counted
    assert band(ratios, level=0.5)["low"] == pytest.approx(0.8 + 0.02 * 4)  # floor(20 x 0.25) = 5th


def test_answer_times_take_the_first_verified_time_of_todays_answer():
    pset = _fitted()
    a, b = (f"{m}x{n}x{k}" for m, n, k in SHAPES)
    runs = _runs(pset, {a: [("wrong_result", 5.0), ("ok", 40.0), ("ok", 50.0)]})
    times = answer_times(runs, pset)
    assert times.get_column("shape").to_list() == [a, b]
    want = solve(Shape(*SHAPES[0]), FAM, H100, pset, runner_up=False)
    assert times.row(0, named=True)["predicted_us"] == pytest.approx(want.predicted_us)
    assert times.get_column("measured_us").to_list() == [40.0, None]  # b's answer was never timed
    assert times.get_column("pick").to_list() == [None, None]  # no correction, no pick
    found = bands(times)
    assert found == {"answer": None, "corrected": None}  # one ratio is no band
    corrected = answer_times(runs, pset, _correction(pset))
    assert corrected.get_column("pick").null_count() == 0 and corrected.get_column("corrected_us").min() > 0


@pytest.fixture
def band_folder(tmp_path, monkeypatch):
    """A working folder with results/h100-sxm5-80gb/{params,correction}.json (a fit and its
    correction); (the folder, the fit, the correction)."""
    monkeypatch.chdir(tmp_path)
    pset = _fitted()
    run = tmp_path / "results" / "h100-sxm5-80gb"
    run.mkdir(parents=True)
    pset.save(run / "params.json")
    correction = _correction(pset)
    correction.save(run / "correction.json")
    return tmp_path, pset, correction


def test_the_band_reaches_optimize_and_stays_with_its_parameters(band_folder, capsys):
    tmp_path, pset, correction = band_folder
    # four shapes whose answers ran 1.08-1.11x their predicted time, the corrected picks 1.02-1.05x theirs
    shapes = [(2440, 5879, 541), (300, 4096, 4096), (2440, 5879, 542), (301, 4096, 4096)]
    base = answer_times(pl.DataFrame({"shape": [f"{m}x{n}x{k}" for m, n, k in shapes], "config": ["x"] * 4,
                                      "status": ["ok"] * 4, "time_us": [1.0] * 4}), pset, correction)
    runs = [{"shape": r["shape"], "config": c, "status": "ok", "time_us": t * f}
            for i, r in enumerate(base.iter_rows(named=True))
            for c, t, f in ((r["answer"], r["predicted_us"], 1.08 + 0.01 * i), (r["pick"], r["corrected_us"], 1.02 + 0.01 * i))
            if c != r["answer"] or t == r["predicted_us"]]
    pl.DataFrame(runs).with_columns(kinds=pl.lit("answer")).write_csv(tmp_path / "runs.csv")
    out = "results/h100-sxm5-80gb/answer_band.json"
    argv = ["answer-band", "--gpu", "h100-sxm5-80gb", "--params", "results/h100-sxm5-80gb/params.json",
            "--correction", "results/h100-sxm5-80gb/correction.json", "--runs", "runs.csv", "--level", "0.5",
            "--out", out, "--table", "band.csv"]
    assert main(argv) == 0
    found = json.loads((tmp_path / out).read_text())
    assert found["answer"] == {"n": 4, "median": pytest.approx(1.095), "low": pytest.approx(1.08),
                               "high": pytest.approx(1.11), "level": 0.5}
    assert found["corrected"]["n"] == 4  # a pick that is the answer is timed by the answer's row
    assert pl.read_csv(tmp_path / "band.csv").height == 4
    capsys.readouterr()

    shape = ["--gpu", "h100-sxm5-80gb", "--shape", "2440x5879x541", "--family", "ws-hopper"]
    assert main(["optimize", *shape, "--json"]) == 0
    sol, = json.loads(capsys.readouterr().out)
    assert sol["how_long"]["answer"]["expect_us"] == pytest.approx(sol["predicted_us"] * 1.095)
    assert main(["optimize", *shape]) == 0
    text = capsys.readouterr().out
    assert len(text.splitlines()) == 1  # still the one-line answer, the band's clause at its end
    expect = sol["predicted_us"] * 1.095
    assert f"; how long: expect {expect:.1f} us (" in text and "90%" not in text and "50% of 4 answers" in text
    assert main(["optimize", *shape, "--explain"]) == 0
    text = capsys.readouterr().out
    assert "the answers timed on 4 shapes no fit saw ran 1.08-1.11x their predicted time (50%)" in text
    assert "(corrected)" not in text and "results/h100-sxm5-80gb/answer_band.json" in text
    assert main(["optimize", *shape, "--corrected"]) == 0
    corrected = capsys.readouterr().out.splitlines()[1]
    assert corrected.startswith("corrected: ws-hopper") and "; how long: expect" in corrected
    for other in (["--set", "t_init_us=2"], ["--tile", "128x128x64"], ["--model", "ws-stage"], ["--params-any-gpu"]):
        assert main(["optimize", *shape, *other]) == 0
        assert ("how long" in capsys.readouterr().out) == (other == ["--params-any-gpu"]), other
    good = (tmp_path / out).read_text()
    (tmp_path / out).write_text(good.replace('"low": ', '"low": -', 1))  # a band spoilt by hand
    assert main(["optimize", *shape]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "answer_band.json: answer = " in err and "not a band" in err
    (tmp_path / out).write_text(good)
    _fitted(1.4).save(tmp_path / "results" / "h100-sxm5-80gb" / "params.json")  # fitted again
    assert main(["optimize", *shape]) == 0
    assert "how long" not in capsys.readouterr().out  # the band was of the other fit


def test_answer_band_bad_input_is_one_line(band_folder, capsys):
    tmp_path, *_ = band_folder
    key = KernelConfig(family=FAM, dtype=DT).key()
    (tmp_path / "runs.csv").write_text(f"shape,config,status,time_us\n1x2x3,{key},ok,1.0\n12x3,{key},ok,2.0\n")
    argv = ["answer-band", "--gpu", "h100-sxm5-80gb", "--params", "results/h100-sxm5-80gb/params.json",
            "--runs", "runs.csv", "--out", "band.json"]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "runs.csv:3" in err and "shape" in err and "12x3" in err
    (tmp_path / "runs.csv").write_text(f"shape,config,status,time_us\n1x2x3,{key},ok,\n")
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "runs.csv:2" in err and "time_us" in err
    (tmp_path / "runs.csv").write_text(f"shape,config,status,time_us\n1x2x3,{key},ok,1.0\n1x2x3,{key}-g9x,ok,1.0\n")
    assert main(argv) == 2  # a configuration's name key() would not write
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "runs.csv:3" in err and "config" in err and "-g9x" in err
    assert main([*argv[:-3], "missing.csv", "--out", "band.json"]) == 2
    assert "missing.csv: timed answers file not found" in capsys.readouterr().err
    assert main([*argv, "--level", "1.5"]) == 2
    assert "--level 1.5" in capsys.readouterr().err
    assert main([*argv, "--jobs", "-1"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--jobs -1" in err
    assert not (tmp_path / "band.json").exists()


def test_predict_gives_the_leave_one_testlist_out_band_of_the_workflows_fit(band_folder, capsys):
    """results/<gpu>/headline.json's bands (fit.protocol.bands): predict --shape adds one
    line per banded model with the times, its --json rows the band's times; not for
    another --params, --set or --correction FILE, and a spoilt band is one line."""
    tmp_path, *_ = band_folder
    headline = tmp_path / "results" / "h100-sxm5-80gb" / "headline.json"
    bands = {"ws-pipelined+fit": {"n": 8592, "median": 1.005, "low": 0.846, "high": 1.207, "level": 0.9},
             "ws-pipelined+fit+residual": {"n": 8592, "median": 0.997, "low": 0.882, "high": 1.167, "level": 0.9}}
    headline.write_text(json.dumps({"meta": {}, "summary": [], "bands": bands}))
    argv = ["predict", "--gpu", "h100-sxm5-80gb", "--shape", "4096x4096x4096", "--tile", "128x256x64"]
    assert main([*argv, "--json"]) == 0
    row, = json.loads(capsys.readouterr().out)
    assert row["how_long_low_us"] == pytest.approx(row["predicted_us"] * 0.846)
    assert row["how_long_high_us"] == pytest.approx(row["predicted_us"] * 1.207)
    assert main(argv) == 0
    text = capsys.readouterr().out
    line = "how long (ws-pipelined): 90% of its leave-one-testlist-out predictions (8592 ws-hopper configurations"
    assert line in text and f"ran 0.85-1.21x the prediction: {row['predicted_us'] * 0.846:.1f} us to" in text
    assert main([*argv, "--corrected"]) == 0
    assert "how long (ws-pipelined+residual): 90%" in capsys.readouterr().out
    for other in (["--set", "t_init_us=2"], ["--params", "results/h100-sxm5-80gb/params.json"],
                  ["--corrected", "--correction", "results/h100-sxm5-80gb/correction.json"]):
        assert main([*argv, *other]) == 0
        assert "how long" not in capsys.readouterr().out, other
    headline.write_text(json.dumps({"bands": {"ws-pipelined+fit": {**bands["ws-pipelined+fit"], "low": "x"}}}))
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "headline.json: bands ws-pipelined+fit = " in err and "not a band" in err
