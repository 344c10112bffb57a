"""Probe: what does the ping-pong schedule cost a tile that has no other tile to overlap?

On the shipped H100 development data, one-wave ping-pong rows ran 2-6% slower than the
fitted model against cooperative rows of the same shape (each row's log error less its
shape's mean; benchmarks/MODEL_ACCURACY.md, issue 17 step 26), in every K range, more
with the direct epilogue (6%) than with TMA stores (2-3%), and 64-row tiles too, whose
cooperative kernel has one consumer warpgroup holding the same 64 rows: ws-pipelined
predicts such a pair alike. This times, on the local GPU, ws-hopper bf16 tiles 64x128,
64x256, 128x64 and 128x128, both schedules and both epilogues, non-persistent, one CTA
and a full wave (M = TM, N = TN per CTA), with one k-block (K = 64) and sixteen (K =
1024), every run verified against float64 as in a sweep. It prints each pair's times and
the ping-pong run's excess over the cooperative one. A GPU-side script: numpy +
cuda-python only.

    PYTHONPATH=src python3 benchmarks/schedule_probe.py [--out probe.csv]
"""

from __future__ import annotations

import sys

TILES = ((64, 128), (64, 256), (128, 64), (128, 128))
SCHEDULES = ("cooperative", "pingpong")
EPILOGUES = ("direct", "tma")
KS = (64, 1024)


def tasks(gpu) -> list[dict]:
    """The runs, in order: every (tile, epilogue, K, CTAs) with both schedules, M = TM and
    N = TN times the CTAs; each a task row (``m``, ``n``, ``k`` and the configuration) plus
    ``ctas``."""
    from gemmperf.problem import KernelConfig

    out = []
    for tm, tn in TILES:
        for epilogue in EPILOGUES:
            for k in KS:
                for ctas in (1, gpu.sms):
                    for schedule in SCHEDULES:
                        cfg = KernelConfig(family="ws-hopper", dtype="bf16", tile_m=tm, tile_n=tn, tile_k=64,
                                           stages=4, persistent=False, epilogue=epilogue, schedule=schedule)
                        out.append({"m": tm, "n": tn * ctas, "k": k, "ctas": ctas, **cfg.as_dict()})
    return out


def main(argv=None) -> int:
    from probes import run, start

    a, gpu, meas = start(__doc__, argv)
    rows = run(a, gpu, meas, tasks(gpu), lambda t: {
        "m": t["m"], "n": t["n"], "k": t["k"], "ctas": t["ctas"], "tile": f"{t['tile_m']}x{t['tile_n']}",
        "epilogue": t["epilogue"], "schedule": t["schedule"]})
    print("\ntile epilogue K CTAs: cooperative us, ping-pong us, excess us (ratio)")
    times = {(r["tile"], r["epilogue"], r["k"], r["ctas"], r["schedule"]): r["time_us"]
             for r in rows if r["status"] == "ok"}
    for tm, tn in TILES:
        for epilogue in EPILOGUES:
            for k in KS:
                for ctas in (1, gpu.sms):
                    key = (f"{tm}x{tn}", epilogue, k, ctas)
                    c, p = times.get((*key, "cooperative")), times.get((*key, "pingpong"))
                    if c and p:
                        print(f"{tm}x{tn} {epilogue:6s} K={k:<5d} {ctas:3d} CTAs: {c:7.2f} {p:7.2f} "
                              f"{p - c:+6.2f} ({p / c:.3f})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
