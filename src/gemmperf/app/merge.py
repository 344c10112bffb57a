"""``gemmperf merge``: one testlist's collect shards -> one measurement table."""

from __future__ import annotations

from ..bench.merge import merge_shards


def cmd_merge(a) -> int:
    rows = merge_shards(list(a.shards), a.out)
    print(f"{a.out}: {rows} rows from {len(a.shards)} shard(s)")
    return 0


def add_parsers(sub) -> None:
    p = sub.add_parser("merge", help="merge collect shards into one measurement CSV (last row of a repeat wins)")
    p.add_argument("shards", nargs="+", help="shard CSVs, in shard order")
    p.add_argument("--out", required=True, help="measurement CSV to write")
    p.set_defaults(func=cmd_merge)
