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


def test_a_sealed_list_joins_the_development_lists_only_once_scored(capsys, monkeypatch):
    """A sealed list scored once (SCORED, its record committed) may join the development
    lists as one more list; one never scored is refused with one line and exit status 2,
    and the plain development rows never hold a sealed row."""
    script = load_script(SCRIPT, "accuracy_protocol")
    assert all((ROOT / "benchmarks" / "results" / record).is_file() for record in script.SCORED.values())
    plain = script.development_rows("h100-sxm5-80gb", "bf16")
    taught = script.development_rows("h100-sxm5-80gb", "bf16", sealed=True)
    lists = set(taught.get_column("testlist").unique())
    assert script.SEALED not in set(plain.get_column("testlist").unique()) and script.SEALED in lists
    assert taught.height - plain.height == taught.filter(taught["testlist"] == script.SEALED).height > 1000
    monkeypatch.setattr(script, "SCORED", {k: v for k, v in script.SCORED.items() if k[0] != "h200-sxm-141gb"})
    assert script.main(["--gpu", "h200-sxm-141gb", "--sealed-as-development"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "h200-sxm-141gb bf16" in err[0] and "never scored" in err[0]
    with pytest.raises(ValueError, match="never scored"):
        script.development_rows("h200-sxm-141gb", "bf16", sealed=True)
