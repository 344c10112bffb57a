"""Probe: what does a K that is not a multiple of the tile's K cost?

Leave-one-testlist-out on the H100's bf16 development data, the fitted model predicts the
rows whose K is not a multiple of 64 too fast: 0.92-0.94x at the geometric mean where a
tile has 1-4 k-blocks, 0.95-0.97x at 5-16 (the aligned rows 1.00-1.01x); those rows are
nearly all in the random list. Their last k-block's TMA boxes overhang K, so every row of
both boxes is partly zero-filled, as the rows that overhang M or N are, whose cost the
zero-fill probes measured. This times, at one M x N, the same configurations at K = 16 to
512 in steps that keep S = ceil(K / 64) k-blocks while moving K on and off the multiple:
K = 64 S - 8, 64 S - 32, 64 S - 48 and 64 S for S = 1, 2, 4, 8 (a row pitch of 2K bytes,
off the 128-byte line at every K here but the multiples of 64); 128x128 tiles in 1x1
clusters and 128x256 in 2x1, a full wave (M = 2048, N = 8448 over 128-wide tiles: 8
waves) and one partial wave (M = 128). Each run is verified against float64 as in a
sweep. Prints time by K for each configuration, and with ``--read CSV`` on a machine
with the project installed, the times beside the fitted model's predictions with and
without ``k_tail_fill`` (in-sample fit of the shipped data of ``--gpu``). GPU-side:
numpy + cuda-python only.

    PYTHONPATH=src python3 benchmarks/k_tail_probe.py [--out probe.csv]
    PYTHONPATH=src:benchmarks python3 benchmarks/k_tail_probe.py --read probe.csv [--gpu SLUG]
"""

from __future__ import annotations

import sys

CONFIGS = (
    dict(tile_m=128, tile_n=128, cluster_m=1, cluster_n=1, stages=4),
    dict(tile_m=128, tile_n=256, cluster_m=2, cluster_n=1, stages=4),
)
MNS = ((2048, 8448), (128, 8448))
KBLOCKS = (1, 2, 4, 8)
TILE_K = 64


def ks() -> tuple[int, ...]:
    """K values: for S = 1, 2, 4, 8 k-blocks, 64 S - 48, 64 S - 32, 64 S - 8 and 64 S."""
    return tuple(TILE_K * s - d for s in KBLOCKS for d in (48, 32, 8, 0))


def tasks() -> list[dict]:
    """The runs, in order: each a task row (``m``, ``n``, ``k`` and the configuration)."""
    from gemmperf.problem import KernelConfig

    out = []
    for c in CONFIGS:
        cfg = KernelConfig(family="ws-hopper", dtype="bf16", tile_k=TILE_K, persistent=True,
                           schedule="cooperative", epilogue="tma", **c)
        for m, n in MNS:
            for k in ks():
                out.append({"m": m, "n": n, "k": k, **cfg.as_dict()})
    return out


def label(t: dict) -> str:
    return f"{t['tile_m']}x{t['tile_n']} {t['cluster_m']}x{t['cluster_n']} {t['m']}x{t['n']}"


def read(path: str, gpu: str) -> int:
    """The probe's runs beside the in-sample model's predictions, with the K tail's zero fill
    (``k_tail_fill``) and without it, by configuration and K."""
    from probes import measured, predicted, read_csv

    got = measured(read_csv(path), ("config", "k"))
    runs = [t for t in tasks() if (label(t), str(t["k"])) in got]
    on, off = predicted(runs, gpu=gpu), predicted(runs, gpu=gpu, k_tail_fill=False)
    print(f"measured, predicted with and without k_tail_fill (in-sample fit of {gpu}), us; measured / predicted")
    for name in dict.fromkeys(label(t) for t in runs):
        print(name)
        for t, p, q in zip(runs, on, off):
            if label(t) == name:
                m = got[(name, str(t["k"]))]
                tail = "tail" if t["k"] % TILE_K else "full"
                print(f"  K={t['k']:<4d} S={-(-t['k'] // TILE_K)} {tail}  {m:7.2f}  {p:7.2f} {q:7.2f}  "
                      f"{m / p:.3f} {m / q:.3f}")
    return 0


def main(argv=None) -> int:
    from probes import read_back, run, start

    code, rest = read_back(argv, read)
    if code is not None:
        return code

    a, gpu, meas = start(__doc__, rest)
    rows = run(a, gpu, meas, tasks(), lambda t: {"config": label(t), "k": t["k"]})
    print("\nus by K (S k-blocks; * K off the multiple of 64)")
    for name in dict.fromkeys(r["config"] for r in rows):
        got = [r for r in rows if r["config"] == name and r["status"] == "ok"]
        print(f"{name}: " + "  ".join(f"{r['k']}{'*' if r['k'] % TILE_K else ''}:{r['time_us']:.2f}" for r in got))
    return 0


if __name__ == "__main__":
    sys.exit(main())
