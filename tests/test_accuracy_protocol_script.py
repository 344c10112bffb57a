"""benchmarks/accuracy_protocol.py's record of the library versions its figures came from, and
the timed answers its corrections learn from."""

from __future__ import annotations

import re
from pathlib import Path

import numpy
import pytest
import sklearn

from scripts import load_script

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "benchmarks" / "accuracy_protocol.py"


def test_the_protocol_names_the_versions_its_figures_depend_on():
    line = load_script(SCRIPT, "accuracy_protocol").libraries()
    assert f"numpy {numpy.__version__}" in line and f"scikit-learn {sklearn.__version__}" in line
    assert re.match(r"python \d+\.\d+\.\d+, ", line)
    assert re.search(r"nvidia-matmul-heuristics (\d|absent)", line) and "scipy " in line and "polars " in line


def test_the_answers_are_read_as_the_workflow_reads_them():
    """In bf16 each fold's correction also learns from the GPU's timed optimizer answers
    (a configuration and its time, shapes no testlist holds), every committed file as
    the workflow's fit reads them."""
    from gemmperf.tables import answer_rows

    script = load_script(SCRIPT, "accuracy_protocol")
    rows = script.answer_rows("h100-sxm5-80gb")
    assert rows.height > 1000 and {"m", "n", "k", "tile_m", "stages", "time_us"} <= set(rows.columns)
    assert "kinds" not in rows.columns and (rows.get_column("time_us") > 0).all()
    shipped = sorted((ROOT / "results" / "h100-sxm5-80gb" / "shipped" / "answers").glob("*.csv"))
    assert rows.height == answer_rows(shipped).height


@pytest.mark.parametrize("dtype", ["bf16", "fp8"])
def test_the_development_rows_hold_the_scored_sealed_list_and_never_the_held_out_one(dtype):
    """The first sealed list, scored once on each GPU, is a shipped development list; the
    held-out list (measured on the H100) is found, and never read as development data."""
    script = load_script(SCRIPT, "accuracy_protocol")
    files = script.measurement_files("h100-sxm5-80gb", dtype)
    assert files[script.HOLDOUT].parent.parent.name == script.HOLDOUT and "sealed" in files
    lists = set(script.development_rows("h100-sxm5-80gb", dtype).get_column("testlist").unique())
    assert "sealed" in lists and script.HOLDOUT not in lists


def test_scoring_a_held_out_list_never_measured_is_one_line_and_status_2(capsys):
    """The H200 has not measured the held-out list: --holdout says so before any fit."""
    script = load_script(SCRIPT, "accuracy_protocol")
    assert script.main(["--gpu", "h200-sxm-141gb", "--holdout"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "holdout.csv does not exist" in err[0] and "h200-sxm-141gb" in err[0]
