"""Merge journals or shard tables of one testlist's sweep into one measurement table.

Per configuration key the winner is chosen by ``journal.best_rows``: ``ok`` beats every
failure status; between rows of the same rank the later timestamp wins, and on equal
timestamps the row read later (later in its file, or in a later file on the command
line). Lines that are not complete rows (torn) are never admitted.
"""

from __future__ import annotations

import sys
from pathlib import Path

from ..errors import UserError
from .journal import best_rows, read_rows, write_table


def merge_shards(shards: list[str | Path], out: str | Path) -> int:
    """Merge ``shards`` into ``out`` (rows in order of first appearance); returns the
    number of rows written. Torn lines are skipped, and counted on stderr."""
    rows, torn = [], 0
    for path in shards:
        if not Path(path).is_file():
            raise UserError(f"{path}: no such file to merge")
        found, bad = read_rows(path)
        rows += found
        torn += bad
        if bad:
            print(f"{path}: {bad} incomplete line(s) skipped", file=sys.stderr)
    return write_table(best_rows(rows).values(), out)
