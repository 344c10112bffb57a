"""``gemmperf microbench``: the microbenchmarks the fit starts from (bench.microbench)."""

from __future__ import annotations

import argparse
import sys

from ..bench.collect import KERNEL_DTYPES, dtype_skips
from ..bench.microbench import run_microbench
from ..problem import FAMILIES
from .resolve import parse_families, resolve_gpu

DESCRIPTION = """\
Measure the microbenchmarks the model parameters are fitted from, on the local GPU: the
project's own kernels in their ablation modes, one full wave each (empty -> T_INIT,
epilogue-only -> T_EPILOGUE, load-only and math-only at several K -> throughput and
latency; for families that run clusters, full mode with one k-block alone and in clusters
of two -> what clusters cost), plus DRAM and L2 copy bandwidth. The kernel rows are a sweep
like collect's: its journal is OUT with the suffix .raw.csv, so a killed run resumes.
Without a CUDA driver or GPU it stops with one line (exit 2).
"""

EPILOG = """\
example:
  gemmperf microbench --out results/h100-sxm5-80gb/microbench.csv --families ws-hopper,simt
"""


def cmd_microbench(a) -> int:
    gpu = resolve_gpu(a.gpu)
    families = parse_families(a.families)
    for family, why in dtype_skips(gpu, families, a.dtype).items():
        print(f"microbench: skipping {family}: {why}", file=sys.stderr)
    n = run_microbench(gpu, a.out, families, a.dtype)
    print(f"wrote {n} microbenchmark rows to {a.out}")
    return 0


def add_parsers(sub) -> None:
    p = sub.add_parser("microbench",
                       help="T_INIT, T_EPILOGUE, load/math throughput and latency, DRAM and L2 bandwidth",
                       description=DESCRIPTION, epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", required=True, help="microbenchmark CSV")
    p.add_argument("--gpu", default="auto", help="hardware.json of this GPU, or auto (probe)")
    p.add_argument("--families", default=",".join(FAMILIES), help="comma-separated kernel families, e.g. ws-hopper,simt")
    p.add_argument("--dtype", default="bf16", choices=KERNEL_DTYPES,
                   help="tensor-core input dtype (default bf16; fp8: e4m3, ws-hopper only), e.g. --dtype fp8")
    p.set_defaults(func=cmd_microbench)
