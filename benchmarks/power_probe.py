"""Probe: what clock does a GEMM hold when it runs for seconds, not milliseconds?

The shipped measurements time each configuration for a few milliseconds, one after
another, and record the SM clock before and after. On the H100 data the recorded clock
follows the sweep's recent history more than the kernel's own power: rows after seconds
of heavy kernels ran throttled (1230-1530 MHz) even at 200-450 TFLOP/s, while most
800 TFLOP/s rows held 1965-1980 MHz (benchmarks/MODEL_ACCURACY.md, "The power-limited
clock"). A model of the power-limited clock on long heavy runs needs the steady state,
which this measures: each configuration (verified against float64 first) runs back to
back for ``--seconds`` after ``--rest`` seconds idle, timed in windows of about 50 ms,
while nvidia-smi samples the SM clock, board power, temperature and throttle reasons
every 50 ms. Clocks, power limits and every other card setting are left as they are. A
GPU-side script: numpy + cuda-python (+ nvidia-smi) only.

    PYTHONPATH=src python3 benchmarks/power_probe.py [--seconds 4] [--rest 3] [--out DIR]

Writes DIR/windows.csv (config, wall time, us per launch) and DIR/smi.csv (the samples),
and prints per configuration the first window's and the last second's TFLOP/s, clock and
power.
"""

from __future__ import annotations

import argparse
import csv
import subprocess
import sys
import time
from pathlib import Path

# (label, m, n, k, configuration): every tile shape at 8192^3 and two at 4096^3, bf16 and
# fp8, and memory-bound decode and prefill-like shapes, so the probe spans the power a
# GEMM can draw and how it splits between the tensor cores, the operand traffic and DRAM


def _configs():
    tiles = ((64, 64, 1), (64, 128, 1), (128, 128, 1), (128, 256, 2), (256, 128, 1))
    out = []
    for dtype in ("bf16", "fp8"):
        tk = 128 if dtype == "fp8" else 64
        for tm, tn, cm in tiles:
            out.append((f"8192^3 {dtype} {tm}x{tn}", 8192, 8192, 8192,
                        dict(dtype=dtype, tile_m=tm, tile_n=tn, tile_k=tk, stages=4, cluster_m=cm)))
        for tm, tn, cm in tiles[2:4]:
            out.append((f"4096^3 {dtype} {tm}x{tn}", 4096, 4096, 4096,
                        dict(dtype=dtype, tile_m=tm, tile_n=tn, tile_k=tk, stages=4, cluster_m=cm)))
        for m in (1, 64, 512):
            out.append((f"{m}x57344x8192 {dtype}", m, 57344, 8192,
                        dict(dtype=dtype, tile_m=64, tile_n=128, tile_k=tk, stages=8, cluster_n=2)))
    out.append(("16384^3 bf16 128x256", 16384, 16384, 16384,
                dict(dtype="bf16", tile_m=128, tile_n=256, stages=4, cluster_m=2)))
    return tuple(out)


CONFIGS = _configs()
SMI_FIELDS = "timestamp,clocks.sm,power.draw,enforced.power.limit,temperature.gpu,clocks_throttle_reasons.active"
WINDOW_S = 0.05


