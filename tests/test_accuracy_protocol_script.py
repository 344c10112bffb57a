"""benchmarks/accuracy_protocol.py's record of the library versions its figures came from."""

from __future__ import annotations

import re
from pathlib import Path

import numpy
import sklearn

from scripts import load_script

SCRIPT = Path(__file__).resolve().parent.parent / "benchmarks" / "accuracy_protocol.py"


def test_the_protocol_names_the_versions_its_figures_depend_on():
    line = load_script(SCRIPT, "accuracy_protocol").libraries()
    assert f"numpy {numpy.__version__}" in line and f"scikit-learn {sklearn.__version__}" in line
    assert re.match(r"python \d+\.\d+\.\d+, ", line)
    assert re.search(r"nvidia-matmul-heuristics (\d|absent)", line) and "scipy " in line and "polars " in line


def test_with_answers_reads_the_gpus_timed_answers_and_refuses_fp8(capsys):
    """--with-answers: the GPU's timed optimizer answers as rows a correction can learn
    from (a configuration and its time, shapes no testlist holds); they are bf16, so fp8
    with them is refused, exit status 2."""
    import pytest

    script = load_script(SCRIPT, "accuracy_protocol")
    rows = script.answer_rows("h100-sxm5-80gb")
    assert rows.height > 1000 and {"m", "n", "k", "tile_m", "stages", "time_us"} <= set(rows.columns)
    assert "kinds" not in rows.columns and (rows.get_column("time_us") > 0).all()
    with pytest.raises(SystemExit) as stop:
        script.main(["--dtype", "fp8", "--with-answers"])
    assert stop.value.code == 2 and "--with-answers" in capsys.readouterr().err
