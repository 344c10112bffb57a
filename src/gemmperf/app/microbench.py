"""``gemmperf microbench``: the microbenchmarks the fit starts from (bench.microbench)."""

from __future__ import annotations

from ..bench.microbench import run_microbench
from ..problem import FAMILIES
from .resolve import parse_families, resolve_gpu


def cmd_microbench(a) -> int:
    gpu = resolve_gpu(a.gpu)
    n = run_microbench(gpu, a.out, parse_families(a.families), a.dtype)
    print(f"wrote {n} microbenchmark rows to {a.out}")
    return 0


def add_parsers(sub) -> None:
    p = sub.add_parser("microbench",
                       help="T_INIT, T_EPILOGUE, load/math throughput and latency, DRAM and L2 bandwidth")
    p.add_argument("--out", required=True, help="microbenchmark CSV")
    p.add_argument("--gpu", default="auto", help="hardware.json of this GPU, or auto (probe)")
    p.add_argument("--families", default=",".join(FAMILIES))
    p.add_argument("--dtype", default="bf16", choices=("bf16", "fp16"))
    p.set_defaults(func=cmd_microbench)
