"""The reference sweep of issue 17, in resumable pieces: every testlist (random and the
first sealed list, a development list since step 47, among them) and the held-out list
(holdout), each shape over a stratified sample of the legal space (collect's ``sample``
preset), bf16 then fp8, on the local GPU.

Each (testlist, dtype) is one ``gemmperf collect`` with its own journal under
``results/<gpu>/incoming/<dtype>/``; the plan is worked through in order until the
deadline, so a run stopped anywhere resumes where it stopped when run again over the
same journals (copy them back between machines: flat, one file per journal, e.g.
``$OUT/bf16__holdout.journal.csv``, or more than 8 of them packed into one tar: a lent
machine brings back at most 8 files, its nested result folders may not come back, and its
next call's copy of the tree drops files the tree lacks). A collect cut by the deadline gets
SIGINT and keeps every row it measured. Prints a table of what is done at the end.

    PYTHONPATH=src python3 benchmarks/reference_sweep.py --deadline 540 [--only holdout]

Standard library only (runs where the GPU is).
"""

from __future__ import annotations

import argparse
import csv
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
HOPPER = "ws-hopper"
EVERY = "ws-hopper,ws-ampere,simt"
# (testlist, dtype, families, configurations per shape and family), in measuring order:
# the held-out lists first (each measured before any model work that could see it), the
# broad development list, the old testlists, then fp8 with half the configurations
PLAN = [
    ("holdout", "bf16", HOPPER, 16),
    ("holdout", "fp8", HOPPER, 8),
    ("sealed", "bf16", HOPPER, 16),
    ("random", "bf16", HOPPER, 16),
    ("llm", "bf16", HOPPER, 16),
    ("dsv3", "bf16", HOPPER, 16),
    ("decode", "bf16", HOPPER, 16),
    ("squares", "bf16", EVERY, 16),
    ("paper-grid", "bf16", HOPPER, 4),
    ("sealed", "fp8", HOPPER, 8),
    ("random", "fp8", HOPPER, 8),
    ("llm", "fp8", HOPPER, 8),
    ("dsv3", "fp8", HOPPER, 8),
    ("decode", "fp8", HOPPER, 8),
    ("squares", "fp8", HOPPER, 8),
]


def _rows(path: Path) -> list[dict]:
    """The rows of a journal or table; none if absent."""
    if not path.is_file():
        return []
    with path.open(newline="") as fh:
        return list(csv.DictReader(fh))


def rows_ok(path: Path) -> tuple[int, int]:
    """(rows, rows with status ok) of a journal or table; (0, 0) if absent."""
    rows = _rows(path)
    return len(rows), sum(r.get("status") == "ok" for r in rows)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--deadline", type=float, default=540.0, help="seconds for the whole run")
    p.add_argument("--gpu", default="auto", help="slug of results/<gpu>/ (auto: probe)")
    p.add_argument("--only", default="", help="comma-separated testlists (default: the whole plan)")
    p.add_argument("--dtypes", default="bf16,fp8")
    p.add_argument("--journals", default="", help="folder of the journals (default results/<gpu>/incoming)")
    p.add_argument("--plan", action="store_true", help="print the plan's task counts and stop (no GPU needed)")
    args = p.parse_args(argv)
    sys.path.insert(0, str(ROOT / "src"))
    from gemmperf.bench.collect import SAMPLE_SEED, tasks_for
    from gemmperf.hardware import get_gpu, probe
    from gemmperf.problem import read_testlist

    gpu = probe() if args.gpu == "auto" and not args.plan else get_gpu("h100-sxm5-80gb" if args.gpu == "auto" else args.gpu)
    only = set(filter(None, args.only.split(",")))
    plan = [x for x in PLAN if (not only or x[0] in only) and x[1] in args.dtypes.split(",")]
    start = time.monotonic()
    table = []
    for name, dtype, families, count in plan:
        folder = Path(args.journals or ROOT / "results" / gpu.slug / "incoming") / dtype
        out, journal = folder / f"{name}.csv", folder / f"{name}.journal.csv"
        testlist = ROOT / "testlists" / f"{name}.csv"
        left = args.deadline - (time.monotonic() - start)
        if left < 60 and not args.plan:
            table.append((name, dtype, families, count, "?", *rows_ok(journal)))
            continue
        others = {r.get("gpu") for r in _rows(journal)} - {gpu.slug, None}
        if others and not args.plan:
            print(f"reference_sweep: {journal} holds rows measured on {', '.join(sorted(others))}, "
                  f"and this GPU is {gpu.slug}: give --journals a folder of {gpu.slug}'s journals", file=sys.stderr)
            return 2
        total = len(tasks_for(read_testlist(testlist, dtype), gpu, families.split(","), dtype, "sample", (count, SAMPLE_SEED)))
        print(f"[{time.monotonic() - start:5.0f} s] {name} {dtype}: {total} tasks, {rows_ok(journal)[0]} in the journal",
              flush=True)
        if not args.plan and rows_ok(journal)[0] < total:
            folder.mkdir(parents=True, exist_ok=True)
            cmd = [sys.executable, "-m", "gemmperf", "collect", "--gpu", "auto", "--testlist", str(testlist),
                   "--out", str(out), "--journal", str(journal), "--families", families, "--dtype", dtype,
                   "--preset", "sample", "--sample-count", str(count)]
            env = {**os.environ, "PYTHONPATH": str(ROOT / "src"), "PYTHONUNBUFFERED": "1"}
            proc = subprocess.Popen(cmd, env=env, start_new_session=True)
            try:
                proc.wait(timeout=left - 10)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGINT)
                try:
                    proc.wait(timeout=8)
                except subprocess.TimeoutExpired:
                    os.killpg(proc.pid, signal.SIGKILL)
                    proc.wait()
        done, ok = rows_ok(journal)
        table.append((name, dtype, families, count, total, done, ok))
    print(f"\n{'testlist':<11} {'dtype':<5} {'per shape':>9} {'tasks':>6} {'measured':>8} {'ok':>6}")
    for name, dtype, families, count, total, done, ok in table:
        print(f"{name:<11} {dtype:<5} {count:>9} {total:>6} {done:>8} {ok:>6}")
    print(f"all: {sum(t[5] for t in table)} measured, "
          f"{time.monotonic() - start:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
