"""Probe: at what rate does a GEMM's C reach DRAM, and does the L2 hold a small C?

On the H100 development data, kernels with little K and a large C (1-8 k-blocks, C of
50-400 MB) run at 1.7-2.6 TB/s of C written, below the 3.0 TB/s DRAM copy rate, and the
model missed them both ways: the TMA-store epilogue predicted up to 1.35x too fast (its
stores drain behind the next tile, bounded by nothing), the direct one up to 1.2x too
slow (its stores counted at the load rate, not hidden at all). This times ws-hopper bf16
GEMMs with one k-block (K = 64) over C from 2 to 400 MB, N = 16384 (rows on 128-byte
lines) and N = 16336 (C's row pitch 32 bytes past a line), with 128x256 tiles
(cooperative, TMA-store and direct epilogues) and 128x128 (ping-pong, TMA store),
persistent, 4 stages; every run verified against float64 as in a sweep. Besides them it
times a write-only fill of 2 GiB (cuMemsetD32Async), the DRAM's own write rate, next to
the 2 GiB copy the microbenchmarks time. It prints the rate of C written per run and
both DRAM rates. With ``--k-sweep`` it times instead one C of 201 MB (6144 x 16384) over
K of 1 to 32 k-blocks, both 128x256 epilogues: how much K loop hides the stores (the
model's dram_writes: a wave's writes drain behind the next tile's K loop). With
``--pitch`` it times C's rows off their 32-byte sectors instead: N = 16328 (a row pitch
of 32656 bytes: every other row starts 16 bytes into a sector) and N = 16321 (the same
pitch, pad_n, its last tile column 193 of 256 columns wide, 65 of 128), one k-block, C
from 34 to 400 MB, the same three configurations (on the development data the TMA-store
epilogue of store-bound N % 8 != 0 shapes ran 0.9x the model, aligned ones 0.97x). With
``--exit`` it times instead grids of one to four k-blocks (K = 64, 256) over C of 8 to
268 MB (N = 16384), each tiling with either epilogue, persistent and not: a CTA of the
TMA-store epilogue waits before it exits until the copy engine has read its staging
buffers (``cp.async.bulk.wait_group.read 0``), so on a non-persistent grid, whose next CTA
takes the SM only then, each wave would wait for that drain, where a persistent grid
waits once (the development data's short-K non-persistent TMA-store rows ran 0.79-0.90x
the model, the direct ones 0.96-1.05x). With ``--order`` it times instead the order the
tiles are written in, on a C of 164 MB written by one k-block: row, column and grouped
raster, each data-parallel and stream-K, 128x256 tiles with TMA stores, persistent, on
6144 x 13312 x 64 and its edges one at a time (K = 57: a k-block overhanging K; M = 6145:
a last tile row of one row; N = 13320: a last tile column of 8 columns and a row pitch of
26640 bytes, every other row of C starting 16 bytes into a 32-byte sector, which the
tiles on either side of a column boundary then share) and all three at once (6145 x 13320 x
57: a fresh shape whose answers the H200 ran 0.43-0.71x as fast as the model said,
stream-K slowest). With ``--granule`` the same six kernels time instead C's row pitch at
6144 x N x 64, N = 13312 and 13376 (a pitch a multiple of 128 bytes; 13376's last tile
column 64 columns wide), 13344 (every other row 64 bytes into a 128-byte line), 13328 (32
bytes into a 64-byte pair of sectors) and 13320 (16 bytes into a sector): which granule a
row shared by two tiles' stores costs by, the 32-byte sector, 64 bytes or the 128-byte
line. A GPU-side script: numpy + cuda-python only.

    PYTHONPATH=src python3 benchmarks/store_probe.py [--out probe.csv]
        [--k-sweep | --pitch | --exit | --order | --granule]
"""

from __future__ import annotations

import sys

MS = (64, 128, 256, 512, 1024, 2048, 4096, 6144, 8192, 12288)
NS = (16384, 16336)
K = 64  # one k-block
CONFIGS = (  # (tile_m, tile_n, schedule, epilogue)
    (128, 256, "cooperative", "tma"),
    (128, 256, "cooperative", "direct"),
    (128, 128, "pingpong", "tma"),
)
FILL_BYTES = 1 << 31
KS = (64, 128, 256, 512, 1024, 2048)  # --k-sweep: 1 to 32 k-blocks at M x N = 6144 x 16384
PITCH_MS = (1024, 4096, 8192, 12288)  # --pitch: C of 34 to 400 MB
PITCH_NS = (16328, 16321)  # rows 16 bytes off a sector; the same pitch with an odd N
EXIT_N = 16384
EXIT_MS = (256, 1024, 2048, 4096, 8192)  # --exit: C of 8 to 268 MB at N = EXIT_N
EXIT_KS = (64, 256)  # one and four k-blocks
EXIT_CONFIGS = ((128, 256, "cooperative", 4), (128, 128, "cooperative", 6), (128, 128, "pingpong", 6),
                (128, 64, "cooperative", 7))  # (tile_m, tile_n, schedule, stages), each epilogue
