"""Everything one GPU's report reads, loaded once, plus the derived columns the pages
share (shape class, ratio, error, arithmetic intensity)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

import polars as pl

from ..hardware import GPU, load_gpu
from ..params import ParamSet
from ..problem import DTYPE_BYTES
from ..tables import ABLATION_MARK, FITTED_MODEL, MEASURED_FLOATS, read_measurements


@dataclass
class ReportData:
    gpu: GPU
    pset: ParamSet
    source: str  # measure / shipped / catalog
    note: str
    skipped: dict[str, str]
    heldout: str | None
    predictions: pl.DataFrame  # every testlist, column "testlist"
    tilings: dict[str, pl.DataFrame]
    accuracy: pl.DataFrame | None = None  # accuracy.csv, without ablations
    ablations: pl.DataFrame | None = None  # ablations.csv (or the ablation rows of accuracy.csv)
    out_of_sample: pl.DataFrame | None = None
    headline: pl.DataFrame | None = None  # headline.csv: leave one testlist out, by (n, k), per class
    headline_picks: pl.DataFrame | None = None  # headline_picks.csv: each model's pick per shape
    answer_band: dict | None = None  # answer_band.json: how long the optimizer's answers ran (optimize.band)
    microbench: pl.DataFrame | None = None
    kernel_speed: dict | None = None
    shipped_readme: str | None = None
    testlists: list[str] = field(default_factory=list)
    measurements: dict[str, pl.DataFrame] | None = None  # testlist -> its measurement table, every row
    params_file: str | None = None  # where the parameters were read from
    params_date: str | None = None  # when that file was written (UTC)

    @property
    def measured(self) -> bool:
        return "time_us" in self.predictions.columns and self.predictions["time_us"].is_not_null().any()


def shape_class() -> pl.Expr:
    """small, skinny, odd sizes, square, rectangular (first that applies)."""
    m, n, k = pl.col("m"), pl.col("n"), pl.col("k")
    lo, hi = pl.min_horizontal(m, n), pl.max_horizontal(m, n)
    return (
        pl.when(m * n * k <= 512**3).then(pl.lit("small (MNK <= 512^3)"))
        .when((lo <= 64) | (hi >= 8 * lo)).then(pl.lit("skinny (min(M,N) <= 64 or 8:1)"))
        .when((m % 64 != 0) | (n % 64 != 0) | (k % 64 != 0)).then(pl.lit("odd sizes (not multiples of 64)"))
        .when((m == n) & (n == k)).then(pl.lit("square"))
        .otherwise(pl.lit("rectangular"))
    )


def _out_bytes(dtype_col: str) -> pl.Expr:
    return pl.col(dtype_col).replace_strict({k: float(v) for k, v in DTYPE_BYTES.items()}, default=2.0, return_dtype=pl.Float64)


# the columns that are numbers: the measured floats and the model's prediction (us)
NUMERIC = [*MEASURED_FLOATS, "predicted_us"]


def with_derived(df: pl.DataFrame) -> pl.DataFrame:
    """shape, config, class, flops, bytes, intensity; ratio and ape where measured.
    Numeric columns read as text (a measurements CSV with empty cells) are cast back."""
    df = df.with_columns(
        pl.col(c).cast(pl.Float64, strict=False) for c in NUMERIC if c in df.columns and df.schema[c] == pl.String
    )
    out = "out_dtype" if "out_dtype" in df.columns else "dtype"
    flops = 2.0 * pl.col("m").cast(pl.Float64) * pl.col("n") * pl.col("k")
    nbytes = (pl.col("m").cast(pl.Float64) * pl.col("k") + pl.col("k").cast(pl.Float64) * pl.col("n")) * _out_bytes(
        "dtype") + pl.col("m").cast(pl.Float64) * pl.col("n") * _out_bytes(out)
    df = df.with_columns(
        shape=pl.format("{}x{}x{}", "m", "n", "k"),
        config=pl.format("{} {} {}x{}x{} s{} c{}x{}{} {}", "family", "dtype", "tile_m", "tile_n", "tile_k",
                         "stages", "cluster_m", "cluster_n",
                         pl.when(pl.col("persistent").cast(pl.Boolean)).then(pl.lit(" persistent")).otherwise(pl.lit("")),
                         "raster"),
        shape_class=shape_class(),
        flops=flops,
        bytes=nbytes,
    ).with_columns(intensity=pl.col("flops") / pl.col("bytes"))
    if "time_us" in df.columns and "predicted_us" in df.columns:
        df = df.with_columns(
            ratio=pl.col("predicted_us") / pl.col("time_us"),
            ape_pct=(pl.col("predicted_us") / pl.col("time_us") - 1).abs() * 100,
            tflops=pl.col("flops") / pl.col("time_us") / 1e6,
        )
    return df


def split_ablations(acc: pl.DataFrame | None, abl: pl.DataFrame | None):
    """(accuracy table without ablation rows, ablation table): an accuracy.csv written
    with ablations (``gemmperf accuracy --ablations``) gives them its own
    ablation rows and its ws-pipelined+fit baseline when there is no ablations.csv."""
    if acc is None or acc.height == 0 or "model" not in acc.columns:
        return acc, abl
    marked = pl.col("model").str.contains(ABLATION_MARK, literal=True)
    if abl is None and acc.filter(marked).height:
        abl = acc.filter(marked | (pl.col("model") == FITTED_MODEL))
    return acc.filter(~marked), abl


def load(
    hardware: str | Path,
    params: str | Path,
    predictions: dict[str, str | Path],
    tilings: dict[str, str | Path],
    source: str,
    note: str,
    skipped: dict[str, str],
    heldout: str | None = None,
    accuracy: str | Path | None = None,
    out_of_sample: str | Path | None = None,
    microbench: str | Path | None = None,
    kernel_speed: str | Path | None = None,
    shipped_readme: str | Path | None = None,
    ablations: str | Path | None = None,
    measurements: dict[str, str | Path] | None = None,
    headline: str | Path | None = None,
    headline_picks: str | Path | None = None,
    answer_band: str | Path | None = None,
) -> ReportData:
    gpu = load_gpu(hardware)
    pset = ParamSet.load(params, gpu)
    frames = [pl.read_parquet(p).with_columns(testlist=pl.lit(t)) for t, p in predictions.items()]
    preds = with_derived(pl.concat(frames, how="diagonal_relaxed")) if frames else pl.DataFrame()
    if "time_us" in preds.columns and heldout:
        preds = preds.with_columns(
            split=pl.when(pl.col("testlist") == heldout).then(pl.lit("held out")).otherwise(pl.lit("fitted on"))
        )
    acc, abl = split_ablations(pl.read_csv(accuracy) if accuracy else None,
                               pl.read_csv(ablations) if ablations else None)
    head = pl.read_csv(headline, infer_schema_length=None) if headline else None
    acc = with_loto(acc, head)
    oos = None
    if out_of_sample:
        oos = with_derived(pl.read_parquet(out_of_sample))
    return ReportData(
        gpu=gpu,
        pset=pset,
        source=source,
        note=note,
        skipped=dict(skipped),
        heldout=heldout,
        predictions=preds,
        tilings={t: pl.read_csv(p, infer_schema_length=10000) for t, p in tilings.items()},
        accuracy=acc,
        ablations=abl,
        out_of_sample=oos,
        headline=head,
        headline_picks=pl.read_csv(headline_picks, infer_schema_length=None) if headline_picks else None,
        answer_band=json.loads(Path(answer_band).read_text()) if answer_band else None,
        microbench=read_measurements(microbench) if microbench else None,
        kernel_speed=json.loads(Path(kernel_speed).read_text()) if kernel_speed else None,
        shipped_readme=Path(shipped_readme).read_text() if shipped_readme else None,
        testlists=list(predictions),
        measurements={t: read_measurements(p) for t, p in measurements.items()} if measurements else None,
        params_file=str(params),
        params_date=_fitted(pset, params),
    )


def with_loto(acc: pl.DataFrame | None, head: pl.DataFrame | None) -> pl.DataFrame | None:
    """accuracy.csv plus headline.csv's leave-one-testlist-out rows of class "all" as
    split "loto" (the overview's preferred headline split)."""
    if head is None or head.is_empty():
        return acc
    loto = head.filter((pl.col("split") == "testlist") & (pl.col("class") == "all")).drop("class").with_columns(
        split=pl.lit("loto"), family=pl.lit("all"))
    return loto if acc is None else pl.concat([acc, loto], how="diagonal_relaxed")


def _fitted(pset: ParamSet, path: str | Path) -> str:
    """When the parameters were fitted (params.json's fit record), else when the file
    was last written, to the minute (UTC)."""
    try:
        stamp = datetime.fromisoformat(pset.fitted_at)
    except ValueError:
        return _written(path)
    return stamp.astimezone(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")


def _written(path: str | Path) -> str:
    """The UTC time a file was last written, to the minute."""
    stamp = datetime.fromtimestamp(Path(path).stat().st_mtime, tz=timezone.utc)
    return stamp.strftime("%Y-%m-%d %H:%M UTC")
