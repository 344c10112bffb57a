"""The project's tables: their columns and types, reading a measurement table, and which
measured rows are valid.

- A configuration table has one row per problem and kernel configuration:
  ``KEY_COLUMNS`` (m, n, k and the fields of ``problem.KernelConfig``); ``configs``
  reads and builds them.
- A measurement table (results/<gpu>/measurements/<testlist>.csv, microbench.csv) is
  what a sweep writes: ``ROW_COLUMNS``, one row per measured configuration
  (``bench.sweep``); the microbenchmark table adds a few columns of its own in front.
- A prediction table is a configuration table plus, per model, ``model``,
  ``predicted_us``, ``limiter`` and the model's breakdown columns; ``model`` holds a
  model's NAME or one of the variants named below.
- The out-of-sample predictions (fit.accuracy) keep ``OUT_OF_SAMPLE_COLUMNS`` of each
  measured row plus predicted_us, model and split.

The names and types are standard-library data: the GPU-side sweep writes rows with them
on machines that have numpy and cuda-python but no polars. For that reason the functions
that work on polars frames import polars inside them.
"""

from __future__ import annotations

import dataclasses
import math
import re
from pathlib import Path

from . import csvfile
from .errors import UserError
from .problem import (CONFIG_COLUMNS, DTYPE_BYTES, EPILOGUES, FAMILIES, LATER_CONFIG_COLUMNS, MAX_DIM,
                      MAX_DIM_WHY, MODES, RASTERS, SCHEDULES, KernelConfig)

# ------------------------------------------------------------------ configuration columns

SHAPE_COLUMNS = ("m", "n", "k")
# the kernel configuration's integer fields: tile_m, tile_n, tile_k, stages, cluster_m,
# cluster_n, group_m, persistent_ctas, split_k
CONFIG_INT_COLUMNS = tuple(f.name for f in dataclasses.fields(KernelConfig) if f.type in ("int", int))
INT_COLUMNS = SHAPE_COLUMNS + CONFIG_INT_COLUMNS
# integer columns where 0 is a value (persistent_ctas: 0 = one CTA per SM); the others are >= 1
ZERO_OK_COLUMNS = ("persistent_ctas",)
# a configuration's tiling: what the optimizer chooses for a (shape, family, dtype)
TILING_COLUMNS = CONFIG_INT_COLUMNS + ("persistent", "raster", "epilogue", "schedule", "stream_k")
# the configuration's defaults (problem.KernelConfig): what a table written before a
# dimension existed was measured with
CONFIG_DEFAULTS = KernelConfig().as_dict()
# identity of a configuration table's row, and of a measured task
KEY_COLUMNS = SHAPE_COLUMNS + CONFIG_COLUMNS
# identity of a full-mode configuration (valid measurements are all full mode)
CONFIG_KEY = SHAPE_COLUMNS + ("family", "dtype") + TILING_COLUMNS
# the order fits see measured rows in: their float sums (and trees' tied splits) then
# do not depend on the order the measurement files were listed in
CANONICAL_ORDER = ("family", "dtype", *SHAPE_COLUMNS, *CONFIG_INT_COLUMNS, "persistent", "raster", "epilogue",
                   "schedule", "stream_k", "time_us")

# ------------------------------------------------------------------ measurement columns

# what a sweep records per configuration, after its KEY_COLUMNS
MEASURED_COLUMNS = (
    "out_dtype", "acc_dtype",
    "status", "reason",
    "time_us", "time_us_min", "time_us_max", "spread", "repeats", "launches_per_repeat",
    "converged", "max_rel_err",
    "registers", "smem_bytes", "spill_bytes",
    "gpu", "device", "driver", "cuda", "sm_clock_start_mhz", "sm_clock_end_mhz", "warm_l2",
    "timestamp",
)
ROW_COLUMNS = KEY_COLUMNS + MEASURED_COLUMNS
STATUSES = ("ok", "wrong_result", "compile_error", "launch_error", "timeout", "unsupported")
# measured columns that are numbers (us, MHz, relative errors; counts and bytes), not text
MEASURED_FLOATS = ("time_us", "time_us_min", "time_us_max", "spread", "max_rel_err",
                   "sm_clock_start_mhz", "sm_clock_end_mhz")
