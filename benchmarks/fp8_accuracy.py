"""How precisely ws-hopper's fp8 (e4m3) kernels accumulate: the evidence behind
verify.TOL_ACC_INPUT["fp8"].

For each K, one fp8 kernel computes a 256 x 256 x K product of e4m3 inputs (uniform in
[-1, 1) rounded to e4m3, per-tensor scales as the runner sets them); every element is
compared with the float64 product of the very inputs. The output is bf16, so the error
first loses bf16's rounding (at most half an ulp of the output: 2^-8 |ref|); what is
left is the accumulation's, printed relative to sum_k |a_k b_k| (the bound verify uses)
and relative to the random-walk scale sqrt(K / 32) * 2^-14 * that sum. Also the same
for a bf16 kernel of the same tile, as the fp32-accumulation baseline.

    PYTHONPATH=src python3 benchmarks/fp8_accuracy.py [--k 32 256 ...]

No GPU: one line, exit status 2.
"""

from __future__ import annotations

import argparse
import sys


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--k", type=int, nargs="+", default=[32, 128, 1024, 4096, 16384, 65536])
    p.add_argument("--size", type=int, default=256, help="M = N (default 256)")
    args = p.parse_args(argv)
    try:
        from gemmperf.hardware import NoGPU, probe

        probe()
    except (ImportError, NoGPU) as err:
        print(f"fp8_accuracy: no GPU ({err})", file=sys.stderr)
        return 2
    import numpy as np

    from gemmperf.kernels.builder import build
    from gemmperf.kernels.launch import GemmRunner, decode, device_arch, ensure_context
    from gemmperf.problem import KernelConfig

    ensure_context(0)
    arch = device_arch(0)
    configs = [KernelConfig("ws-hopper", "fp8", 128, 128, 128, 4, epilogue="tma"),
               KernelConfig("ws-hopper", "bf16", 128, 128, 64, 4, epilogue="tma")]
    print("dtype | K | max err/absum (after bf16 rounding) | p99 | max / (sqrt(K/32) 2^-14 absum) | rel. Frobenius")
    for cfg in configs:
        kern = build(cfg, arch)
        for k in args.k:
            n = m = args.size
            with GemmRunner(kern, m, n, k) as run:
                run.fill(7)
                run.poison()
                run.launch()
                run.synchronize()
                a, b = run.rows("A", range(m)), run.rows("B", range(n))
                scale = run.scales[0] * run.scales[1]
                ref = (a @ b.T) * scale
                absum = (np.abs(a) @ np.abs(b).T) * abs(scale)
                got = decode(run.c_raw(), "bf16")
            excess = np.maximum(np.abs(got - ref) - 2.0**-8 * np.abs(ref), 0.0) / absum
            walk = np.sqrt(max(k / 32, 1)) * 2.0**-14
            frob = np.linalg.norm(got - ref) / np.linalg.norm(ref)
            print(f"{cfg.dtype} | {k} | {excess.max():.3g} (2^{np.log2(max(excess.max(), 1e-300)):.1f}) | "
                  f"{np.quantile(excess, 0.99):.3g} | {excess.max() / walk:.3g} | {frob:.3g}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