def main(argv=None) -> int:
    from cuda.bindings import driver as cu

    from gemmperf.bench.measure import SAMPLES, Measurer
    from gemmperf.hardware import probe
    from gemmperf.kernels import check_legal
    from gemmperf.kernels.driver import check
    from gemmperf.kernels.launch import GemmRunner
    from gemmperf.kernels.verify import verify
    from gemmperf.problem import KernelConfig

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=4.0, help="sustained run per configuration")
    ap.add_argument("--rest", type=float, default=3.0, help="idle seconds before each configuration")
    ap.add_argument("--out", default="power_probe", help="folder for windows.csv and smi.csv")
    a = ap.parse_args(argv)
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    gpu = probe(0)
    meas = Measurer(gpu)
    smi_file = open(out / "smi.csv", "w")
    smi = subprocess.Popen(["nvidia-smi", "--id=0", f"--query-gpu={SMI_FIELDS}", "--format=csv,nounits",
                            "-lms", str(int(WINDOW_S * 1000))], stdout=smi_file, stderr=subprocess.DEVNULL)
    rows, summary = [], []
    try:
        for label, m, n, k, fields in CONFIGS:
            cfg = KernelConfig(family="ws-hopper", persistent=True, **fields)
            why = check_legal(cfg, gpu)
            if why:
                print(f"{label}: illegal here ({why})", flush=True)
                continue
            kern = meas.kernel(cfg)
            with GemmRunner(kern, m, n, k, stream=0) as runner:
                ok = verify(kern, m, n, k, runner=runner, samples=SAMPLES)
                if not ok.ok:
                    print(f"{label}: wrong result ({ok.reason[:200]})", flush=True)
                    continue
                pool = meas.input_pool(m, n, k, cfg.dtype)
                plans = [runner.plan_for(x.ptr, y.ptr) for x, y in pool]
                stream = meas.stream
                # one graph of about WINDOW_S of launches
                t0 = time.perf_counter()
                plans[0](stream)
                check(cu.cuStreamSynchronize(stream))
                one = max(time.perf_counter() - t0, 1e-6)
                count = max(len(plans), min(4096, int(WINDOW_S / one)))
                check(cu.cuStreamBeginCapture(stream, cu.CUstreamCaptureMode.CU_STREAM_CAPTURE_MODE_THREAD_LOCAL))
                for i in range(count):
                    plans[i % len(plans)](stream)
                graph = check(cu.cuStreamEndCapture(stream))
                exe = check(cu.cuGraphInstantiate(graph, 0))
                time.sleep(a.rest)
                start = time.time()
                windows = []
                try:
                    while time.time() - start < a.seconds:
                        w0 = time.perf_counter()
                        check(cu.cuGraphLaunch(exe, stream))
                        check(cu.cuStreamSynchronize(stream))
                        us = (time.perf_counter() - w0) * 1e6 / count
                        windows.append((time.time(), us))
                finally:
                    cu.cuGraphExecDestroy(exe)
                    cu.cuGraphDestroy(graph)
            flops = 2.0 * m * n * k
            for wall, us in windows:
                rows.append({"label": label, "m": m, "n": n, "k": k, "config": cfg.key(), "wall": f"{wall:.3f}",
                             "us_per_launch": us, "tflops": flops / us / 1e6})
            last = [us for wall, us in windows if wall >= windows[-1][0] - 1.0]
            summary.append((label, windows[0][1], sum(last) / len(last), flops, start, windows[-1][0]))
            print(f"{label}: first {flops / windows[0][1] / 1e6:6.1f} TFLOP/s, last second "
                  f"{flops / (sum(last) / len(last)) / 1e6:6.1f} TFLOP/s ({len(windows)} windows)", flush=True)
    finally:
        smi.terminate()
        smi.wait()
        smi_file.close()
    with open(out / "windows.csv", "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]) if rows else ["label"])
        w.writeheader()
        w.writerows(rows)
    samples = _smi_samples(out / "smi.csv")
    print("\nlabel | first TFLOP/s | last-second TFLOP/s | ratio | clock MHz | power W | limit W | temp C | reasons")
    for label, first, last, flops, start, end in summary:
        s = [x for x in samples if end - 1.0 <= x["t"] <= end]
        med = (lambda key: sorted(x[key] for x in s)[len(s) // 2]) if s else (lambda key: float("nan"))
        reasons = sorted({x["reasons"] for x in s})
        print(f"{label} | {flops / first / 1e6:.1f} | {flops / last / 1e6:.1f} | {first / last:.3f} | "
              f"{med('clock'):.0f} | {med('power'):.0f} | {med('limit'):.0f} | {med('temp'):.0f} | {' '.join(reasons)}")
    return 0


def _smi_samples(path: Path) -> list[dict]:
    """nvidia-smi's CSV samples as dicts with a POSIX time ``t``."""
    from datetime import datetime

    out = []
    with open(path) as f:
        for rec in csv.reader(f):
            if len(rec) < 6 or rec[0].startswith("timestamp"):
                continue
            try:
                t = datetime.strptime(rec[0].strip(), "%Y/%m/%d %H:%M:%S.%f").timestamp()
                out.append({"t": t, "clock": float(rec[1]), "power": float(rec[2]), "limit": float(rec[3]),
                            "temp": float(rec[4]), "reasons": rec[5].strip()})
            except ValueError:
                continue
    return out


if __name__ == "__main__":
    sys.exit(main())
