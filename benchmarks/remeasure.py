"""Measure again, as the sweep measured them, the reference rows a kernel fix made stale.

``STALE`` names each fix: the rows of the shipped and held-out tables whose kernel it
changed, and why. On a GPU (numpy + cuda-python only)

    PYTHONPATH=src python3 benchmarks/remeasure.py --out DIR

measures the local GPU's stale rows (those of results/<its slug>/, and any that
``--supersede`` set aside for it) into DIR/<table>.csv, one per table with stale rows
(``<table>``: its path under results/<slug>/ with "/" as "+"), each through a journal
beside it (resumable), with the sweep's settings (bench.collect.run_collect: cold L2,
spread under 2% or 2 s, verified against float64). Back on a machine with the repository

    python benchmarks/remeasure.py --merge DIR --gpu SLUG

puts each measured row in place of its stale one (``gemmperf merge``'s rule: the later ok
row wins; table order kept) and drops what ``--supersede`` had set aside for those tables.
A GPU not lent now keeps measurements of a kernel that no longer exists:

    python benchmarks/remeasure.py --supersede SLUG

moves its stale rows out of its tables into results/<slug>/superseded/<table>.csv (same
columns), where no fit reads them and ``--out`` on that GPU finds them. ``--list`` (no
GPU) counts the stale rows of every GPU's tables.
"""

from __future__ import annotations

import argparse
import csv
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "results"
SUPERSEDED = "superseded"


def _split2_wide_unclustered(row: dict) -> bool:
    return (row["timestamp"] < "2026-11-29" and row["family"] == "ws-hopper" and int(row["split_k"]) == 2
            and int(row["tile_m"]) * int(row["tile_n"]) == 128 * 256
            and int(row["cluster_m"]) * int(row["cluster_n"]) == 1)


# name -> (which rows, the fix): every row measured before a fix that changed its kernel
STALE = {
    "split2-wide-unclustered": (
        _split2_wide_unclustered,
        "ws-hopper's split-K fix-up, read one contributor at a time (kernels/hopper.cu, reduce_partials): at "
        "split 2 on 1x1 clusters ptxas had serialized a 128-accumulator tile's partial loads (128x256, 256x128)"),
}


def is_stale(row: dict) -> bool:
    """A verified row measured with a kernel a fix has changed since."""
    return row.get("status") == "ok" and any(pick(row) for pick, _ in STALE.values())


def tables(slug: str) -> list[Path]:
    """The GPU's measurement tables: shipped (every dtype) and the held-out lists'."""
    base = RESULTS / slug
    return sorted(p for d in ("shipped", "holdout") for p in (base / d).rglob("*.csv")
                  if "measurements" in p.parts or d != "shipped")


def table_name(slug: str, path: Path) -> str:
    return "+".join(path.relative_to(RESULTS / slug).parts)


def read(path: Path) -> tuple[list[str], list[dict]]:
    with open(path, newline="") as f:
        r = csv.DictReader(f)
        return list(r.fieldnames or []), list(r)


def write(path: Path, header: list[str], rows: list[dict]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=header, lineterminator="\n")
        w.writeheader()
        w.writerows(rows)


def stale_rows(slug: str) -> dict[str, list[dict]]:
    """table name -> its stale rows: in the table, or set aside by --supersede."""
    out = {}
    for path in tables(slug):
        rows = [r for r in read(path)[1] if is_stale(r)]
        if rows:
            out[table_name(slug, path)] = rows
    for path in sorted((RESULTS / slug / SUPERSEDED).glob("*.csv")):
        out.setdefault(path.name, []).extend(read(path)[1])
    return out


def as_task(row: dict) -> dict:
    """A stale row as the sweep's task: its shape and its configuration, typed."""
    from probes import typed

    from gemmperf.problem import KernelConfig

    return typed({c: row[c] for c in ("m", "n", "k", *KernelConfig.__dataclass_fields__)})


def measure(out: Path) -> int:
    from gemmperf.bench.collect import measurer, table_rows
    from gemmperf.bench.journal import write_table
    from gemmperf.bench.sweep import run_sweep
    from gemmperf.hardware import probe

    gpu = probe(0)
    settings = {"warm_l2": False, "rel_spread": 0.02, "max_seconds": 2.0}  # the sweep's (run_collect)
    factory, context, prepare = measurer(gpu, settings)
    context = {**context, "warm_l2": False}
    out.mkdir(parents=True, exist_ok=True)
    for name, rows in stale_rows(gpu.slug).items():
        tasks = [as_task(r) for r in rows]
        journal = out / f"{name.removesuffix('.csv')}.journal.csv"
        counts = run_sweep(tasks, journal, factory, context=context, prepare=prepare)
        n = write_table(table_rows(tasks, journal, context), out / name)
        print(f"{name}: {n} rows ({', '.join(f'{k} {v}' for k, v in sorted(counts.items())) or 'already measured'})")
    return 0


def merge(directory: Path, slug: str) -> int:
    from gemmperf.bench.journal import task_key
    from gemmperf.bench.merge import merge_shards

    for new in sorted(p for p in directory.glob("*.csv") if not p.name.endswith(".journal.csv")):
        table = RESULTS / slug / Path(*new.name.split("+"))
        if not table.is_file():
            raise SystemExit(f"{new}: no table {table.relative_to(ROOT)} to merge into")
        n = merge_shards([table, new], table)
        print(f"{table.relative_to(ROOT)}: {n} rows")
        aside = RESULTS / slug / SUPERSEDED / new.name
        if aside.is_file():  # what is measured again is no longer set aside
            done = {task_key(r) for r in read(new)[1] if r["status"] == "ok"}
            header, rows = read(aside)
            left = [r for r in rows if task_key(r) not in done]
            write(aside, header, left) if left else aside.unlink()
    return 0


def supersede(slug: str) -> int:
    for path in tables(slug):
        header, rows = read(path)
        stale = [is_stale(r) for r in rows]
        keep = [r for r, s in zip(rows, stale) if not s]
        moved = [r for r, s in zip(rows, stale) if s]
        if not moved:
            continue
        aside = RESULTS / slug / SUPERSEDED / table_name(slug, path)
        before = read(aside)[1] if aside.is_file() else []
        write(aside, header, before + moved)
        write(path, header, keep)
        print(f"{path.relative_to(ROOT)}: {len(moved)} stale rows -> {aside.relative_to(ROOT)}")
    return 0


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", type=Path, help="measure this GPU's stale rows into OUT")
    p.add_argument("--merge", type=Path, help="a directory --out wrote, to merge into --gpu's tables")
    p.add_argument("--gpu", help="the GPU slug of --merge")
    p.add_argument("--supersede", metavar="SLUG", help="set a GPU's stale rows aside")
    p.add_argument("--list", action="store_true", help="count every GPU's stale rows")
    a = p.parse_args(argv)
    sys.path.insert(0, str(ROOT / "src"))
    sys.path.insert(0, str(ROOT / "benchmarks"))
    if a.list:
        for slug in sorted(d.name for d in RESULTS.iterdir() if d.is_dir()):
            for name, rows in stale_rows(slug).items():
                print(f"{slug} {name}: {len(rows)}")
        return 0
    if a.out:
        return measure(a.out)
    if a.merge:
        if not a.gpu:
            p.error("--merge needs --gpu")
        return merge(a.merge, a.gpu)
    if a.supersede:
        return supersede(a.supersede)
    p.error("one of --out, --merge, --supersede, --list")
    return 2


if __name__ == "__main__":
    sys.exit(main())
