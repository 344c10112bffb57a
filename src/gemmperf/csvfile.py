"""The one strict CSV reader: every CSV the project reads (testlists, configuration
tables, measurements, microbenchmarks) goes through ``read``.

A file is UTF-8 text (a leading byte-order mark is dropped) with a header line of known,
distinct column names, then rows of exactly as many values. Each value is parsed by its
column's parser; the first bad header, row or value stops with one line naming the file,
the line, the column and the value (``testlists/x.csv:7: column k = '1e99x': not an
integer``). Nothing is skipped or replaced silently: only blank lines, and comment lines
starting with '#' where the format allows them.

Standard library only: the GPU-side code reads and writes these files on machines that
have numpy and cuda-python but not polars.
"""

from __future__ import annotations

import csv
import difflib
import io
import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from .errors import UserError, where

Parser = Callable[[str], object]

_INT = re.compile(r"[+-]?[0-9]+")
_FLOAT = re.compile(r"[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?")
_NON_FINITE = ("nan", "+nan", "-nan", "inf", "+inf", "-inf", "infinity", "+infinity", "-infinity")
# the largest value of a signed 64-bit integer (polars Int64, numpy int64)
INT64_MAX = 2**63 - 1


class BadValue(ValueError):
    """A value its column does not accept; the reader adds the file, line and column.

    Raised by parsers (``BadValue(reason)``) and by row checks, which name the column
    (``BadValue(reason, column)``)."""

    def __init__(self, reason: str, column: str | None = None):
        super().__init__(reason)
        self.reason, self.column = reason, column


# ------------------------------------------------------------------ parsers


def integer(lo: int = 1, hi: int = INT64_MAX, why: str = "") -> Parser:
    """Decimal integers in [lo, hi]; ``why`` says where ``hi`` comes from."""

    def parse(raw: str) -> int:
        if not _INT.fullmatch(raw):
            raise BadValue("not an integer")
        digits = raw.lstrip("+-").lstrip("0")
        value = int(raw) if len(digits) <= 20 else (hi + 1 if raw[0] != "-" else lo - 1)
        if value < lo:
            raise BadValue(f"must be >= {lo}")
        if value > hi:
            raise BadValue(f"above the limit {hi}" + (f" ({why})" if why else ""))
        return value

    parse.kind = "int"
    return parse


def number(finite: bool = True, positive: bool = False) -> Parser:
    """Decimal numbers (float); ``finite``: nan and inf are refused; ``positive``: > 0."""

    def parse(raw: str) -> float:
        if raw.lower() in _NON_FINITE:
            if finite:
                raise BadValue("not a finite number")
            return float(raw)
        if not _FLOAT.fullmatch(raw):
            raise BadValue("not a number")
        value = float(raw)
        if finite and not math.isfinite(value):
            raise BadValue("not a finite number (too large)")
        if positive and not value > 0:
            raise BadValue("must be > 0")
        return value

    parse.kind = "float"
    return parse


def boolean(raw: str) -> bool:
    """true or false, in any case."""
    low = raw.lower()
    if low not in ("true", "false"):
        raise BadValue("not true or false")
    return low == "true"


boolean.kind = "bool"


def choice(values, what: str = "value") -> Parser:
    """One of ``values`` (exact case)."""
    values = tuple(values)

    def parse(raw: str) -> str:
        if raw not in values:
            raise BadValue(f"unknown {what}; known: {', '.join(values)}")
        return raw

    return parse


def text(raw: str) -> str:
    return raw


def as_text(parser: Parser) -> Parser:
    """``parser``'s check, keeping the value as the text it was."""

    def parse(raw: str) -> str:
        parser(raw)
        return raw

    return parse


# ------------------------------------------------------------------ the reader


@dataclass(frozen=True)
class Table:
    """A file's columns (in its order) and its rows: parsed values (None where empty) and
    the line each row starts on."""

    path: Path
    columns: tuple[str, ...]
    rows: list[dict]
    lines: list[int]

    def column(self, name: str) -> list:
        return [r[name] for r in self.rows]


