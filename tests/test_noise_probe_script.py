"""benchmarks/noise_probe.py's comparison of its passes (the GPU part needs a GPU)."""

from __future__ import annotations

import math
from pathlib import Path

from scripts import load_script

PROBE = load_script(Path(__file__).resolve().parent.parent / "benchmarks" / "noise_probe.py", "noise_probe")


def _rows(times: dict[str, list[float]]) -> list[dict]:
    return [{"pass": p, "task": f"t{i}", "status": "ok", "time_us": t, "spread": 0.01}
            for p, ts in times.items() for i, t in enumerate(ts)]


def test_each_pair_of_passes_is_scored_on_the_timings_both_have():
    rows = _rows({"a": [10.0, 20.0, 40.0], "b": [11.0, 20.0, 40.0], "c": [10.0, 18.0], "d": [10.0, 18.0, 44.0]})
    rows.append({"pass": "c", "task": "t2", "status": "wrong_result", "time_us": "", "spread": ""})
    got = {(one, two): rest for one, two, *rest in PROBE.compare(rows)}
    n, mape, p95, top, gm = got[("a", "b")]
    assert n == 3 and math.isclose(mape, 10 / 3) and math.isclose(p95, 10.0) and math.isclose(gm, 1.1 ** (1 / 3))
    assert got[("c", "d")][:2] == [2, 0.0]  # the wrong result of c is in no pair
    assert math.isclose(got[("a", "c")][1], 5.0)


def test_no_pair_without_common_timings():
    assert PROBE.compare(_rows({"a": [1.0]})) == []
