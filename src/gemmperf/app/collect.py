"""``gemmperf collect``: measure a testlist's configurations on the local GPU."""

from __future__ import annotations

from ..bench.collect import PRESETS, run_collect
from ..errors import UserError
from ..problem import FAMILIES
from .resolve import parse_families, resolve_gpu


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
    counts, n_tasks = run_collect(
        gpu, a.testlist, a.out, families, a.dtype, a.preset, parse_shard(a.shard), warm_l2=a.warm_l2,
        rel_spread=a.rel_spread, max_seconds=a.max_seconds, timeout_s=a.timeout, limit=a.limit,
    )
    print(f"{a.out}: {sum(counts.values())} measured now ({counts}); {n_tasks} in this shard")
    return 0


def add_parsers(sub) -> None:
    p = sub.add_parser("collect", help="measure a testlist's configurations on the local GPU (appends, resumes)")
    p.add_argument("--testlist", required=True, help="testlist CSV (m,n,k[,dtype])")
    p.add_argument("--out", required=True, help="measurement CSV (appended; rerun to resume)")
    p.add_argument("--gpu", default="auto", help="hardware.json of this GPU, or auto (probe)")
    p.add_argument("--families", default=",".join(FAMILIES), help="comma-separated kernel families")
    p.add_argument("--dtype", default="bf16", choices=("bf16", "fp16"), help="tensor-core input dtype")
    p.add_argument("--preset", default="default", choices=PRESETS, help="which configurations per problem")
    p.add_argument("--shard", default="0/1", help="i/n: measure the i-th of n shards (0-based)")
    p.add_argument("--warm-l2", action="store_true", help="reuse one copy of A and B (L2 may serve them)")
    p.add_argument("--rel-spread", type=float, default=0.02, help="stop repeating under this relative spread")
    p.add_argument("--max-seconds", type=float, default=2.0, help="time cap per configuration's timing")
    p.add_argument("--timeout", type=float, default=120.0, help="seconds before a configuration is a timeout")
    p.add_argument("--limit", type=int, default=0, help="measure at most this many pending configurations")
    p.set_defaults(func=cmd_collect)
