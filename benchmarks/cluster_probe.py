"""Probe: what does running in clusters cost a kernel that has almost nothing to do?

On the shipped H100 data, short-K and decode kernels in clusters of 2 or 4 CTAs ran
about 1.2-1.5 us slower than the same tiles without clusters, which ws-pipelined
without ``cluster_sync`` did not predict (benchmarks/MODEL_ACCURACY.md, issue 17 step
8). This times, on the local GPU, ws-hopper bf16 128x128 tiles in every cluster shape,
persistent and not, in ``empty`` mode (the kernel's setup and exit only: barrier init,
the cluster barriers, no loads, no math, no stores) and ``full`` mode with one k-block,
over one and four waves; full-mode runs are verified against float64 as in a sweep. It
prints each time and its difference to the same run without clusters: the measured
counterpart of ``cluster_sync_us`` (per kernel on a persistent grid, per wave
otherwise). A GPU-side script: numpy + cuda-python only.

    PYTHONPATH=src python3 benchmarks/cluster_probe.py [--out probe.csv]
"""

from __future__ import annotations

import sys

CLUSTERS = ((1, 1), (2, 1), (1, 2), (2, 2))
MODES = ("empty", "full")
WAVES = (1, 4)
K = 64  # one k-block


def tasks(gpu) -> list[dict]:
    """The runs, in order: M = 2 tiles, N = SMs/2 * waves tiles, so every cluster shape
    tiles the grid exactly; each a task row (``m``, ``n``, ``k`` and the configuration)
    plus ``waves``."""
    from gemmperf.problem import KernelConfig

    out = []
    for waves in WAVES:
        for mode in MODES:
            for persistent in (False, True):
                for cm, cn in CLUSTERS:
                    cfg = KernelConfig(family="ws-hopper", dtype="bf16", tile_m=128, tile_n=128, tile_k=64,
                                       stages=4, cluster_m=cm, cluster_n=cn, persistent=persistent, mode=mode)
                    out.append({"m": 2 * 128, "n": 128 * (gpu.sms // 2) * waves, "k": K, "waves": waves,
                                **cfg.as_dict()})
    return out


def main(argv=None) -> int:
    from probes import run, start

    a, gpu, meas = start(__doc__, argv)
    rows = run(a, gpu, meas, tasks(gpu), lambda t: {
        "m": t["m"], "n": t["n"], "k": K, "waves": t["waves"], "mode": t["mode"], "persistent": t["persistent"],
        "cluster": f"{t['cluster_m']}x{t['cluster_n']}"})
    print("\nwaves mode persistent: time_us per cluster (difference to 1x1)")
    for waves in WAVES:
        for mode in MODES:
            for persistent in (False, True):
                sel = {r["cluster"]: r["time_us"] for r in rows if (r["waves"], r["mode"], r["persistent"])
                       == (waves, mode, persistent) and r["status"] == "ok"}
                base = sel.get("1x1")
                cells = [f"{c}={t:.2f}" + (f" ({t - base:+.2f})" if base and c != "1x1" else "")
                         for c, t in sel.items()]
                print(f"{waves} {mode:5s} {'P' if persistent else 'N'}: " + "  ".join(cells))
    return 0


if __name__ == "__main__":
    sys.exit(main())
