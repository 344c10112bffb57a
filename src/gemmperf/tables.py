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
from pathlib import Path

from .errors import UserError
from .problem import CONFIG_COLUMNS, KernelConfig

# ------------------------------------------------------------------ configuration columns

SHAPE_COLUMNS = ("m", "n", "k")
# the kernel configuration's integer fields: tile_m, tile_n, tile_k, stages, cluster_m, cluster_n
CONFIG_INT_COLUMNS = tuple(f.name for f in dataclasses.fields(KernelConfig) if f.type in ("int", int))
INT_COLUMNS = SHAPE_COLUMNS + CONFIG_INT_COLUMNS
# a configuration's tiling: what the optimizer chooses for a (shape, family, dtype)
TILING_COLUMNS = CONFIG_INT_COLUMNS + ("persistent", "raster")
# identity of a configuration table's row, and of a measured task
KEY_COLUMNS = SHAPE_COLUMNS + CONFIG_COLUMNS
# identity of a full-mode configuration (valid measurements are all full mode)
CONFIG_KEY = SHAPE_COLUMNS + ("family", "dtype") + TILING_COLUMNS
# the order fits see measured rows in: their float sums (and trees' tied splits) then
# do not depend on the order the measurement files were listed in
CANONICAL_ORDER = ("family", "dtype", *SHAPE_COLUMNS, *CONFIG_INT_COLUMNS, "persistent", "raster", "time_us")

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


def read_measurements(path: str | Path, required=MEASUREMENT_REQUIRED):
    """A measurement table (CSV, or parquet by suffix) as a polars DataFrame, types
    inferred from every row; ``persistent`` as booleans. A missing or unreadable file or
    a missing ``required`` column stops with one line naming the file."""
    import polars as pl

    path = Path(path)
    if not path.is_file():
        raise UserError(f"{path}: measurement file not found")
    try:
        if path.suffix == ".parquet":
            df = pl.read_parquet(path)
        else:
            df = pl.read_csv(path, infer_schema_length=None)
    except (pl.exceptions.PolarsError, OSError) as err:
        first = (str(err).strip().splitlines() or [type(err).__name__])[0]
        raise UserError(f"{path}: cannot read measurements ({first})") from None
    missing = [c for c in required if c not in df.columns]
    if missing:
        raise UserError(f"{path}: missing column(s) {', '.join(missing)}")
    if "persistent" in df.columns and df.schema["persistent"] == pl.Utf8:
        df = df.with_columns(pl.col("persistent").str.to_lowercase() == "true")
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


def canonical_order(df):
    """``df`` sorted by CANONICAL_ORDER (the columns it has), ties in their order."""
    return df.sort([c for c in CANONICAL_ORDER if c in df.columns], maintain_order=True)
