"""``gemmperf merge``: one testlist's collect shards (or journals) -> one measurement table."""

from __future__ import annotations

import argparse

from ..bench.merge import merge_shards

DESCRIPTION = """\
Merge the measurement CSVs of one testlist's collect shards (or collect journals) into
one table. Per configuration (shape and kernel configuration) one row is kept: an ok row
beats any failure (a timeout never replaces an ok); between rows of the same kind the
later timestamp wins, and on equal timestamps the one read later. Lines that are not
complete rows (torn by a crash) are skipped and counted on stderr.
"""

EPILOG = """\
example:
  gemmperf merge results/h100/measurements/shards/llm.*-of-4.csv --out results/h100/measurements/llm.csv
"""


def cmd_merge(a) -> int:
    rows = merge_shards(list(a.shards), a.out)
    print(f"{a.out}: {rows} rows from {len(a.shards)} file(s)")
    return 0


def add_parsers(sub) -> None:
    p = sub.add_parser("merge", help="merge collect shards into one measurement CSV (ok beats failures, then latest)",
                       description=DESCRIPTION, epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("shards", nargs="+", help="shard CSVs or journals, in shard order")
    p.add_argument("--out", required=True, help="measurement CSV to write")
    p.set_defaults(func=cmd_merge)