def read(path, columns: dict[str, Parser], required=(), nonempty=(), comments: bool = False,
         check_row: Callable[[dict], None] | None = None, what: str = "file") -> Table:
    """Read ``path`` strictly.

    ``columns``: every column the format knows, with its parser (others are an error);
    ``required``: columns the header must have; ``nonempty``: columns whose values may
    not be empty (a column the file lacks is not checked); ``comments``: skip lines
    starting with '#'; ``check_row``: checks across a row's values (raise BadValue
    naming the column). ``what`` names the file's kind in the message for a missing
    file."""
    path = Path(path)
    if path.is_dir():
        raise UserError(f"{path}: is a folder, expected a {what}")
    if not path.is_file():
        raise UserError(f"{path}: {what} not found")
    records = _records(path, _text(path))
    header, line = _header(path, records, comments)
    _check_header(path, line, header, columns, required)
    parsers = [columns[c] for c in header]
    must = [c in nonempty for c in header]
    rows, lines = [], []
    for line, values in records:
        if _skip(values, comments):
            continue
        _check_shape(path, line, values, header)
        row = {}
        for name, raw, parse, needed in zip(header, values, parsers, must):
            row[name] = _value(path, line, name, raw.strip(), parse, needed)
        if check_row is not None:
            try:
                check_row(row)
            except BadValue as err:
                value = row.get(err.column)
                shown = "" if value is None else value
                raise UserError(f"{where(path, line)}: column {err.column} = {str(shown)!r}: "
                                f"{err.reason}") from None
        rows.append(row)
        lines.append(line)
    return Table(path, tuple(header), rows, lines)


def _text(path: Path) -> str:
    try:
        data = path.read_bytes()
    except OSError as err:
        raise UserError(f"{path}: cannot read ({err.strerror or err})") from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as err:
        line = data.count(b"\n", 0, err.start) + 1
        raise UserError(f"{where(path, line)}: not UTF-8 text (byte 0x{data[err.start]:02x} "
                        f"at offset {err.start})") from None
    return text[1:] if text.startswith("\ufeff") else text


def _records(path: Path, text: str):
    """(first line number, values) per CSV record; a quoted value may span lines."""
    reader = csv.reader(io.StringIO(text, newline=""), strict=True)
    start = 1
    while True:
        try:
            values = next(reader)
        except StopIteration:
            return
        except csv.Error as err:
            raise UserError(f"{where(path, start)}: not valid CSV ({err})") from None
        yield start, values
        start = reader.line_num + 1


def _skip(values: list[str], comments: bool) -> bool:
    if all(not v.strip() for v in values):
        return True
    return comments and values[0].lstrip().startswith("#")


def _header(path: Path, records, comments: bool) -> tuple[list[str], int]:
    for line, values in records:
        if not _skip(values, comments):
            return [v.strip() for v in values], line
    raise UserError(f"{where(path, 1)}: empty, expected a header line")


def _check_header(path: Path, line: int, header: list[str], columns, required) -> None:
    at = where(path, line)
    for i, name in enumerate(header):
        if not name:
            raise UserError(f"{at}: column {i + 1} has no name (a stray comma?); known: {', '.join(columns)}")
        if name in header[:i]:
            raise UserError(f"{at}: column {name!r} appears twice (columns {header.index(name) + 1} "
                            f"and {i + 1})")
        if name not in columns:
            close = difflib.get_close_matches(name.lower(), list(columns), n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            raise UserError(f"{at}: unknown column {name!r}{hint}; known: {', '.join(columns)}")
    missing = [c for c in required if c not in header]
    if missing:
        raise UserError(f"{at}: missing column(s) {', '.join(missing)}")


def _check_shape(path: Path, line: int, values: list[str], header: list[str]) -> None:
    if [v.strip() for v in values] == header:
        raise UserError(f"{where(path, line)}: the header line again (two files joined?)")
    if len(values) != len(header):
        shown = ",".join(values)
        shown = shown if len(shown) <= 80 else shown[:77] + "..."
        raise UserError(f"{where(path, line)}: expected {len(header)} values, got {len(values)}: "
                        f"{shown!r}")


def _value(path: Path, line: int, name: str, raw: str, parse: Parser, needed: bool):
    if raw == "":
        if needed:
            raise UserError(f"{where(path, line)}: column {name} is empty")
        return None
    try:
        return parse(raw)
    except ValueError as err:
        shown = raw if len(raw) <= 40 else raw[:37] + "..."
        raise UserError(f"{where(path, line)}: column {name} = {shown!r}: {err}") from None
