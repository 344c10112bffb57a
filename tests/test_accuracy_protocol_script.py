"""benchmarks/accuracy_protocol.py's record of the library versions its figures came from, and
the timed answers its corrections learn from."""

from __future__ import annotations

import re
from pathlib import Path

import numpy
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
