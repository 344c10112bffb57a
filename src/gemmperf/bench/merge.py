"""Merge the shards of one testlist's sweep into one table."""

from __future__ import annotations

import csv
from pathlib import Path

from ..tables import ROW_COLUMNS
from .sweep import task_key


def merge_shards(shards: list[str | Path], out: str | Path) -> int:
    """Concatenate shard CSVs in shard order; a configuration measured twice keeps its
    last row. Returns the number of rows written."""
    rows: dict[tuple, dict] = {}
    for path in shards:
        with Path(path).open(newline="") as fh:
            for row in csv.DictReader(fh):
                rows[task_key(row)] = row
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    with out.open("w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=ROW_COLUMNS, extrasaction="ignore")
        writer.writeheader()
        writer.writerows(rows.values())
    return len(rows)
