"""``gemmperf collect``: measure a testlist's configurations on the local GPU."""

from __future__ import annotations

import argparse
import os
import sys
import time

from ..bench.collect import KERNEL_DTYPES, PRESETS, SAMPLE_COUNT, SAMPLE_SEED, STANDIN_ENV, dtype_skips, run_collect
from ..bench.device import card_identity
from ..bench.journal import RETRIED
from ..errors import UserError
from ..problem import FAMILIES
from .resolve import parse_families, resolve_gpu

DESCRIPTION = f"""\
Measure every configuration of a testlist's problems on the local GPU: compile each
kernel (NVRTC, cached on disk), check it against a float64 reference, time it.

Each measured row is appended at once to a journal (--journal; default OUT with
.journal before its suffix), so a killed collect resumes where it stopped when run
again with the same arguments; at the end OUT is written from the journal: per
configuration its best row (ok before any failure, then the latest). Only one collect
may write a journal at a time (an exclusive lock on JOURNAL.lock); a second one stops
and names the holder's pid. Long compile logs go to JOURNAL_STEM.logs/ and the row's
reason names the file. Failed rows ({', '.join(RETRIED)}) are measured again with
--retry-failed, their old rows kept in the journal as history. Without a CUDA driver or
GPU collect stops with one line (exit 2); {STANDIN_ENV}=module:function replaces the
GPU by a stand-in measure function (tests).

--dtype is the tensor-core families' input dtype (simt computes fp32 whatever it is):
bf16, fp16, or fp8 (e4m3, ws-hopper only; bf16 output). A family with no kernel for
the dtype is skipped with a line saying so (ws-ampere under fp8); asking only for such
families is an error. Presets default, medium and small also measure split-K and
stream-K where a shape has fewer tiles than the GPU has SMs (bench.collect.shared_k_picks).
Preset sample measures --sample-count configurations per shape and family, a
stratified sample of the legal space drawn with --sample-seed over the whole testlist
(bench.sample): the same arguments give the same tasks on any GPU with the same legal
space, and --shard splits them by shape.
"""

EPILOG = """\
examples:
  gemmperf collect --testlist testlists/squares.csv --out squares.csv --preset small
  gemmperf collect --testlist testlists/llm.csv --out llm.1-of-4.csv --shard 1/4 \\
      --journal journal/llm.1-of-4.csv
  gemmperf collect --testlist testlists/squares.csv --out squares.csv --retry-failed
  gemmperf collect --testlist testlists/dsv3.csv --out dsv3-fp8.csv --families ws-hopper --dtype fp8 --preset medium
"""


def parse_shard(text: str) -> tuple[int, int]:
    """'i/n' -> (i, n), 0 <= i < n."""
    try:
        i, n = (int(x) for x in text.split("/"))
    except ValueError:
        raise UserError(f"--shard {text!r}: expected i/n, e.g. 0/4") from None
    if not 0 <= i < n:
        raise UserError(f"--shard {text!r}: need 0 <= i < n")
    return i, n


def cmd_collect(a) -> int:
    gpu = resolve_gpu(a.gpu)
    families = parse_families(a.families)
    if a.sample_count < 1:
        raise UserError(f"--sample-count {a.sample_count}: expected a positive count")
    if a.limit < 0:
        raise UserError(f"--limit {a.limit}: expected 0 (no limit) or a positive count")
    for family, why in dtype_skips(gpu, families, a.dtype).items():
        print(f"collect: skipping {family}: {why}", file=sys.stderr)
    card = None if os.environ.get(STANDIN_ENV, "").strip() else card_identity()
    if card:  # the rows' timestamps then say which card measured them
        print(f"collect: measuring on {gpu.name} {card} from {time.strftime('%Y-%m-%dT%H:%M:%S')}", flush=True)
    counts, n_tasks, written = run_collect(
        gpu, a.testlist, a.out, families, a.dtype, a.preset, parse_shard(a.shard), warm_l2=a.warm_l2,
        rel_spread=a.rel_spread, max_seconds=a.max_seconds, timeout_s=a.timeout, limit=a.limit,
        journal=a.journal, retry_failed=a.retry_failed, sample=(a.sample_count, a.sample_seed),
    )
    print(f"{a.out}: {written} of {n_tasks} configurations in this shard measured; "
          f"{sum(counts.values())} measured now ({counts})")
    return 0


def add_parsers(sub) -> None:
    p = sub.add_parser("collect", help="measure a testlist's configurations on the local GPU (journal, resumes)",
                       description=DESCRIPTION, epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--testlist", required=True, help="testlist CSV (m,n,k[,dtype])")
    p.add_argument("--out", required=True, help="measurement CSV, written from the journal at the end")
    p.add_argument("--journal", help="append-only journal of measured rows (default: OUT as X.journal.csv)")
    p.add_argument("--retry-failed", action="store_true",
                   help=f"measure again the configurations whose row is a failure ({', '.join(RETRIED)})")
    p.add_argument("--gpu", default="auto", help="hardware.json of this GPU, or auto (probe)")
    p.add_argument("--families", default=",".join(FAMILIES), help="comma-separated kernel families, e.g. ws-hopper,simt")
    p.add_argument("--dtype", default="bf16", choices=KERNEL_DTYPES,
                   help="tensor-core input dtype (default bf16; fp8: e4m3, ws-hopper only), e.g. --dtype fp8")
    p.add_argument("--preset", default="default", choices=PRESETS,
                   help="which configurations per problem: default (the family's sweep), medium, paper, small, "
                   "sample (stratified over the legal space)")
    p.add_argument("--sample-count", type=int, default=SAMPLE_COUNT,
                   help=f"preset sample: configurations per shape and family (default {SAMPLE_COUNT})")
    p.add_argument("--sample-seed", type=int, default=SAMPLE_SEED,
                   help=f"preset sample: the seed of the draw (default {SAMPLE_SEED})")
    p.add_argument("--shard", default="0/1", help="i/n: measure the i-th of n shards of the problems (0-based)")
    p.add_argument("--warm-l2", action=argparse.BooleanOptionalAction, default=False,
                   help="reuse one copy of A and B, so L2 may serve them (default: cold L2)")
    p.add_argument("--rel-spread", type=float, default=0.02, help="stop repeating under this relative spread")
    p.add_argument("--max-seconds", type=float, default=2.0, help="time cap per configuration's timing")
    p.add_argument("--timeout", type=float, default=120.0, help="seconds before a configuration is a timeout")
    p.add_argument("--limit", type=int, default=0, help="measure at most this many pending configurations (0: all)")
    p.set_defaults(func=cmd_collect)
