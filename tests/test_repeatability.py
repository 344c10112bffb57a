"""benchmarks/repeatability.py: the same configurations measured twice, scored with the
protocol's metrics (pairs by configuration key, not by row order)."""

from __future__ import annotations

import csv
from pathlib import Path

from scripts import load_script

REPO = Path(__file__).resolve().parent.parent
SHIPPED = REPO / "results" / "h100-sxm5-80gb" / "shipped" / "fp8" / "measurements" / "decode.csv"


def _write(rows: list[dict], path: Path) -> Path:
    with path.open("w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    return path


def test_a_table_against_itself_and_against_ten_percent_slower(tmp_path, capsys):
    script = load_script(REPO / "benchmarks" / "repeatability.py", "repeatability")
    with SHIPPED.open(newline="") as fh:
        rows = list(csv.DictReader(fh))[:64]
    first = _write(rows, tmp_path / "first.csv")
    # the same rows in reverse order: pairing is by key, so nothing changes
    same = _write(rows[::-1], tmp_path / "same.csv")
    assert script.main([str(first), str(same)]) == 0
    out = capsys.readouterr().out
    assert "paired: 64 configurations" in out
    assert "mape_pct            0.000" in out and "regret_mean_pct     0.000" in out
    slower = _write([{**r, "time_us": str(float(r["time_us"]) * 1.1)} for r in rows], tmp_path / "slower.csv")
    assert script.main([str(first), str(slower)]) == 0
    out = capsys.readouterr().out
    assert "mape_pct           10.000" in out and "geomean_ratio       1.100" in out
    # a uniform slowdown keeps every ranking: no regret
    assert "regret_mean_pct     0.000" in out
