"""Configuration tables (problem shape x kernel configuration) in polars.

A configuration table has one row per (m, n, k, kernel configuration): the columns
``tables.KEY_COLUMNS``. This module reads and validates them from CSV, row by row (a
measurement table read this way keeps its measured columns as text, numbers cast), and
builds them from shapes and kernel sweeps.
"""

from __future__ import annotations

from pathlib import Path

import polars as pl

from . import csvfile
from .errors import UserError, where
from .problem import CONFIG_COLUMNS, KernelConfig, Shape, check_row_flops
from .tables import (INT_COLUMNS, KEY_COLUMNS, MEASURED_COLUMNS, MEASURED_FLOATS, MEASURED_INTS,
                     MEASUREMENT_PARSERS, ROW_COLUMNS, SHAPE_COLUMNS, check_measured_row)

_DEFAULTS = KernelConfig().as_dict()
_SCHEMA = {
    **{c: pl.Int64 for c in INT_COLUMNS},
    "family": pl.Utf8,
    "dtype": pl.Utf8,
    "raster": pl.Utf8,
    "mode": pl.Utf8,
    "epilogue": pl.Utf8,
    "schedule": pl.Utf8,
    "persistent": pl.Boolean,
    "stream_k": pl.Boolean,
}


def _parse_bool(raw: str) -> bool:
    low = raw.lower()
    if low in ("1", "true", "yes", "y", "t"):
        return True
    if low in ("0", "false", "no", "n", "f"):
        return False
    raise csvfile.BadValue("not true or false")


def _parsers() -> dict:
    """The columns a configurations CSV may have: the configuration's (typed), and a
    measurement's (checked; numbers as numbers, the rest kept as text)."""
    parsers = {c: MEASUREMENT_PARSERS[c] for c in ROW_COLUMNS}
    parsers.update({c: csvfile.as_text(parsers[c]) for c in MEASURED_COLUMNS
                    if c not in MEASURED_FLOATS + MEASURED_INTS})
    parsers["persistent"] = parsers["stream_k"] = _parse_bool
    return parsers


_PARSERS = _parsers()
_TEXT = tuple(c for c in MEASURED_COLUMNS if c not in MEASURED_FLOATS + MEASURED_INTS)


def read_configs(path: str | Path, with_lines: bool = False):
    """Read a configurations CSV: m,n,k required; the other configuration columns
    optional (empty or absent: KernelConfig's default); a measurement's columns
    (tables.ROW_COLUMNS) may follow and are kept. Blank lines and lines starting with
    '#' are skipped.

    Read strictly (csvfile.read): unknown columns, bad values, sizes over the limits and
    a row with status ok but no valid time stop with file, line, column and value.
    With ``with_lines``: (frame, the file line each row came from).
    """
    table = csvfile.read(path, _PARSERS, required=SHAPE_COLUMNS, nonempty=SHAPE_COLUMNS, comments=True,
                         check_row=_check_row, what="configuration file")
    if not table.rows:
        raise UserError(f"{table.path}: no configurations")
    rows = []
    for row, line in zip(table.rows, table.lines):
        out = {c: (_DEFAULTS[c] if row.get(c) is None else row[c]) for c in KEY_COLUMNS}
        out.update({c: ("" if row[c] is None and c in _TEXT else row[c]) for c in row if c not in KEY_COLUMNS})
        try:
            KernelConfig(**{c: out[c] for c in CONFIG_COLUMNS})
        except UserError as err:
            raise UserError(f"{where(table.path, line)}: {err}") from None
        rows.append(out)
    return (to_frame(rows), list(table.lines)) if with_lines else to_frame(rows)


def _check_row(row: dict) -> None:
    check_row_flops(row)
    if "status" in row:
        check_measured_row(row, required=())


def to_frame(rows: list[dict]) -> pl.DataFrame:
    """Rows (dicts with at least the table columns) -> typed DataFrame, table columns first."""
    df = pl.DataFrame(rows, infer_schema_length=None)
    df = df.with_columns([pl.col(c).cast(t) for c, t in _SCHEMA.items() if c in df.columns])
    numbers = [pl.col(c).cast(pl.Float64, strict=False) for c in MEASURED_FLOATS if c in df.columns]
    numbers += [pl.col(c).cast(pl.Int64, strict=False) for c in MEASURED_INTS if c in df.columns]
    if numbers:
        df = df.with_columns(numbers)
    rest = [c for c in df.columns if c not in KEY_COLUMNS]
    return df.select([*KEY_COLUMNS, *rest])


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

