"""Configuration tables (problem shape x kernel configuration) in polars.

A configuration table has one row per (m, n, k, kernel configuration): the columns
``tables.KEY_COLUMNS``. This module reads and validates them from CSV, row by row (a
measurement table read this way keeps its measured columns as text, numbers cast), and
builds them from shapes and kernel sweeps.
"""

from __future__ import annotations

import csv
from pathlib import Path

import polars as pl

from .errors import UserError, where
from .problem import CONFIG_COLUMNS, KernelConfig, Shape
from .tables import INT_COLUMNS, KEY_COLUMNS, MEASURED_FLOATS, MEASURED_INTS, SHAPE_COLUMNS

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
    for c in KEY_COLUMNS:
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

