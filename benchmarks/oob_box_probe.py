"""Probe: what does a wholly out-of-bounds TMA box cost, multicast or not?

The zero-fill probe (benchmarks/zero_fill_probe.py) timed one decode-like shape at M = 1,
64 and 128 with 128x64 tiles. Read per k-block, a zero-filled row cost nothing without
multicast (1x1 and 2x1 clusters: M = 64 as fast as M = 128), while with A multicast (1x2,
2x2) the time grew by about the same step for each A slice that lies wholly past M
(1x2 M <= 64: one slice; 2x2 M = 128: two, the cluster's second tile row; 2x2 M <= 64:
three), however many of its rows were zero-filled. This times the same shape over M
values that change the number of such slices one at a time (M = 1, 64, 65, 128, 129, 192,
256), in every cluster shape at 4 and 8 stages, each run verified against float64 as in
a sweep, and prints the time per k-block next to the wholly out-of-bounds A slices of
the worst cluster (``oob_slices``). A GPU-side script: numpy + cuda-python only.

    PYTHONPATH=src python3 benchmarks/oob_box_probe.py [--out probe.csv]
"""

from __future__ import annotations

import sys

CLUSTERS = ((1, 1), (2, 1), (1, 2), (2, 2))
MS = (1, 64, 65, 128, 129, 192, 256)
STAGES = (4, 8)
N, K = 3712, 14280
TILE_M, TILE_N, TILE_K = 128, 64, 64


def tasks() -> list[dict]:
    """The runs, in order: each a task row (``m``, ``n``, ``k`` and the configuration)."""
    from gemmperf.problem import KernelConfig

    out = []
    for m in MS:
        for cm, cn in CLUSTERS:
            for stages in STAGES:
                cfg = KernelConfig(family="ws-hopper", dtype="bf16", tile_m=TILE_M, tile_n=TILE_N, tile_k=TILE_K,
                                   stages=stages, cluster_m=cm, cluster_n=cn, persistent=True,
                                   schedule="pingpong", epilogue="tma")
                out.append({"m": m, "n": N, "k": K, **cfg.as_dict()})
    return out


def oob_slices(m: int, tile_m: int, cm: int, cn: int) -> tuple[int, int]:
    """(multicast, not multicast): A slices that lie wholly past M in the worst cluster
    (the kernel waits for its slowest CTA). A cluster of cm x cn CTAs covers cm tile rows;
    each tile row's A box is loaded as cn slices of tile_m / cn rows, one per CTA of the
    cluster row, multicast to all cn of them when cn > 1."""
    tiles_m = -(-m // tile_m)
    units = -(-tiles_m // cm)
    rows = tile_m // cn
    wholly = max(sum(1 for r in range(cm) for s in range(cn) if (u * cm + r) * tile_m + s * rows >= m)
                 for u in range(units))
    return (wholly, 0) if cn > 1 else (0, wholly)


def main(argv=None) -> int:
    from probes import run, start

    a, gpu, meas = start(__doc__, argv)
    kblocks = -(-K // TILE_K)

    def label(t):
        mc, plain = oob_slices(t["m"], TILE_M, t["cluster_m"], t["cluster_n"])
        return {"m": t["m"], "cluster": f"{t['cluster_m']}x{t['cluster_n']}", "stages": t["stages"],
                "oob_slices_multicast": mc, "oob_slices_plain": plain}

    rows = run(a, gpu, meas, tasks(), label)
    print(f"\nus per k-block ({kblocks} k-blocks) at stages " + " / ".join(map(str, STAGES))
          + "; wholly out-of-bounds A slices per cluster, multicast / not")
    for m in MS:
        for cm, cn in CLUSTERS:
            t = [r["time_us"] / kblocks for r in rows
                 if (r["m"], r["cluster"]) == (m, f"{cm}x{cn}") and r["status"] == "ok"]
            mc, plain = oob_slices(m, TILE_M, cm, cn)
            print(f"M={m:<4d} {cm}x{cn}: " + " / ".join(f"{x:.3f}" for x in t) + f"   oob {mc} / {plain}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
