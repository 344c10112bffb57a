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
