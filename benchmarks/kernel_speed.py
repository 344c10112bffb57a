"""Kernel speed next to cuBLAS, on a GPU machine.

    PYTHONPATH=src python3 benchmarks/kernel_speed.py [--shapes ...] [--out DIR]

For 4096^3, 8192^3 and the DSV3 shapes (testlists/dsv3.csv) in bf16, times a few
candidate configurations of each family, keeps the best of each family per shape,
verifies it on that shape (sampled elements against float64; a wrong result is
printed as WRONG and never counted as a speed), and times torch.matmul (cuBLAS) in the
same run with the same method: CUDA events around each launch, median of the timed
launches after warm-up launches, fresh random inputs (never zeros). torch is optional:
without it there is no ratio column.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))

from gemmperf.kernels import get_family, hopper  # noqa: E402
from gemmperf.kernels.builder import build  # noqa: E402
from gemmperf.kernels.launch import GemmRunner, device_arch, ensure_context  # noqa: E402
from gemmperf.kernels.verify import verify  # noqa: E402
from gemmperf.problem import KernelConfig as KC  # noqa: E402

CANDIDATES = {
    "ws-hopper": [
        KC("ws-hopper", "bf16", 128, 256, 64, 4, persistent=True, raster="grouped"),
        KC("ws-hopper", "bf16", 256, 128, 64, 4, persistent=True, raster="grouped"),
        KC("ws-hopper", "bf16", 128, 256, 64, 4),
        KC("ws-hopper", "bf16", 128, 128, 64, 6, persistent=True, raster="grouped"),
        KC("ws-hopper", "bf16", 128, 64, 64, 8, persistent=True, raster="grouped"),
        KC("ws-hopper", "bf16", 64, 256, 64, 4, persistent=True, raster="grouped"),
    ],
    "ws-ampere": [
        KC("ws-ampere", "bf16", 128, 128, 64, 3),
        KC("ws-ampere", "bf16", 64, 128, 32, 3),
        KC("ws-ampere", "bf16", 128, 64, 32, 4),
    ],
    "simt": [
        KC("simt", "fp32", 128, 128, 8, 2),
        KC("simt", "fp32", 64, 64, 16, 1),
    ],
}


def read_shapes(path: Path) -> list[tuple[int, int, int]]:
    with path.open() as fh:
        return [(int(r["m"]), int(r["n"]), int(r["k"])) for r in csv.DictReader(fh)]


def reps_for(flops: float, rate: float) -> int:
    """Enough launches for ~0.3 s of timing, between 3 and 50."""
    return int(min(50, max(3, 0.3 / (flops / rate))))


def time_kernel(kern, m, n, k, reps) -> float:
    with GemmRunner(kern, m, n, k) as run:
        run.fill(int.from_bytes(os.urandom(4), "little"))
        return statistics.median(run.time(reps=reps, warmup=2))


def time_torch(m, n, k, reps) -> float | None:
    try:
        import torch
    except ImportError:
        return None
    a = torch.rand(m, k, device="cuda", dtype=torch.bfloat16) * 2 - 1
    b = torch.rand(n, k, device="cuda", dtype=torch.bfloat16) * 2 - 1
    for _ in range(2):
        torch.matmul(a, b.t())
    evs = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)) for _ in range(reps)]
    for s, e in evs:
        s.record()
        torch.matmul(a, b.t())
        e.record()
    torch.cuda.synchronize()
    out = statistics.median(s.elapsed_time(e) for s, e in evs)
    del a, b
    torch.cuda.empty_cache()
    return out


def gpu_info() -> dict:
    info = {"host": platform.node()}
    try:
        q = "name,driver_version,clocks.sm,clocks.max.sm,clocks.mem,power.limit"
        out = subprocess.run(["nvidia-smi", f"--query-gpu={q}", "--format=csv,noheader"],
                             capture_output=True, text=True, timeout=20).stdout.strip()
        info["nvidia_smi"] = out
    except (OSError, subprocess.SubprocessError) as err:
        info["nvidia_smi"] = f"unavailable: {err}"
    try:
        import cuda.bindings
        import cuda.core

        from gemmperf.kernels.builder import nvrtc_version

        info["cuda_core"] = cuda.core.__version__
        info["cuda_bindings"] = cuda.bindings.__version__
        info["nvrtc"] = ".".join(map(str, nvrtc_version()))
    except Exception as err:  # informational only
        info["versions"] = str(err)
    return info


def epilogue_ab(shapes, arch) -> int:
    """Interleaved A/B of the two ws-hopper epilogues (quad-transposed 16 B vs 4 B stores)."""
    variants = {}
    for quad in (1, 0):
        hopper.QUAD_EPILOGUE = quad
        variants[quad] = [build(c, arch) for c in (CANDIDATES["ws-hopper"][0], CANDIDATES["ws-hopper"][3])]
    hopper.QUAD_EPILOGUE = 1
    for m, n, k in shapes:
        flops = 2.0 * m * n * k
        for i in range(2):
            res = {0: [], 1: []}
            for _ in range(4):
                for quad in (1, 0):
                    res[quad].append(time_kernel(variants[quad][i], m, n, k, reps_for(flops, 600e12)))
            q, b = (flops / statistics.median(res[x]) / 1e9 for x in (1, 0))
            print(f"A/B {m}x{n}x{k} {variants[1][i].config.key()}: quad {q:.1f}  4B {b:.1f} TFLOP/s", flush=True)
    return 0


def main(argv=None) -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--shapes", nargs="*", help="MxNxK shapes (default: 4096^3, 8192^3 and testlists/dsv3.csv)")
    p.add_argument("--no-dsv3", action="store_true")
    p.add_argument("--families", nargs="*", default=list(CANDIDATES))
    p.add_argument("--ab-epilogue", action="store_true", help="also time ws-hopper with the 4-byte epilogue")
    p.add_argument("--rounds", type=int, default=3, help="interleaved cuBLAS/ws-hopper re-timing rounds")
    p.add_argument("--ab-only", action="store_true", help="only the interleaved epilogue A/B on the shapes")
    p.add_argument("--out", default=os.environ.get("OUT", "."))
    args = p.parse_args(argv)

    ensure_context(0)
    arch = device_arch(0)
    info = gpu_info()
    print(json.dumps(info), flush=True)
    if args.shapes:
        shapes = [tuple(int(x) for x in s.lower().split("x")) for s in args.shapes]
    else:
        shapes = [(4096, 4096, 4096), (8192, 8192, 8192)]
        if not args.no_dsv3:
            shapes += read_shapes(ROOT / "testlists" / "dsv3.csv")

    if args.ab_only:
        return epilogue_ab(shapes, arch)

    kernels = {}
    for fam in args.families:
        for cfg in CANDIDATES[fam]:
            if not get_family(fam).runs_on_arch(arch):
                continue
            kernels.setdefault(fam, []).append(build(cfg, arch))
    if args.ab_epilogue and "ws-hopper" in kernels:
        hopper.QUAD_EPILOGUE = 0
        kernels["ws-hopper/4B-epilogue"] = [build(c, arch) for c in CANDIDATES["ws-hopper"][:3]]
        hopper.QUAD_EPILOGUE = 1

    rough = {"ws-hopper": 600e12, "ws-hopper/4B-epilogue": 600e12, "ws-ampere": 150e12, "simt": 30e12}
    rows = []
    for m, n, k in shapes:
        flops = 2.0 * m * n * k
        row = {"shape": f"{m}x{n}x{k}", "flops": flops}
        t_ref = time_torch(m, n, k, reps_for(flops, 700e12))
        row["cublas_tflops"] = flops / t_ref / 1e9 if t_ref else None
        for fam, kerns in kernels.items():
            best = None
            for kern in kerns:
                ms = time_kernel(kern, m, n, k, reps_for(flops, rough[fam]))
                if best is None or ms < best[0]:
                    best = (ms, kern)
            ms, kern = best
            if args.rounds and t_ref and fam.startswith("ws-hopper"):
                # same conditions for both: alternate cuBLAS and the winner (clocks drift
                # with temperature and power), medians over all rounds
                ts_k, ts_r = [], []
                for _ in range(args.rounds):
                    ts_r.append(time_torch(m, n, k, reps_for(flops, 700e12)))
                    ts_k.append(time_kernel(kern, m, n, k, reps_for(flops, rough[fam])))
                ms = statistics.median(ts_k)
                row[fam + "/cublas_paired"] = flops / statistics.median(ts_r) / 1e9
            ok, rel, why = verify(kern, m, n, k)
            row[fam] = {
                "config": kern.config.key(),
                "tflops": flops / ms / 1e9,
                "ok": ok,
                "rel_err": rel,
                "why": why,
                "registers": kern.resources.registers,
                "smem": kern.resources.smem_total,
            }
        rows.append(row)
        cells = []
        for fam in kernels:
            r = row[fam]
            tag = "" if r["ok"] else " WRONG"
            ref_f = row.get(fam + "/cublas_paired") or row["cublas_tflops"]
            ratio = f" ({r['tflops'] / ref_f:.0%} of {ref_f:.0f})" if ref_f else ""
            cells.append(f"{fam} {r['tflops']:.1f}{ratio}{tag}")
        ref = f"{row['cublas_tflops']:.1f}" if row["cublas_tflops"] else "-"
        print(f"{row['shape']:>20s} cuBLAS {ref} | " + " | ".join(cells), flush=True)

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "kernel_speed.json").write_text(json.dumps({"gpu": info, "arch": arch, "rows": rows}, indent=1))
    # markdown table
    fams = list(kernels)
    lines = ["| shape | cuBLAS | " + " | ".join(f"{f} | %" for f in fams) + " |",
             "|---|---:|" + "---:|---:|" * len(fams)]
    for row in rows:
        ref = row["cublas_tflops"]
        cells = []
        for f in fams:
            r = row[f]
            val = f"{r['tflops']:.1f}" + ("" if r["ok"] else " WRONG")
            cells.append(val)
            ref_f = row.get(f + "/cublas_paired") or ref
            cells.append(f"{r['tflops'] / ref_f:.0%}" if ref_f else "-")
        lines.append(f"| {row['shape']} | {ref:.1f} | " + " | ".join(cells) + " |" if ref else
                     f"| {row['shape']} | - | " + " | ".join(cells) + " |")
    best = {}
    for row in rows:
        for f in fams:
            best.setdefault(f, {}).setdefault(row[f]["config"], 0)
            best[f][row[f]["config"]] += 1
    lines.append("")
    lines.append("ws-hopper % is against cuBLAS re-timed interleaved with the winner (cuBLAS column: first timing).")
    lines.append("Winning configurations (count of shapes): " + json.dumps(best))
    (out / "kernel_speed.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    wrong = sum(1 for row in rows for f in fams if not row[f]["ok"])
    print(f"{wrong} wrong results; {time.strftime('%Y-%m-%d %H:%M:%S')}")
    return 1 if wrong else 0


if __name__ == "__main__":
    sys.exit(main())