# --order: one C-write-bound shape, its edges one at a time, then all three
ORDER_SHAPES = ((6144, 13312, 64), (6144, 13312, 57), (6145, 13312, 64), (6144, 13320, 64), (6145, 13320, 57))
ORDER_RASTERS = ("row", "column", "grouped")
# --granule: C's row pitch 0 (twice), 64, 32 and 16 bytes off the 128-byte line every other row
GRANULE_SHAPES = ((6144, 13312, 64), (6144, 13376, 64), (6144, 13344, 64), (6144, 13328, 64), (6144, 13320, 64))


def order_shapes(granule: bool) -> tuple:
    """The shapes ``--order`` (or, with ``granule``, ``--granule``) times."""
    return GRANULE_SHAPES if granule else ORDER_SHAPES


def tasks(k_sweep: bool = False, pitch: bool = False, exit_: bool = False, order: bool = False,
          granule: bool = False) -> list[dict]:
    """The runs, in order: each a task row (``m``, ``n``, ``k`` and the configuration)."""
    from gemmperf.problem import KernelConfig

    out = []
    if order or granule:
        for stream_k in (False, True):
            for raster in ORDER_RASTERS:
                cfg = KernelConfig(family="ws-hopper", dtype="bf16", tile_m=128, tile_n=256, tile_k=64, stages=4,
                                   cluster_m=1, cluster_n=1, persistent=True, raster=raster, schedule="cooperative",
                                   epilogue="tma", stream_k=stream_k)
                out += [{"m": m, "n": n, "k": k, **cfg.as_dict()}
                        for m, n, k in order_shapes(granule)]
        return out
    if exit_:
        for tile_m, tile_n, schedule, stages in EXIT_CONFIGS:
            for epilogue in ("tma", "direct"):
                for persistent in (True, False):
                    cfg = KernelConfig(family="ws-hopper", dtype="bf16", tile_m=tile_m, tile_n=tile_n, tile_k=64,
                                       stages=stages, cluster_m=1, cluster_n=1, persistent=persistent,
                                       raster="row", schedule=schedule, epilogue=epilogue)
                    out += [{"m": m, "n": EXIT_N, "k": k, **cfg.as_dict()} for k in EXIT_KS for m in EXIT_MS]
        return out
    for tile_m, tile_n, schedule, epilogue in CONFIGS[:2] if k_sweep else CONFIGS:
        cfg = KernelConfig(family="ws-hopper", dtype="bf16", tile_m=tile_m, tile_n=tile_n, tile_k=64, stages=4,
                           cluster_m=1, cluster_n=1, persistent=True, raster="grouped", schedule=schedule,
                           epilogue=epilogue)
        if k_sweep:
            shapes = [(6144, 16384, k) for k in KS]
        else:
            shapes = [(m, n, K) for n in (PITCH_NS if pitch else NS) for m in (PITCH_MS if pitch else MS)]
        out += [{"m": m, "n": n, "k": k, **cfg.as_dict()} for m, n, k in shapes]
    return out


