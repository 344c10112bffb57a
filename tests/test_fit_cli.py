"""gemmperf fit / accuracy on the command line: bad flags are one line naming the flag and
its value (exit 2) before any work; params.json says when and from what it was fitted."""

from __future__ import annotations

import itertools
import json
from datetime import datetime

import polars as pl
import pytest

from gemmperf.app.cli import main
from gemmperf.fit import accuracy as A
from gemmperf.fit.residual import ResidualRegressor
from gemmperf.hardware import CATALOG
from gemmperf.params import ParamSet

GPU = "h100-sxm5-80gb"


def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize("argv, named", [
    (("fit", "--families", "bogus"), "--families 'bogus'"),
    (("fit", "--dtype", "fp99"), "--dtype 'fp99'"),
    (("fit", "--measurements", "a/dev.csv", "--heldout", "llmm"), "--heldout 'llmm'"),
    (("accuracy", "--models", "bogus"), "--models 'bogus'"),
    (("accuracy", "--models", "sol,,sync"), "--models 'sol,,sync'"),
    (("accuracy", "--folds", "0"), "--folds 0"),
    (("accuracy", "--folds", "1"), "--folds 1"),
    (("accuracy", "--jobs", "-1"), "--jobs -1"),
    (("accuracy", "--ablations-only", "--ablations"), "--ablations-only"),
    (("accuracy", "--correction", "c.json"), "--correction c.json"),
    (("accuracy",), "--measurements"),
    (("accuracy", "--splits", "testlist,shape"), "--splits 'testlist,shape'"),
    (("accuracy", "--splits", "testlist,"), "--splits 'testlist,'"),
    (("accuracy", "--splits", "nk", "--ablations"), "--splits 'nk'"),
])
def test_bad_flags_are_one_line_naming_flag_and_value(capsys, tmp_path, argv, named):
    # nothing exists on disk: the flags are checked before any file is read or fit is made
    code, out, err = run(capsys, *argv, "--gpu", GPU, "--out", str(tmp_path / "x.json"))
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and err.startswith(f"gemmperf {argv[0]}: ") and named in err, err
    assert not (tmp_path / "x.json").exists()


def test_accuracy_params_from_another_fit_is_refused(capsys, tmp_path):
    params = tmp_path / "params.json"
    record = {"gpu": GPU, "families": ["ws-hopper", "ws-ampere", "simt"], "dtype": "fp16"}
    params.write_text(json.dumps({**ParamSet(CATALOG[GPU]).to_dict(), "fit": record}))
    meas = tmp_path / "dev.csv"
    meas.write_text("m,n,k\n")
    code, _, err = run(capsys, "accuracy", "--gpu", GPU, "--measurements", str(meas), "--params", str(params),
                       "--out", str(tmp_path / "a.json"))
    last = err.splitlines()[-1]  # after the note that no --microbench was given
    assert code == 2 and "Traceback" not in err and last.startswith(f"gemmperf accuracy: {params}: "), err
    assert "dtype = 'fp16'" in last
    old = tmp_path / "old.json"  # written before params.json recorded its fit
    ParamSet(CATALOG[GPU]).save(old)
    code, _, err = run(capsys, "accuracy", "--gpu", GPU, "--measurements", str(meas), "--params", str(old),
                       "--out", str(tmp_path / "a.json"))
    assert code == 2 and "Traceback" not in err and err.splitlines()[-1].startswith(f"gemmperf accuracy: {old}: ")


def test_fit_records_when_and_from_what(capsys, tmp_path, monkeypatch):
    ps = ParamSet(CATALOG[GPU])
    cfgs = pl.DataFrame([{"tile_m": tm, "tile_n": 128, "persistent": p} for tm, p in
                         itertools.product([64, 128], [False, True])])
    paths = []
    for name, shapes in (("dev", itertools.product([512, 4096], [1024, 8192], [512, 4096])),
                         ("llm", [(1024, 8192, 4096)])):
        paths.append(tmp_path / f"{name}.csv")
        A.synthetic_measurements(ps, list(shapes), cfgs, seed=1).write_csv(paths[-1])
    out = tmp_path / "params.json"
    monkeypatch.setenv("GEMMPERF_PROGRESS", "1")  # the fit's progress bars, forced on
    code, _, err = run(capsys, "fit", "--gpu", GPU, "--measurements", *map(str, paths), "--heldout", "llm",
                       "--families", "ws-hopper", "--set", "t_init_us=2", "--out", str(out),
                       "--correction-out", str(tmp_path / "correction.json"))
    assert code == 0, err
    assert "fit constants" in err and "eval" in err and "residual correction" in err
    assert f"/{ResidualRegressor().n_estimators}" in err  # the correction's bar counts its trees
    data = json.loads(out.read_text())
    fit = data["fit"]
    assert datetime.fromisoformat(fit["fitted_at"]).tzinfo is not None
    assert fit["gpu"] == data["gpu"] == GPU and fit["measurements"] == list(map(str, paths))
    assert fit["heldout"] == "llm" and fit["testlists"] == ["dev", "llm"] and fit["overrides"] == {"t_init_us": 2.0}
    dev, _ = A.split_rows({p.stem: pl.read_csv(p) for p in paths}, "llm")
    assert fit["dev_rows"] == dev.height > 0
    # the entries are the fit's, read back as before
    loaded = ParamSet.load(out, CATALOG[GPU])
    assert loaded.fitted_at == fit["fitted_at"]  # the date every answer states
    assert {k: v for k, v in loaded.to_dict().items() if k != "fitted_at"} == {k: v for k, v in data.items() if k != "fit"}
