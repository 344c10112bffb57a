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
the ping-pong run's excess over the cooperative one. With ``--modes`` each pair at K =
64 is timed also as the empty kernel (the launch alone: the CTA returns at once) and as
the epilogue-only kernel (the consumers store their zero accumulators, nothing is
loaded), the microbenchmarks' two fixed costs for each schedule and tile: whether a
cooperative 64-row tile, whose CTA has one consumer warpgroup (256 threads, against 384),
starts or stores faster. A GPU-side script: numpy + cuda-python only.

    PYTHONPATH=src python3 benchmarks/schedule_probe.py [--modes] [--out probe.csv]
"""

from __future__ import annotations

import sys

TILES = ((64, 128), (64, 256), (128, 64), (128, 128))
SCHEDULES = ("cooperative", "pingpong")
EPILOGUES = ("direct", "tma")
KS = (64, 1024)
MODES = ("empty", "epilogue-only")  # --modes: the launch alone, the epilogue alone (K = 64 only)


def tasks(gpu, modes: bool = False) -> list[dict]:
    """The runs, in order: every (tile, epilogue, mode, K, CTAs) with both schedules, M = TM
    and N = TN times the CTAs; each a task row (``m``, ``n``, ``k`` and the configuration)
    plus ``ctas``. Full-mode runs at every K of KS; with ``modes`` also MODES at the first."""
    from gemmperf.problem import KernelConfig

    runs = (("full", KS),) + (tuple((mode, KS[:1]) for mode in MODES) if modes else ())
    out = []
    for tm, tn in TILES:
        for epilogue in EPILOGUES:
            for mode, ks in runs:
                for k in ks:
                    for ctas in (1, gpu.sms):
                        for schedule in SCHEDULES:
                            cfg = KernelConfig(family="ws-hopper", dtype="bf16", tile_m=tm, tile_n=tn, tile_k=64,
                                               stages=4, persistent=False, epilogue=epilogue, schedule=schedule,
                                               mode=mode)
                            out.append({"m": tm, "n": tn * ctas, "k": k, "ctas": ctas, **cfg.as_dict()})
    return out


def main(argv=None) -> int:
    from probes import run, start

    a, gpu, meas = start(__doc__, argv, flags={"modes": "also the empty and epilogue-only kernels (K = 64)"})
    runs = tasks(gpu, a.modes)
    rows = run(a, gpu, meas, runs, lambda t: {
        "m": t["m"], "n": t["n"], "k": t["k"], "ctas": t["ctas"], "tile": f"{t['tile_m']}x{t['tile_n']}",
        "epilogue": t["epilogue"], "schedule": t["schedule"], "mode": t["mode"]})
    print("\ntile epilogue mode K CTAs: cooperative us, ping-pong us, excess us (ratio)")
    times = {(r["tile"], r["epilogue"], r["mode"], r["k"], r["ctas"], r["schedule"]): r["time_us"]
             for r in rows if r["status"] == "ok"}
    for t in runs[::2]:  # each pair's cooperative run
        key = (f"{t['tile_m']}x{t['tile_n']}", t["epilogue"], t["mode"], t["k"], t["ctas"])
        c, p = times.get((*key, "cooperative")), times.get((*key, "pingpong"))
        if c and p:
            print(f"{key[0]} {key[1]:6s} {key[2]:13s} K={key[3]:<5d} {key[4]:3d} CTAs: {c:7.2f} {p:7.2f} "
                  f"{p - c:+6.2f} ({p / c:.3f})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
