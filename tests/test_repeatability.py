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


def test_predictions_scored_against_each_measurement_and_their_mean(tmp_path, capsys):
    import polars as pl

    script = load_script(REPO / "benchmarks" / "repeatability.py", "repeatability")
    with SHIPPED.open(newline="") as fh:
        rows = list(csv.DictReader(fh))[:64]
    first = _write(rows, tmp_path / "first.csv")
    # the repeat 1.21x slower: the mean of the two is 1.1x the first
    again = _write([{**r, "time_us": str(float(r["time_us"]) * 1.21)} for r in rows], tmp_path / "again.csv")
    table = pl.read_csv(first, infer_schema_length=0).select(
        *[pl.col(c).cast(pl.Int64) for c in ("m", "n", "k", "tile_m", "tile_n", "tile_k", "stages", "cluster_m",
                                              "cluster_n", "group_m", "persistent_ctas", "split_k")],
        "family", "dtype", "raster", "epilogue", "schedule",
        *[pl.col(c) == "true" for c in ("persistent", "stream_k")],
        fitted_us=pl.col("time_us").cast(pl.Float64) * 1.1, corrected_us=pl.col("time_us").cast(pl.Float64))
    # the same configurations predicted in another testlist's fold: not this table's rows
    other = table.with_columns(pl.col("fitted_us") * 3, testlist=pl.lit("other"))
    pl.concat([table.with_columns(testlist=pl.lit("first")), other]).write_parquet(tmp_path / "p.parquet")
    assert script.main([str(first), str(again), "--predictions", str(tmp_path / "p.parquet")]) == 0
    out = capsys.readouterr().out
    assert "predictions: 64 of the paired rows" in out
    fitted = next(line for line in out.splitlines() if line.startswith("fitted_us")).split()
    corrected = next(line for line in out.splitlines() if line.startswith("corrected_us")).split()
    # against the first, the repeat, the mean: fitted 10%, 1 - 1.1/1.21, 0; corrected 0, 1 - 1/1.21, 1 - 1/1.1
    assert [fitted[1], fitted[8], fitted[15]] == ["10.00", "9.09", "0.00"]
    assert [corrected[1], corrected[8], corrected[15]] == ["0.00", "17.36", "9.09"]
