"""Probe: does a k-block cost more when K is long?

On the H100's bf16 development data (one fit on every development row), the fitted model
predicts GEMMs with M and N of 4096 or more slower the longer K is: measured over
predicted 1.02x at K = 4096-8191, 1.04x at 8192-16383, 1.08x at 16384-32767, 1.15x beyond,
1.00-1.03x on the rows whose recorded clock stayed at 1900 MHz or more below K = 32768.
Some long-K rows at a moderate rate run twice their prediction (6976 x 25735 x 25120 at
128x128, ping-pong, 1x1: 34.4 ms against 16.8 ms, 263 TFLOP/s), which the power limit
alone does not explain. A reading: the CTAs that share an A or B panel drift apart in K
over a long loop, so a panel's k-block leaves the L2 before its later readers ask for
it, and the wave's DRAM traffic grows with K; ws-pipelined's L2 hit rate has no such
term. This times the same configurations at one M x N over K = 2048 to 28672 (32 to 448
k-blocks), every run verified against float64 as in a sweep, with the SM clock before
and after each. Prints the time per k-block by K for each configuration, and with
``--read CSV`` on a machine with the project installed, the times beside the fitted
model's (in-sample fit of the shipped data of ``--gpu``). GPU-side: numpy + cuda-python
only.

    PYTHONPATH=src python3 benchmarks/long_k_probe.py [--out probe.csv]
    PYTHONPATH=src:benchmarks python3 benchmarks/long_k_probe.py --read probe.csv [--gpu SLUG]
"""

from __future__ import annotations

import sys

# the development rows' configurations with the largest long-K errors, and the fastest
# tiling of 8192^3 (the heaviest power) for comparison
CONFIGS = (
    dict(tile_m=128, tile_n=128, cluster_m=1, cluster_n=1, stages=7, persistent=True, raster="grouped",
         schedule="pingpong", epilogue="direct"),
    dict(tile_m=128, tile_n=128, cluster_m=2, cluster_n=1, stages=6, persistent=True, raster="grouped",
         schedule="pingpong", epilogue="tma"),
    dict(tile_m=64, tile_n=256, cluster_m=1, cluster_n=2, stages=5, persistent=False, raster="grouped",
         schedule="cooperative", epilogue="direct"),
    dict(tile_m=128, tile_n=256, cluster_m=2, cluster_n=1, stages=4, persistent=True, raster="grouped",
         schedule="cooperative", epilogue="tma"),
)
MNS = ((8192, 8192), (4096, 4096))
KS = (2048, 4096, 8192, 16384, 28672)
TILE_K = 64


def tasks() -> list[dict]:
    """The runs, in order: each a task row (``m``, ``n``, ``k`` and the configuration)."""
    from gemmperf.problem import KernelConfig

    out = []
    for c in CONFIGS:
        cfg = KernelConfig(family="ws-hopper", dtype="bf16", tile_k=TILE_K, **c)
        for m, n in MNS:
            for k in KS:
                out.append({"m": m, "n": n, "k": k, **cfg.as_dict()})
    return out


def label(t: dict) -> str:
    return (f"{t['tile_m']}x{t['tile_n']} {t['cluster_m']}x{t['cluster_n']} {t['schedule']} "
            f"{'persistent' if t['persistent'] else 'one-tile'} {t['m']}x{t['n']}")


def read(path: str, gpu: str) -> int:
    """The probe's runs beside the in-sample model's predictions, by configuration and K."""
    from probes import measured, predicted, read_csv

    got = measured(read_csv(path), ("config", "k"))
    runs = [t for t in tasks() if (label(t), str(t["k"])) in got]
    pred = predicted(runs, gpu=gpu)
    print(f"measured and predicted (in-sample fit of {gpu}): us, us a k-block; measured / predicted")
    for name in dict.fromkeys(label(t) for t in runs):
        print(name)
        for t, p in zip(runs, pred):
            if label(t) == name:
                m, kb = got[(name, str(t["k"]))], t["k"] // TILE_K
                print(f"  K={t['k']:<6d} {m:9.1f} {p:9.1f}  {m / kb:7.3f} {p / kb:7.3f}  {m / p:.3f}")
    return 0


def main(argv=None) -> int:
    from probes import read_back, run, start

    code, rest = read_back(argv, read)
    if code is not None:
        return code

    a, gpu, meas = start(__doc__, rest)
    rows = run(a, gpu, meas, tasks(), lambda t: {"config": label(t), "k": t["k"]})
    print("\nus a k-block by K (clock at start / end, MHz)")
    for name in dict.fromkeys(r["config"] for r in rows):
        got = [r for r in rows if r["config"] == name and r["status"] == "ok"]
        print(f"{name}: " + "  ".join(f"{r['k']}:{r['time_us'] / (r['k'] // TILE_K):.3f}"
                                      f"({r['clock_start']:.0f}/{r['clock_end']:.0f})" for r in got))
    return 0


if __name__ == "__main__":
    sys.exit(main())
