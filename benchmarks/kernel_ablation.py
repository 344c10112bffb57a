"""What each ws-hopper feature buys: one idea per step, timed against cuBLAS in one run
(GPU machine).

For each shape (default 4096^3 and 8192^3, bf16) every variant below is verified on the
shape (sampled elements against float64, poisoned output, guard and row padding after
C; a wrong one prints WRONG and is not timed), then cuBLAS (``torch.matmul(A, B.T)``)
and all variants are timed in interleaved rounds: each round visits every side once
(the order reversed every round), each block after the same heavy warm-up (200 ms of
back-to-back launches of the GEMM about to be timed) and over the same number of
launches. Figures are medians over rounds, with the SM clock and power read (never set)
near the end of each block, as in ``kernel_speed.py``.

The variants start from the configuration that won at the start of issue 15 (128x256
tiles, 4 stages, persistent, grouped raster, direct epilogue) and change one dimension
at a time: the TMA-store epilogue, clusters and multicast, the other tile orientation,
ping-pong consumers, the raster group, a smaller persistent grid, the ring depth.

    PYTHONPATH=src python3 benchmarks/kernel_ablation.py --out $OUT
    PYTHONPATH=src python3 benchmarks/kernel_ablation.py --shapes 4096x4096x4096 --rounds 5
    PYTHONPATH=src python3 benchmarks/kernel_ablation.py --only baseline tma c2x1
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "src"))
sys.path.insert(0, str(HERE))

from kernel_speed import (BlockTimer, Cublas, Telemetry, figure, fmt_fig, launches_for,  # noqa: E402
                          parse_shape, pci_bus_id, versions)

from gemmperf.errors import UserError  # noqa: E402
from gemmperf.problem import KernelConfig  # noqa: E402


def _kc(tm=128, tn=256, stages=4, cluster=(1, 1), persistent=True, raster="grouped", **kw) -> KernelConfig:
    return KernelConfig("ws-hopper", "bf16", tm, tn, 64, stages, cluster[0], cluster[1], persistent, raster, **kw)


# (name, what changes, configuration): the steps build on each other down to "c2x1";
# the rest each change one thing of the step they name.
VARIANTS = [
    ("baseline", "issue 15's starting winner: 128x256, 4 stages, persistent, grouped, direct epilogue", _kc()),
    ("tma", "baseline + TMA-store epilogue", _kc(epilogue="tma")),
    ("c2x1", "tma + cluster 2x1 (B multicast)", _kc(cluster=(2, 1), epilogue="tma")),
    ("c1x2", "tma + cluster 1x2 (A multicast)", _kc(cluster=(1, 2), epilogue="tma")),
    ("c2x2", "tma + cluster 2x2 (A and B multicast)", _kc(cluster=(2, 2), epilogue="tma")),
    ("c2x1-direct", "c2x1 with the direct epilogue", _kc(cluster=(2, 1))),
    ("256x128-c1x2", "256x128 tiles, cluster 1x2, TMA epilogue", _kc(256, 128, cluster=(1, 2), epilogue="tma")),
    ("256x128-c2x1", "256x128 tiles, cluster 2x1, TMA epilogue", _kc(256, 128, cluster=(2, 1), epilogue="tma")),
    ("pp-64x256-c2x1", "ping-pong, 64x256 per warpgroup, cluster 2x1, TMA epilogue",
     _kc(64, 256, cluster=(2, 1), epilogue="tma", schedule="pingpong")),
    ("pp-128x128-c2x1", "ping-pong, 128x128 per warpgroup, 5 stages, cluster 2x1, TMA epilogue",
     _kc(128, 128, 5, cluster=(2, 1), epilogue="tma", schedule="pingpong")),
    ("pp-128x128-c1x1", "ping-pong, 128x128 per warpgroup, 5 stages, no cluster, TMA epilogue",
     _kc(128, 128, 5, epilogue="tma", schedule="pingpong")),
    ("c2x1-g4", "c2x1 with raster groups of 4", _kc(cluster=(2, 1), epilogue="tma", group_m=4)),
    ("c2x1-g16", "c2x1 with raster groups of 16", _kc(cluster=(2, 1), epilogue="tma", group_m=16)),
    ("c2x1-row", "c2x1 with the row raster", _kc(cluster=(2, 1), epilogue="tma", raster="row")),
    ("c2x1-ctas128", "c2x1 on a persistent grid of 128 CTAs", _kc(cluster=(2, 1), epilogue="tma", persistent_ctas=128)),
    ("c2x1-np", "c2x1 not persistent (one CTA per tile)", _kc(cluster=(2, 1), epilogue="tma", persistent=False, raster="row")),
    ("c2x1-s3", "c2x1 with 3 stages", _kc(stages=3, cluster=(2, 1), epilogue="tma")),
]


def parse_args(argv=None):
    p = argparse.ArgumentParser(prog="kernel_ablation.py", description=__doc__.split("\n\n")[0])
    p.add_argument("--shapes", nargs="*", default=["4096x4096x4096", "8192x8192x8192"], metavar="MxNxK")
    p.add_argument("--only", nargs="*", metavar="NAME", help="only these variants: " + ", ".join(v[0] for v in VARIANTS))
    p.add_argument("--rounds", type=int, default=3, help="interleaved rounds (default 3)")
    p.add_argument("--torch-data", action="store_true", help="also time cuBLAS on torch.rand bf16 operands "
                   "(8-bit mantissas; the operands cuBLAS was timed on before)")
    p.add_argument("--warmup-ms", type=float, default=200.0)
    p.add_argument("--block-ms", type=float, default=80.0)
    p.add_argument("--out", default=os.environ.get("OUT", "."))
    args = p.parse_args(argv)
    known = {v[0] for v in VARIANTS}
    for name in args.only or []:
        if name not in known:
            raise UserError(f"--only {name!r}: known variants are {', '.join(sorted(known))}")
    return args


def measure(timer, torch, kernels: dict, shape, args) -> dict:
    from gemmperf.kernels.launch import GemmRunner
    from gemmperf.kernels.verify import verify

    flops = 2.0 * shape[0] * shape[1] * shape[2]
    out = {"shape": "x".join(map(str, shape)), "variants": {}, "wrong": {}}
    ref = Cublas(torch, *shape) if torch else None
    ref_torch = Cublas(torch, *shape, data="torch-bf16") if torch and args.torch_data else None
    runners, sides = {}, {}
    try:
        if ref:
            time.sleep(0.3)
            t_ref = timer.calibrate(ref.launch)
            out["cublas_cool"] = figure([timer.run(ref.launch, 2, launches_for(20.0, t_ref, 3))], flops)
            sides["cuBLAS"] = ref.launch
            if ref_torch:
                sides["cuBLAS-torch-data"] = ref_torch.launch
        for name, kern in kernels.items():
            run = GemmRunner(kern, *shape, stream=timer.stream)
            res = verify(kern, *shape, runner=run)
            if not res.ok:
                out["wrong"][name] = res.reason
                print(f"  WRONG {out['shape']} {name} {kern.config.key()}: {res.reason}", flush=True)
                run.close()
                continue
            runners[name], sides[name] = run, run.launch
        t = timer.calibrate(next(iter(sides.values())))
        names = list(sides)
        blocks = {name: [] for name in names}
        for r in range(args.rounds):
            for name in (names if r % 2 == 0 else names[::-1]):
                blocks[name].append(timer.run(sides[name], launches_for(args.warmup_ms, t, 2),
                                              launches_for(args.block_ms, t, 3)))
        for name in names:
            out["variants"][name] = figure(blocks[name], flops)
    finally:
        for run in runners.values():
            run.close()
        for r in (ref, ref_torch):
            if r:
                r.close()
    return out


def table(results: list[dict], kernels: dict) -> str:
    lines = []
    for res in results:
        figs = res["variants"]
        ref = figs.get("cuBLAS")
        base = figs.get("baseline")
        lines += [f"### {res['shape']}", "",
                  f"cuBLAS cool: {fmt_fig(res.get('cublas_cool'))}; interleaved: {fmt_fig(ref)}", "",
                  "| variant | TFLOP/s (SM clock, power) | % of interleaved cuBLAS | vs baseline | configuration |",
                  "|---|---:|---:|---:|---|"]
        for name, fig in figs.items():
            if name == "cuBLAS":
                continue
            if name not in kernels:
                pct = f"{100 * fig['tflops'] / ref['tflops']:.0f}%" if ref else "-"
                lines.append(f"| {name} | {fmt_fig(fig)} | {pct} | | torch.rand bf16 operands (8-bit mantissas) |")
                continue
            pct = f"{100 * fig['tflops'] / ref['tflops']:.0f}%" if ref else "-"
            vs = f"{100 * (fig['tflops'] / base['tflops'] - 1):+.1f}%" if base else "-"
            lines.append(f"| {name} | {fmt_fig(fig)} | {pct} | {vs} | {kernels[name].config.key()} |")
        for name, why in res["wrong"].items():
            lines.append(f"| {name} | WRONG: {why} | | | {kernels[name].config.key()} |")
        lines.append("")
    return "\n".join(lines)


def main(argv=None) -> int:
    try:
        args = parse_args(argv)
        shapes = [parse_shape(s) for s in args.shapes]  # bad input fails before the GPU
        from gemmperf.hardware import probe

        probe(0)
    except UserError as err:
        print(f"kernel_ablation: {err}", file=sys.stderr)
        return 2
    from gemmperf.kernels import build
    from gemmperf.kernels.builder import build_all
    from gemmperf.kernels.launch import device_arch, ensure_context

    ensure_context(0)
    arch = device_arch(0)
    telemetry = Telemetry(0, pci_bus_id(0))
    info = {"nvidia_smi": telemetry.describe(), "at_start": telemetry.read(), **versions()}
    print(json.dumps(info), flush=True)
    chosen = [v for v in VARIANTS if not args.only or v[0] in args.only]
    failed = build_all([cfg for _, _, cfg in chosen], arch)
    for key, err in failed.items():
        print(f"{key}: does not compile ({err})", flush=True)
    kernels = {name: build(cfg, arch) for name, _, cfg in chosen if cfg.key() not in failed}
    from gemmperf.kernels.launch import max_active_clusters

    for name, what, cfg in chosen:
        if name in kernels:
            r = kernels[name].resources
            clusters = max_active_clusters(kernels[name])
            fit = f", {clusters} clusters fit" if clusters else ""
            print(f"{name:18s} {r.registers} regs, {r.smem_total} B smem, {r.spills} B spilled{fit}: {what}", flush=True)
    try:
        import torch
        stream = int(torch.cuda.current_stream().cuda_stream)
    except ImportError:
        torch, stream = None, 0
    timer = BlockTimer(stream, telemetry)
    results = []
    for shape in shapes:
        t0 = time.monotonic()
        results.append(measure(timer, torch, kernels, shape, args))
        print(f"{results[-1]['shape']}: {time.monotonic() - t0:.0f} s", flush=True)
    md = table(results, kernels)
    md += f"\nGPU: {info['nvidia_smi']}; {time.strftime('%Y-%m-%d %H:%M:%S')}; {args.rounds} rounds\n"
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "kernel_ablation.md").write_text(md)
    (out / "kernel_ablation.json").write_text(json.dumps({"gpu": info, "settings": vars(args), "results": results,
                                                          "variants": {n: (w, c.key()) for n, w, c in chosen}},
                                                         indent=1, default=str))
    print(md, flush=True)
    return 1 if any(r["wrong"] for r in results) else 0


if __name__ == "__main__":
    sys.exit(main())
