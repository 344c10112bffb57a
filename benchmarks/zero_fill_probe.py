"""Probe: what does TMA's zero fill cost, alone and multicast in clusters?

On the shipped H100 data, decode rows (M <= 64, most of every A box zero-filled) in 2x2
clusters are still predicted 0.87-0.89x at 7-8 ring stages after ws-pipelined's step 11
(the zero fill a term of the ring's period of its own), where 1x1, 2x1 and 1x2 clusters
are within 5% (benchmarks/MODEL_ACCURACY.md, step 11). This times one decode-like shape
(N = 3712: 58 column tiles of 64, K = 14280) with M = 1, 64 and 128 (a 128-row A box
127, 64 and 0 rows zero-filled), 128x64 tiles, ping-pong, persistent, in every cluster
shape and at 2, 4 and 8 stages, each run verified against float64 as in a sweep, so the
zero fill's cost per row, its dependence on the ring depth and on multicast can be read
off directly. A GPU-side script: numpy + cuda-python only.

    PYTHONPATH=src python3 benchmarks/zero_fill_probe.py [--out probe.csv]
"""

from __future__ import annotations

import sys

CLUSTERS = ((1, 1), (2, 1), (1, 2), (2, 2))
MS = (1, 64, 128)
STAGES = (2, 4, 8)
N, K = 3712, 14280


def tasks() -> list[dict]:
    """The runs, in order: each a task row (``m``, ``n``, ``k`` and the configuration)."""
    from gemmperf.problem import KernelConfig

    out = []
    for m in MS:
        for cm, cn in CLUSTERS:
            for stages in STAGES:
                cfg = KernelConfig(family="ws-hopper", dtype="bf16", tile_m=128, tile_n=64, tile_k=64,
                                   stages=stages, cluster_m=cm, cluster_n=cn, persistent=True,
                                   schedule="pingpong", epilogue="tma")
                out.append({"m": m, "n": N, "k": K, **cfg.as_dict()})
    return out


def main(argv=None) -> int:
    from probes import run, start

    a, gpu, meas = start(__doc__, argv)
    rows = run(a, gpu, meas, tasks(), lambda t: {
        "m": t["m"], "cluster": f"{t['cluster_m']}x{t['cluster_n']}", "stages": t["stages"]})
    print("\ntime_us by M and cluster, stages " + " / ".join(map(str, STAGES)))
    for m in MS:
        for cm, cn in CLUSTERS:
            t = [r["time_us"] for r in rows if (r["m"], r["cluster"]) == (m, f"{cm}x{cn}") and r["status"] == "ok"]
            print(f"M={m:<4d} {cm}x{cn}: " + " / ".join(f"{x:.1f}" for x in t))
    return 0


if __name__ == "__main__":
    sys.exit(main())
