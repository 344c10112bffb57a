"""report.compare and the index's GPUs side by side (issue 18): measured time of the
same configurations paired across GPUs, and each GPU's best tiling per shape."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest

from gemmperf.app.cli import main
from gemmperf.report.compare import best_tilings, config_label, measured_configs, picks_of, time_ratios
from gemmperf.tables import read_measurements

REPO = Path(__file__).resolve().parent.parent
H100, H200 = "h100-sxm5-80gb", "h200-sxm-141gb"


def _decode(slug: str, rows: int = 48) -> pl.DataFrame:
    return read_measurements(REPO / "results" / slug / "shipped" / "measurements" / "decode.csv").head(rows)


def test_ratios_pair_configurations_not_rows():
    a = _decode(H100)
    # the same configurations, half as fast, in another order, plus rows the first GPU lacks
    b = pl.concat([a.with_columns(pl.col("time_us") * 2.0).reverse(),
                   _decode(H100, 64).tail(16).with_columns(pl.col("time_us") * 100.0)])
    out = time_ratios({H100: measured_configs([a]), "other": measured_configs([b])})
    row = out.filter(pl.col("class") == "all").row(0, named=True)
    assert row["configurations"] == 48 and row["against"] == H100
    assert row["geomean ratio"] == pytest.approx(2.0) and row["p5"] == pytest.approx(2.0)
    assert "decode (M <= 64)" in out.get_column("class").to_list()
    assert time_ratios({H100: measured_configs([a])}).height == 0


def test_ratios_on_the_shipped_h100_and_h200():
    out = time_ratios({g: measured_configs([_decode(g, 10_000)]) for g in (H100, H200)})
    row = out.filter(pl.col("class") == "all").row(0, named=True)
    # 960 configurations each, every one paired (the H100's stale split-K row measured again on 2026-12-05)
    assert row["configurations"] == 960
    # the H200 ran these 0.8-1.1x the H100's time (measured 2026-11-25)
    assert 0.8 < row["geomean ratio"] < 1.0 and row["p5"] < row["geomean ratio"] < row["p95"]


def _tilings(picks: list[tuple[int, int]], best: list[int]) -> pl.DataFrame:
    rows = []
    for (m, tile_n), best_n in zip(picks, best):
        cfg = dict(tile_m=128, tile_n=tile_n, tile_k=64, stages=4, cluster_m=1, cluster_n=1, persistent=False,
                   raster="row", epilogue="direct", schedule="cooperative", group_m=8, persistent_ctas=0,
                   split_k=1, stream_k=False)
        rows.append({"m": m, "n": 256, "k": 256, "dtype": "bf16", "family": "ws-hopper", **cfg,
                     "predicted_us": float(m), "best_measured_us": float(m) + 1,
                     **{f"best_{k}": v for k, v in cfg.items()}, "best_tile_n": best_n})
    return pl.DataFrame(rows)


def test_best_tilings_say_where_the_gpus_agree():
    a = picks_of([_tilings([(1, 128), (2, 128)], [128, 256])])
    b = picks_of([_tilings([(1, 128), (2, 256)], [128, 256])])
    out = best_tilings({H100: a, H200: b})
    assert out.get_column("same pick").to_list() == [True, False]
    assert out.get_column("same measured best").to_list() == [True, True]
    assert out.get_column(f"{H200} pick")[1] == "128x256x64 s4 c1x1 cooperative direct"
    label = config_label({**a.row(0, named=True), "persistent": True, "split_k": 4})
    assert label.endswith("persistent split-K 4")


def test_index_shows_the_gpus_side_by_side(tmp_path, capsys):
    paths = {}
    for g in (H100, H200):
        d = tmp_path / g
        d.mkdir()
        measured_configs([_decode(g, 10_000)]).write_parquet(d / "measured.parquet")
        picks_of([_tilings([(1, 128), (2, 128 if g == H100 else 256)], [128, 256])]).write_parquet(d / "picks.parquet")
        (d / "summary.json").write_text(json.dumps({"name": g, "source": "shipped", "note": "", "best": {}}))
        paths[g] = d
    out = tmp_path / "index.html"
    args = ["index", "--gpus", f"{H100},{H200}", "--summaries", *(str(paths[g] / "summary.json") for g in paths),
            "--out", str(out)]
    assert main([*args, "--measured", *(str(paths[g] / "measured.parquet") for g in paths),
                 "--picks", *(str(paths[g] / "picks.parquet") for g in paths)]) == 0
    page = out.read_text()
    assert "GPUs side by side" in page and "the same on 1 of 2 shapes" in page and "decode (M &lt;= 64)" in page
    capsys.readouterr()
    assert main([*args, "--measured", str(paths[H100] / "measured.parquet"), "--picks",
                 str(paths[H100] / "picks.parquet")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "1 --measured and 1 --picks files for 2 GPUs" in err


def test_runs_without_measurements_or_in_another_dtype_are_left_out():
    """A catalog run (no measurements) and another dtype's run beside two measured GPUs:
    the ratios and the picks compare the measured GPUs of the first run's dtype only."""
    measured = {H100: measured_configs([_decode(H100)]), f"{H100}/fp8": measured_configs([]),
                H200: measured_configs([_decode(H200)])}
    out = time_ratios(measured)
    assert set(out.get_column("GPU")) == {H200} and out.height > 0
    fp8 = _tilings([(1, 128), (2, 128)], [128, 256]).with_columns(pl.lit("fp8").alias("dtype"))
    picks = {H100: picks_of([_tilings([(1, 128), (2, 128)], [128, 256])]), f"{H100}/fp8": picks_of([fp8]),
             "catalog": picks_of([]), H200: picks_of([_tilings([(1, 128), (2, 256)], [128, 256])])}
    table = best_tilings(picks)
    assert table.get_column("same pick").to_list() == [True, False]
    assert f"{H100}/fp8 pick" not in table.columns
    assert time_ratios({H100: measured_configs([])}).height == 0
