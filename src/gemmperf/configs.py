"""Tables of configurations (problem shape x kernel configuration) in polars.

A configuration table has one row per (m, n, k, kernel configuration): the columns of
``problem.KernelConfig`` plus m, n, k. This module reads and validates them from CSV
and builds them from testlists and kernel sweeps.
"""

from __future__ import annotations

import csv
from pathlib import Path

import polars as pl

from .errors import UserError, where
from .problem import CONFIG_COLUMNS, KernelConfig, Shape

INT_COLUMNS = ("m", "n", "k", "tile_m", "tile_n", "tile_k", "stages", "cluster_m", "cluster_n")
SHAPE_COLUMNS = ("m", "n", "k")
TABLE_COLUMNS = SHAPE_COLUMNS + CONFIG_COLUMNS

_DEFAULTS = KernelConfig().as_dict()
_SCHEMA = {
    **{c: pl.Int64 for c in INT_COLUMNS},
    "family": pl.Utf8,
    "dtype": pl.Utf8,
    "raster": pl.Utf8,
    "mode": pl.Utf8,
    "persistent": pl.Boolean,
}


def _parse_bool(raw: str) -> bool:
    low = raw.strip().lower()
    if low in ("1", "true", "yes", "y", "t"):
        return True
    if low in ("0", "false", "no", "n", "f", ""):
        return False
    raise ValueError(raw)


def read_configs(path: str | Path) -> pl.DataFrame:
    """Read a configurations CSV: m,n,k required; other config columns optional.

    Every row is validated; the first bad value stops with file, line and value.
    Extra columns (e.g. measured times) are kept as they are.
    """
    path = Path(path)
    if not path.is_file():
        raise UserError(f"{path}: file not found")
    rows = []
    with path.open(newline="") as fh:
        reader = csv.DictReader(fh)
        header = [h.strip() for h in (reader.fieldnames or [])]
        missing = [c for c in SHAPE_COLUMNS if c not in header]
        if missing:
            raise UserError(f"{where(path, 1)}: missing column(s) {', '.join(missing)}")
        for line_no, raw in enumerate(reader, start=2):
            row = {k.strip(): (v or "").strip() for k, v in raw.items() if k is not None}
            rows.append(_validate_row(row, path, line_no))
    if not rows:
        raise UserError(f"{path}: no configurations")
    return to_frame(rows)


def _validate_row(row: dict, path: Path, line_no: int) -> dict:
    out = dict(row)
    for c in TABLE_COLUMNS:
        raw = row.get(c, "")
        if raw == "":
            if c in SHAPE_COLUMNS:
                raise UserError(f"{where(path, line_no)}: {c} is empty")
            out[c] = _DEFAULTS[c]
            continue
        try:
            if c in INT_COLUMNS:
                out[c] = int(raw)
            elif c == "persistent":
                out[c] = _parse_bool(raw)
            else:
                out[c] = raw
        except ValueError:
            raise UserError(f"{where(path, line_no)}: {c} = {raw!r} is not valid") from None
    for c in SHAPE_COLUMNS:
        if out[c] < 1:
            raise UserError(f"{where(path, line_no)}: {c} = {out[c]} must be >= 1")
    try:
        KernelConfig(**{c: out[c] for c in CONFIG_COLUMNS})
    except UserError as err:
        raise UserError(f"{where(path, line_no)}: {err}") from None
    return out


# Measured columns (see bench.sweep.ROW_COLUMNS) that are numbers, not text.
MEASURED_FLOATS = ("time_us", "time_us_min", "time_us_max", "spread", "max_rel_err",
                   "sm_clock_start_mhz", "sm_clock_end_mhz")
MEASURED_INTS = ("repeats", "launches_per_repeat", "registers", "smem_bytes", "spill_bytes")


def to_frame(rows: list[dict]) -> pl.DataFrame:
    """Rows (dicts with at least the table columns) -> typed DataFrame, table columns first."""
    df = pl.DataFrame(rows, infer_schema_length=None)
    df = df.with_columns([pl.col(c).cast(t) for c, t in _SCHEMA.items() if c in df.columns])
    numbers = [pl.col(c).cast(pl.Float64, strict=False) for c in MEASURED_FLOATS if c in df.columns]
    numbers += [pl.col(c).cast(pl.Int64, strict=False) for c in MEASURED_INTS if c in df.columns]
    if numbers:
        df = df.with_columns(numbers)
    rest = [c for c in df.columns if c not in TABLE_COLUMNS]
    return df.select([*TABLE_COLUMNS, *rest])


def fill_defaults(df: pl.DataFrame) -> pl.DataFrame:
    """Add any missing configuration column with the KernelConfig default."""
    missing = [pl.lit(_DEFAULTS[c]).cast(_SCHEMA[c]).alias(c) for c in CONFIG_COLUMNS if c not in df.columns]
    return df.with_columns(missing) if missing else df


def cross(shapes: list[Shape], configs: list[KernelConfig]) -> pl.DataFrame:
    """Every shape with every configuration of its dtype."""
    rows = [
        {"m": s.m, "n": s.n, "k": s.k, **c.as_dict()}
        for s in shapes
        for c in configs
        if c.dtype == s.dtype
    ]
    if not rows:
        raise UserError("no configuration matches the problems' dtypes")
    return to_frame(rows)


def row_config(row: dict) -> KernelConfig:
    return KernelConfig(**{c: row[c] for c in CONFIG_COLUMNS})