def dram_rates() -> dict:
    """The DRAM's write-only rate (a 2 GiB cuMemsetD32Async) and its copy rate (a 2 GiB
    cuMemcpyDtoDAsync, bytes read + written), TB/s, timed as the microbenchmarks time."""
    from cuda.bindings import driver as cu

    from gemmperf.bench.timing import check, time_kernel
    from gemmperf.kernels.launch import DeviceBuffer, ensure_context

    ensure_context(0)
    stream = check(cu.cuStreamCreate(cu.CUstream_flags.CU_STREAM_NON_BLOCKING.value))
    a, b = DeviceBuffer(FILL_BYTES), DeviceBuffer(FILL_BYTES)
    try:
        fill = time_kernel(lambda _: check(cu.cuMemsetD32Async(a.ptr, 0x3F803F80, FILL_BYTES // 4, stream)), stream)
        copy = time_kernel(lambda _: check(cu.cuMemcpyDtoDAsync(b.ptr, a.ptr, FILL_BYTES, stream)), stream)
    finally:
        a.free()
        b.free()
    return {"write_TBps": FILL_BYTES / fill.time_us / 1e6, "copy_TBps": 2 * FILL_BYTES / copy.time_us / 1e6}


def main(argv=None) -> int:
    from probes import run, start, write_csv

    a, gpu, meas = start(__doc__, argv, {"k-sweep": "one C over K of 1 to 32 k-blocks",
                                         "pitch": "C's rows off their 32-byte sectors",
                                         "exit": "short K, persistent and not, either epilogue",
                                         "order": "the order C's tiles are written in, and C's edges",
                                         "granule": "C's row pitch off 128, 64 and 32 bytes"})
    rows = run(a, gpu, meas, tasks(a.k_sweep, a.pitch, a.exit, a.order, a.granule), lambda t: {
        "config": f"{t['tile_m']}x{t['tile_n']} {t['schedule']} {t['epilogue']}"
                  + ("" if t["persistent"] else " np") + (f" {t['raster']}" if a.order or a.granule else "")
                  + (" streamk" if t["stream_k"] else ""), "m": t["m"], "n": t["n"],
        "k": t["k"], "c_mb": round(t["m"] * t["n"] * 2 / 1e6, 2)})
    if a.order or a.granule:
        print("\n" + "\n".join(order_table(rows, order_shapes(a.granule))))
        return 0
    if a.exit:
        print("\n" + "\n".join(exit_table(rows, gpu.sms)))
        return 0
    if a.k_sweep:
        print("\nus by K (k-blocks), C of 201 MB; TB/s of C written")
        for config in dict.fromkeys(r["config"] for r in rows):
            print(f"{config}: " + " ".join(f"{r['k'] // 64}:{r['time_us']:.1f} ({r['c_mb'] / r['time_us']:.2f})"
                                            for r in rows if r["config"] == config and r["status"] == "ok"))
        return 0
    if a.pitch:
        print("\nTB/s of C written, by C size (MB), rows 16 bytes off a sector")
        print_rates(rows, PITCH_NS)
        return 0
    rates = dram_rates()
    if a.out:  # again, with the DRAM rates: run() wrote the kernels' rows before their timing
        write_csv(a.out, rows + [{"config": f"dram {k}", "status": "ok", "reason": f"{v:.3f}"}
                                 for k, v in rates.items()])
    print(f"\nDRAM: write-only {rates['write_TBps']:.3f} TB/s, copy {rates['copy_TBps']:.3f} TB/s (read + written)")
    print("TB/s of C written, by C size (MB):")
    print_rates(rows, NS)
    return 0


def exit_table(rows: list[dict], sms: int) -> list[str]:
    """--exit's runs, one line a tiling, epilogue and K: the time per wave (``sms`` tiles,
    one CTA per SM) of the non-persistent grid and of the persistent one, us, by C's size
    (MB)."""
    ok = {(r["config"], r["m"], r["k"]): r for r in rows if r["status"] == "ok"}
    out = ["us per wave, non-persistent / persistent, by C (MB)"]
    for config in dict.fromkeys(r["config"] for r in rows if not r["config"].endswith(" np")):
        tile_m, tile_n = (int(v) for v in config.split()[0].split("x"))
        for k in EXIT_KS:
            cells = []
            for m in EXIT_MS:
                waves = -(-(m // tile_m) * (EXIT_N // tile_n) // sms)
                np_run, p_run = ok.get((config + " np", m, k)), ok.get((config, m, k))
                if np_run is not None and p_run is not None:
                    cells.append(f"{p_run['c_mb']:.0f}:{np_run['time_us'] / waves:.2f}/{p_run['time_us'] / waves:.2f}")
            out.append(f"{config} K={k}: " + " ".join(cells))
    return out


def order_table(rows: list[dict], shapes=ORDER_SHAPES) -> list[str]:
    """--order's (--granule's) runs, one line a raster and schedule: us and TB/s of C
    written per shape."""
    ok = {(r["config"], r["m"], r["n"], r["k"]): r for r in rows if r["status"] == "ok"}
    out = ["us (TB/s of C written) by shape: " + "  ".join(f"{m}x{n}x{k}" for m, n, k in shapes)]
    for config in dict.fromkeys(r["config"] for r in rows):
        cells = [f"{r['time_us']:.1f} ({r['c_mb'] / r['time_us']:.2f})" if (r := ok.get((config, *shape))) else "-"
                 for shape in shapes]
        out.append(f"{config}: " + "  ".join(cells))
    return out


def print_rates(rows: list[dict], ns) -> None:
    """One line a configuration and N: the TB/s of C written, by C's size (MB)."""
    for config in dict.fromkeys(r["config"] for r in rows):
        for n in ns:
            print(f"{config} N={n}: " + " ".join(f"{r['c_mb']:.0f}:{r['c_mb'] / r['time_us']:.2f}" for r in rows
                                               if (r["config"], r["n"]) == (config, n) and r["status"] == "ok"))


if __name__ == "__main__":
    sys.exit(main())