MEASURED_INTS = ("repeats", "launches_per_repeat", "registers", "smem_bytes", "spill_bytes")
# a measurement table without these cannot be fitted, scored or compared
MEASUREMENT_REQUIRED = ("m", "n", "k", "family", "dtype", "time_us")
# the microbenchmark table's own columns, in front of ROW_COLUMNS (bench.microbench); its
# bandwidth rows (kind dram, l2) measure no kernel and leave the KEY_COLUMNS empty
MICROBENCH_COLUMNS = ("kind", "k_stages", "ctas", "bytes", "flops")
MICROBENCH_REQUIRED = ("kind", "family", "dtype", "status", "time_us")

# ------------------------------------------------------------------ prediction columns

# values of a prediction table's ``model`` column besides the model modules' NAMEs
CORRECTED_MODEL = "ws-pipelined+residual"  # ws-pipelined with the residual correction
FITTED_MODEL = "ws-pipelined+fit"  # out of sample: constants fitted on the training folds
FITTED_CORRECTED_MODEL = "ws-pipelined+fit+residual"  # ... plus the correction fitted there
ABLATION_MARK = "-no-"  # "ws-pipelined+fit-no-<effect>": one effect switched off

# the columns of each measured row that the out-of-sample predictions keep
OUT_OF_SAMPLE_COLUMNS = ("testlist", "shape", "family", "dtype", *SHAPE_COLUMNS, *TILING_COLUMNS,
                         "out_dtype", "time_us")


# ------------------------------------------------------------------ reading and filtering


def _parsers() -> dict:
    """Every column a measurement table may have, with its parser (csvfile)."""
    dim = csvfile.integer(1, MAX_DIM, MAX_DIM_WHY)
    count = csvfile.integer(0)
    any_number = csvfile.number(finite=False)
    parsers = {c: count for c in MICROBENCH_COLUMNS[1:]}
    parsers.update({"kind": csvfile.text, **{c: dim for c in INT_COLUMNS}, **{c: count for c in MEASURED_INTS},
                    **{c: count for c in ZERO_OK_COLUMNS}, **{c: any_number for c in MEASURED_FLOATS}})
    parsers.update({"family": csvfile.choice(FAMILIES, "family"), "dtype": csvfile.choice(DTYPE_BYTES, "dtype"),
                    "out_dtype": csvfile.choice(DTYPE_BYTES, "dtype"), "acc_dtype": csvfile.choice(DTYPE_BYTES, "dtype"),
                    "raster": csvfile.choice(RASTERS, "raster"), "mode": csvfile.choice(MODES, "mode"),
                    "epilogue": csvfile.choice(EPILOGUES, "epilogue"),
                    "schedule": csvfile.choice(SCHEDULES, "schedule"),
                    "status": csvfile.choice(STATUSES, "status"), "persistent": csvfile.boolean,
                    "stream_k": csvfile.boolean,
                    "converged": csvfile.boolean, "warm_l2": csvfile.boolean})
    columns = (*MICROBENCH_COLUMNS, *ROW_COLUMNS)
    return {c: parsers.get(c, csvfile.text) for c in columns}


MEASUREMENT_PARSERS = _parsers()


def _polars_type(parser, pl):
    return {"int": pl.Int64, "float": pl.Float64, "bool": pl.Boolean}.get(getattr(parser, "kind", ""), pl.Utf8)


def check_measured_row(row: dict, required=MEASUREMENT_REQUIRED) -> None:
    """A measured row's checks across columns: the ``required`` values are there (a
    microbenchmark row, which has a ``kind``, may leave them empty; time_us only where
    the row is ok), and a row with status ok (or no status column) has a finite
    time_us > 0. Raises csvfile.BadValue."""
    if "status" in row and row["status"] is None:
        raise csvfile.BadValue("empty, a value is required", "status")
    if "kind" not in row:
        for c in required:
            if c != "time_us" and row.get(c) is None:
                raise csvfile.BadValue("empty, a value is required", c)
    if row.get("status", "ok") == "ok":
        time = row.get("time_us")
        if time is None or not math.isfinite(time) or time <= 0:
            raise csvfile.BadValue("a row with status ok needs a finite time_us > 0", "time_us")


def read_measurements(path: str | Path, required=MEASUREMENT_REQUIRED):
    """A measurement table (CSV, or parquet by suffix) as a polars DataFrame.

    Read strictly (csvfile.read): known columns only, each with its type
    (MEASUREMENT_PARSERS: integers Int64, numbers Float64, true/false Boolean, the rest
    text), the ``required`` columns present and filled, statuses known, and a row marked
    ok has a finite time_us > 0; rows that failed are kept (``valid_rows`` filters).
    The first bad header, row or value stops with one line naming the file, line,
    column and value."""
    import polars as pl

    path = Path(path)
    if path.suffix == ".parquet":
        return _read_parquet(path, required)
    table = csvfile.read(path, MEASUREMENT_PARSERS, required=required, nonempty=("status",),
                         check_row=lambda row: check_measured_row(row, required), what="measurement file")
    schema = {c: _polars_type(MEASUREMENT_PARSERS[c], pl) for c in table.columns}
    return with_config_defaults(pl.DataFrame({c: table.column(c) for c in table.columns}, schema=schema))


