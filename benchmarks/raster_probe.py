"""Probe: does the tile order (raster) explain slow persistent 256x64 tiles?

On the shipped H100 data, persistent (grouped raster) 256x64 runs are ~20% slower than
non-persistent (row raster) 256x64 on large shapes, while 64x256 is the reverse; the
model prices both orientations alike. This measures, on the local GPU, the same tiles
under every raster, persistent and not, each verified against float64 as in a sweep
(a wrong result is printed as such, never timed), and prints one table per tile. A
GPU-side script: numpy + cuda-python only.

    PYTHONPATH=src python3 benchmarks/raster_probe.py [--out probe.csv]
"""

from __future__ import annotations

import sys
import time

SHAPES = [(6144, 6144, 6144), (4096, 8192, 7168)]
TILES = [(256, 64, 4), (64, 256, 4), (128, 64, 6), (128, 128, 4), (128, 256, 4)]
RASTERS = ("row", "column", "grouped")


def main(argv=None) -> int:
    from gemmperf.problem import KernelConfig
    from probes import measure, start, write_csv

    a, gpu, meas = start(__doc__, argv)
    rows = []
    for m, n, k in SHAPES:
        for tm, tn, st in TILES:
            for persistent in (False, True):
                for raster in RASTERS:
                    cfg = KernelConfig("ws-hopper", "bf16", tm, tn, 64, st, 1, 1, persistent, raster, "full")
                    t0 = time.time()
                    out = measure(meas, gpu, {"m": m, "n": n, "k": k, **cfg.as_dict()})
                    if out["status"] == "illegal":
                        continue
                    rows.append({"m": m, "n": n, "k": k, "tile_m": tm, "tile_n": tn, "stages": st,
                                 "persistent": persistent, "raster": raster, **out,
                                 "wall_s": round(time.time() - t0, 2)})
                    r = rows[-1]
                    print(f"{m}x{n}x{k} {tm}x{tn} s{st} {'P' if persistent else 'N'} {raster:8s} "
                          f"{r['status']:12s} {r['time_us'] or float('nan'):9.1f} us "
                          f"clk {r['clock_start']}->{r['clock_end']}", flush=True)
    if a.out:
        write_csv(a.out, rows)
    # summary: each tile's time per raster, relative to non-persistent row
    print("\nshape tile: time_us by (persistent, raster), ratio to non-persistent row")
    for m, n, k in SHAPES:
        for tm, tn, st in TILES:
            sel = [r for r in rows if (r["m"], r["n"], r["k"], r["tile_m"], r["tile_n"]) == (m, n, k, tm, tn)
                   and r["status"] == "ok"]
            base = next((r["time_us"] for r in sel if not r["persistent"] and r["raster"] == "row"), None)
            cells = [f"{'P' if r['persistent'] else 'N'}-{r['raster']}={r['time_us']:.0f}"
                     + (f" ({r['time_us'] / base:.2f})" if base else "") for r in sel]
            print(f"{m}x{n}x{k} {tm}x{tn}: " + "  ".join(cells))
    return 0


if __name__ == "__main__":
    sys.exit(main())
