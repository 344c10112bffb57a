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
starts or stores faster.

With ``--grid`` it times the pairs in grids like the development data's instead: many
tile rows and columns (GRID_SHAPES, one to eight waves), one to sixteen k-blocks
(GRID_KS), non-persistent and persistent. On the development data a cooperative tile
with at most eight k-blocks ran 5-9% under the fitted model against its ping-pong twin
of the same shape (64x64, 64x128, 64x256, 128x64), with TMA stores as with direct ones,
where the one-row runs above have the two alike with TMA stores: whether the grid makes
the difference, or the development sample's other configuration values do.
A GPU-side script: numpy + cuda-python only.

    PYTHONPATH=src python3 benchmarks/schedule_probe.py [--modes | --grid] [--out probe.csv]
    PYTHONPATH=src:benchmarks python3 benchmarks/schedule_probe.py --read grid.csv [--gpu SLUG]

``--read`` (a --grid run's CSV, on a machine with the project installed) prints each pair
beside the fitted model's predictions (in-sample fit of the shipped data of ``--gpu``).
"""

from __future__ import annotations

import sys

TILES = ((64, 128), (64, 256), (128, 64), (128, 128))
SCHEDULES = ("cooperative", "pingpong")
EPILOGUES = ("direct", "tma")
KS = (64, 1024)
MODES = ("empty", "epilogue-only")  # --modes: the launch alone, the epilogue alone (K = 64 only)
# --grid: (M, N) of about one and of four to eight waves of each tile, K of 1, 4 and 16 k-blocks
GRID_TILES = ((64, 128), (64, 256), (128, 64))
GRID_SHAPES = ((1024, 2048), (2048, 4096))
GRID_KS = (64, 256, 1024)


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


def grid_tasks() -> list[dict]:
    """--grid's runs, in order: every (tile, epilogue, persistent, (M, N), K) with both
    schedules, four stages, no cluster; each a task row plus ``ctas`` (the tiles)."""
    from gemmperf.problem import KernelConfig

    out = []
    for tm, tn in GRID_TILES:
        for epilogue in EPILOGUES:
            for persistent in (False, True):
                for m, n in GRID_SHAPES:
                    for k in GRID_KS:
                        for schedule in SCHEDULES:
                            cfg = KernelConfig(family="ws-hopper", dtype="bf16", tile_m=tm, tile_n=tn, tile_k=64,
                                               stages=4, persistent=persistent, epilogue=epilogue,
                                               schedule=schedule)
                            out.append({"m": m, "n": n, "k": k, "ctas": (m // tm) * (n // tn), **cfg.as_dict()})
    return out


def read(path: str, gpu: str) -> int:
    """A --grid run's pairs beside the in-sample model's predictions: the ping-pong run's
    time over the cooperative one's, measured and predicted, and each run's measured over
    predicted time."""
    from probes import predicted, read_csv

    got = {(r["m"], r["n"], r["k"], r["tile"], r["epilogue"], r["persistent"], r["schedule"]): float(r["time_us"])
           for r in read_csv(path) if r["status"] == "ok"}
    key = lambda t: (str(t["m"]), str(t["n"]), str(t["k"]), f"{t['tile_m']}x{t['tile_n']}",  # noqa: E731
                     t["epilogue"], str(t["persistent"]), t["schedule"])
    runs = [t for t in grid_tasks() if key(t) in got]
    pred = dict(zip(map(key, runs), predicted(runs, gpu=gpu)))
    print(f"ping-pong over cooperative, measured and predicted (in-sample fit of {gpu}); measured / predicted "
          "for each schedule")
    for t in runs[::2]:
        c, p = key(t), key({**t, "schedule": "pingpong"})
        if p in got:
            print(f"{c[3]} {c[4]:6s} {'persistent' if t['persistent'] else 'one-tile  '} {c[0]}x{c[1]}x{c[2]:<5s} "
                  f"{got[p] / got[c]:.3f} {pred[p] / pred[c]:.3f}   {got[c] / pred[c]:.3f} {got[p] / pred[p]:.3f}")
    return 0


def main(argv=None) -> int:
    from probes import read_back, run, start

    code, rest = read_back(argv, read)
    if code is not None:
        return code

    a, gpu, meas = start(__doc__, rest, flags={"modes": "also the empty and epilogue-only kernels (K = 64)",
                                               "grid": "the pairs in multi-row grids, persistent too"})
    runs = grid_tasks() if a.grid else tasks(gpu, a.modes)
    label = lambda t: {"m": t["m"], "n": t["n"], "k": t["k"], "ctas": t["ctas"],  # noqa: E731
                       "tile": f"{t['tile_m']}x{t['tile_n']}", "epilogue": t["epilogue"],
                       "persistent": t["persistent"], "mode": t["mode"]}
    rows = run(a, gpu, meas, runs, lambda t: {**label(t), "schedule": t["schedule"]})
    print("\ntile epilogue persistent mode M N K tiles: cooperative us, ping-pong us, excess us (ratio)")
    times = {(*(r[c] for c in label(runs[0])), r["schedule"]): r["time_us"] for r in rows if r["status"] == "ok"}
    for t in runs[::2]:  # each pair's cooperative run
        key = tuple(label(t).values())
        c, p = times.get((*key, "cooperative")), times.get((*key, "pingpong"))
        if c and p:
            print(f"{key[4]} {key[5]:6s} {str(key[6]):5s} {key[7]:13s} {key[0]}x{key[1]}x{key[2]} {key[3]:4d}: "
                  f"{c:8.2f} {p:8.2f} {p - c:+6.2f} ({p / c:.3f})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