def with_config_defaults(df):
    """``df`` with the configuration dimensions added after the first measurements
    (problem.LATER_CONFIG_COLUMNS) at their defaults where it lacks them: a table written
    before they existed was measured with them. Only a table that names configurations
    (a ``tile_m`` column) gets them; nothing else is filled in."""
    import polars as pl

    if "tile_m" not in df.columns:
        return df
    missing = [c for c in LATER_CONFIG_COLUMNS if c not in df.columns]
    parsers = MEASUREMENT_PARSERS
    return df.with_columns([pl.lit(CONFIG_DEFAULTS[c], dtype=_polars_type(parsers[c], pl)).alias(c) for c in missing])


def _read_parquet(path: Path, required):
    """A parquet measurement table, checked like a CSV one (columns, types, rows)."""
    import polars as pl

    if path.is_dir():
        raise UserError(f"{path}: is a folder, expected a measurement file")
    if not path.is_file():
        raise UserError(f"{path}: measurement file not found")
    try:
        df = pl.read_parquet(path)
    except (pl.exceptions.PolarsError, OSError) as err:
        first = (str(err).strip().splitlines() or [type(err).__name__])[0]
        raise UserError(f"{path}: cannot read measurements ({first})") from None
    unknown = [c for c in df.columns if c not in MEASUREMENT_PARSERS]
    if unknown:
        raise UserError(f"{path}: unknown column {unknown[0]!r}; known: {', '.join(MEASUREMENT_PARSERS)}")
    missing = [c for c in required if c not in df.columns]
    if missing:
        raise UserError(f"{path}: missing column(s) {', '.join(missing)}")
    for c in df.columns:
        want = _polars_type(MEASUREMENT_PARSERS[c], pl)
        if df.schema[c] != want and not (df.schema[c].is_integer() and want in (pl.Int64, pl.Float64)):
            raise UserError(f"{path}: column {c} has type {df.schema[c]}, expected {want}")
    df = with_config_defaults(df.cast({c: _polars_type(MEASUREMENT_PARSERS[c], pl) for c in df.columns}))
    text = [(c, MEASUREMENT_PARSERS[c]) for c in df.columns if df.schema[c] == pl.Utf8]
    for i, row in enumerate(df.iter_rows(named=True), start=1):
        try:
            for c, parse in text:
                if row[c] is not None:
                    parse(row[c])
            check_measured_row(row, required)
        except csvfile.BadValue as err:
            column = err.column or c
            raise UserError(f"{path}: row {i}: column {column} = {str(row.get(column) or '')!r}: "
                            f"{err.reason}") from None
    return df


def valid_rows(meas):
    """Rows that measure the full kernel: status ok, full mode (or no mode column), a
    finite time_us > 0. Row order is kept."""
    import polars as pl

    df = meas
    if "status" in df.columns:
        df = df.filter(pl.col("status") == "ok")
    if "mode" in df.columns:
        df = df.filter(pl.col("mode").is_null() | (pl.col("mode") == "full"))
    time = pl.col("time_us")
    return df.filter(time.is_not_null() & time.is_finite() & (time > 0))


def measured_configs(measurements):
    """One row per configuration measured ok (``valid_rows``) in ``measurements``:
    CONFIG_KEY, typed (persistent and stream_k as booleans), and the median time_us. The
    dimensions added after a table was measured are at their defaults there; a frame
    without columns (no measurements) gives an empty frame."""
    import polars as pl

    if not measurements.columns:
        return pl.DataFrame()
    df = with_config_defaults(measurements)
    need = (*CONFIG_KEY, "status", "time_us")
    missing = [c for c in need if c not in df.columns]
    if missing:
        raise UserError(f"measurements: missing column(s) {', '.join(missing)}")
    flag = [pl.col(c).cast(pl.Utf8).str.to_lowercase().is_in(["true", "1"]).alias(c) for c in ("persistent", "stream_k")]
    df = valid_rows(df).with_columns(
        pl.col(*SHAPE_COLUMNS, *CONFIG_INT_COLUMNS).cast(pl.Int64), *flag,
        pl.col("family", "dtype", "raster", "epilogue", "schedule").cast(pl.Utf8),
        pl.col("time_us").cast(pl.Float64))
    return df.group_by(list(CONFIG_KEY), maintain_order=True).agg(pl.col("time_us").median())


