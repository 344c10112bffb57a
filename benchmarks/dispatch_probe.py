"""Probe: how long does the block scheduler take to start a grid's CTAs, per CTA?

On the shipped H100 data, one-wave kernels of a few microseconds ran 0.85-0.95x the
fitted model's time with 1-4 CTAs and 1.02-1.06x with 64-132 (benchmarks/MODEL_ACCURACY.md,
issue 17 step 26): a launch cost that grows with the CTAs of the first wave, where
ws-pipelined had one ``t_init_us`` for every grid. This times, on the local GPU,
ws-hopper bf16 128x128 tiles in ``empty`` mode (the kernel's setup and exit only) and
``full`` mode with one k-block (verified against float64 as in a sweep), persistent and
not, without clusters and in clusters of 2, over grids of 1 to SMs CTAs (M = 128 or 256,
N = 128 per CTA). It prints each time and a least-squares line through the times against
the CTAs per (mode, persistent, cluster): the slope is the measured counterpart of
``cta_dispatch_us``, the intercept of ``t_init_us`` (empty) or of the one-tile kernel.
A GPU-side script: numpy + cuda-python only.

    PYTHONPATH=src python3 benchmarks/dispatch_probe.py [--out probe.csv]
"""

from __future__ import annotations

import sys

MODES = ("empty", "full")
CLUSTERS = ((1, 1), (2, 1))
K = 64  # one k-block


def grid_sizes(sms: int) -> list[int]:
    """CTAs of the probed grids: powers of two up to the SMs, then the SMs."""
    out, c = [], 1
    while c < sms:
        out.append(c)
        c *= 2
    return out + [sms]


def tasks(gpu) -> list[dict]:
    """The runs, in order: for each grid of c CTAs, M = 128 * cm, N = 128 * c / cm (a
    cluster of 2 along M takes two tiles of one column); each a task row (``m``, ``n``,
    ``k`` and the configuration) plus ``ctas``."""
    from gemmperf.problem import KernelConfig

    out = []
    for mode in MODES:
        for persistent in (False, True):
            for cm, cn in CLUSTERS:
                for c in grid_sizes(gpu.sms):
                    if c % (cm * cn):
                        continue
                    cfg = KernelConfig(family="ws-hopper", dtype="bf16", tile_m=128, tile_n=128, tile_k=64,
                                       stages=4, cluster_m=cm, cluster_n=cn, persistent=persistent, mode=mode)
                    out.append({"m": 128 * cm, "n": 128 * (c // cm), "k": K, "ctas": c, **cfg.as_dict()})
    return out


def slope(points: list[tuple[int, float]]) -> tuple[float, float]:
    """(intercept, slope) of the least-squares line through (CTAs, time) points."""
    n = len(points)
    mx = sum(c for c, _ in points) / n
    my = sum(t for _, t in points) / n
    sxx = sum((c - mx) ** 2 for c, _ in points)
    b = sum((c - mx) * (t - my) for c, t in points) / sxx
    return my - b * mx, b


def main(argv=None) -> int:
    from probes import run, start

    a, gpu, meas = start(__doc__, argv)
    rows = run(a, gpu, meas, tasks(gpu), lambda t: {
        "m": t["m"], "n": t["n"], "k": K, "ctas": t["ctas"], "mode": t["mode"], "persistent": t["persistent"],
        "cluster": f"{t['cluster_m']}x{t['cluster_n']}"})
    print("\nmode persistent cluster: time_us per CTAs | line: intercept us + slope ns per CTA")
    for mode in MODES:
        for persistent in (False, True):
            for cm, cn in CLUSTERS:
                cluster = f"{cm}x{cn}"
                pts = [(r["ctas"], r["time_us"]) for r in rows if (r["mode"], r["persistent"], r["cluster"])
                       == (mode, persistent, cluster) and r["status"] == "ok"]
                if len(pts) < 2:
                    continue
                b0, b1 = slope(pts)
                cells = " ".join(f"{c}:{t:.2f}" for c, t in pts)
                print(f"{mode:5s} {'P' if persistent else 'N'} {cluster}: {cells} | {b0:.3f} us + {1e3 * b1:.2f} ns/CTA")
    return 0


if __name__ == "__main__":
    sys.exit(main())