def canonical_order(df):
    """``df`` sorted by CANONICAL_ORDER (the columns it has), ties in their order."""
    return df.sort([c for c in CANONICAL_ORDER if c in df.columns], maintain_order=True)


# ------------------------------------------------------------------ timed answers

# A run of configurations timed on shapes no testlist holds (benchmarks/optimizer_picks.py's
# GPU run; shipped as results/<gpu>/shipped/answers/<set>.csv): one row per configuration,
# named by its shape ("MxNxK") and KernelConfig.key(); the answer band (optimize.band) reads
# the time of whichever configuration the optimizer answers today.
ANSWER_RUN_REQUIRED = ("shape", "config", "status", "time_us")


def _answer_parsers() -> dict:
    number = csvfile.number(finite=False)
    return {"shape": csvfile.text, "config": csvfile.text, "kinds": csvfile.text, "status": csvfile.choice(STATUSES, "status"),
            "reason": csvfile.text, **{c: number for c in ("fitted_us", "corrected_us", "transfer_us", "transfer_corrected_us",
                                                          "time_us", "clock_start", "clock_end")}}


def _check_answer_row(row: dict) -> None:
    from .problem import parse_shape

    try:
        parse_shape(row["shape"] or "")
    except UserError as err:
        raise csvfile.BadValue(str(err).removeprefix(f"shape {row['shape']!r}: "), "shape") from None
    if not row["config"]:
        raise csvfile.BadValue("empty, a value is required", "config")
    try:
        KernelConfig.from_key(row["config"])
    except UserError as err:
        raise csvfile.BadValue(str(err).removeprefix(f"configuration {row['config']!r}: "), "config") from None
    check_measured_row(row, ANSWER_RUN_REQUIRED)


def read_answer_runs(path: str | Path):
    """A timed answers file (ANSWER_RUN_REQUIRED, and the benchmark's other columns) as
    a polars DataFrame, read strictly as ``read_measurements`` reads (a shape that is not
    MxNxK, an unknown status, an ok row without a finite time_us > 0: one line naming the
    file, line, column and value)."""
    import polars as pl

    parsers = _answer_parsers()
    table = csvfile.read(path, parsers, required=ANSWER_RUN_REQUIRED, nonempty=("status",),
                         check_row=_check_answer_row, what="timed answers file")
    schema = {c: _polars_type(parsers[c], pl) for c in table.columns}
    return pl.DataFrame({c: table.column(c) for c in table.columns}, schema=schema)


def answer_set(path: str | Path) -> str:
    """The set a timed answers file belongs to: its stem, less a re-timing round's
    "-picks<N>" ("fresh2-picks3.csv" -> "fresh2"; benchmarks/optimizer_picks.py names them
    so). A set's shapes are drawn together and no other set holds them."""
    return re.sub(r"-picks\d*$", "", Path(path).stem)


def answer_rows(paths):
    """The verified runs of timed answers files as configuration rows: m, n, k and the
    configuration's columns (``KernelConfig.from_key`` of its name), ``time_us``, the
    lists that named the run (``kinds``, where the file has them) and the file's ``set``
    (``answer_set``); what the residual correction learns from beside the
    testlists' rows (``fit.accuracy.fit_all``)."""
    import polars as pl

    from .problem import parse_shape

    rows = []
    for path in paths:
        runs = read_answer_runs(path).filter(pl.col("status") == "ok")
        if "kinds" not in runs.columns:
            runs = runs.with_columns(kinds=pl.lit(None, pl.Utf8))
        for shape, config, time_us, kinds in runs.select("shape", "config", "time_us", "kinds").iter_rows():
            s = parse_shape(shape)
            rows.append({"m": s.m, "n": s.n, "k": s.k, **KernelConfig.from_key(config).as_dict(),
                         "time_us": float(time_us), "kinds": kinds, "set": answer_set(path)})
    types = {int: pl.Int64, bool: pl.Boolean, str: pl.Utf8}
    schema = {**{c: pl.Int64 for c in SHAPE_COLUMNS}, **{c: types[type(v)] for c, v in CONFIG_DEFAULTS.items()},
              "time_us": pl.Float64, "kinds": pl.Utf8, "set": pl.Utf8}
    return pl.DataFrame(rows, schema=schema) if rows else pl.DataFrame(schema=schema)
