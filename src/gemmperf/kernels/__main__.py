"""GPU-side self test: ``python3 -m gemmperf.kernels selftest``.

Compiles a list of configurations for the local GPU (a representative few, or with
``--sweep`` every configuration of the default sweep), verifies each on odd shapes (and
every ablation mode on two shapes), times the full-mode ones on square shapes and prints
a short table. ``python3 -m gemmperf.kernels compile`` compiles the default sweep for
an architecture without a GPU.
"""

from __future__ import annotations

import argparse
import sys
import time

from ..hardware import CATALOG
from ..problem import MODES, KernelConfig
from .builder import build, build_all
from .families import get_family, sweep_for_gpu
from .launch import GemmRunner, device_arch, ensure_context
from .verify import verify

ODD_SHAPES = [(1, 1, 1), (17, 33, 65), (1000, 1000, 1000), (4096, 257, 7168), (129, 4095, 200), (300, 300, 1)]


def default_configs(arch: str) -> list[KernelConfig]:
    out = []
    if get_family("ws-hopper").runs_on_arch(arch):
        out += [
            KernelConfig("ws-hopper", "bf16", 128, 256, 64, 4, persistent=True, raster="grouped"),
            KernelConfig("ws-hopper", "bf16", 256, 128, 64, 4, persistent=True, raster="grouped"),
            KernelConfig("ws-hopper", "bf16", 128, 256, 64, 4),
            KernelConfig("ws-hopper", "bf16", 128, 128, 64, 6, persistent=True, raster="grouped"),
            KernelConfig("ws-hopper", "bf16", 64, 128, 64, 4),
            KernelConfig("ws-hopper", "fp16", 128, 128, 64, 4, persistent=True, raster="column"),
            KernelConfig("ws-hopper", "bf16", 128, 256, 64, 4, persistent=True, raster="grouped", epilogue="tma"),
            KernelConfig("ws-hopper", "bf16", 128, 256, 64, 4, 2, 1, True, "grouped", epilogue="tma"),
            KernelConfig("ws-hopper", "bf16", 256, 128, 64, 4, 1, 2, True, "grouped", epilogue="tma", group_m=4),
            KernelConfig("ws-hopper", "fp16", 128, 128, 64, 5, 2, 2, True, "grouped", epilogue="tma"),
            KernelConfig("ws-hopper", "bf16", 64, 128, 64, 4, 2, 1, epilogue="direct"),
            KernelConfig("ws-hopper", "bf16", 128, 128, 64, 5, persistent=True, raster="grouped", epilogue="tma",
                         schedule="pingpong"),
            KernelConfig("ws-hopper", "bf16", 64, 256, 64, 4, 2, 1, True, "grouped", epilogue="tma",
                         schedule="pingpong"),
            KernelConfig("ws-hopper", "bf16", 128, 64, 64, 4, 1, 2, False, "row", schedule="pingpong"),
            KernelConfig("ws-hopper", "bf16", 64, 128, 64, 6, epilogue="tma", split_k=4),
            KernelConfig("ws-hopper", "bf16", 64, 256, 64, 4, split_k=8),
            KernelConfig("ws-hopper", "bf16", 128, 128, 64, 4, 2, 1, epilogue="tma", split_k=3),
            KernelConfig("ws-hopper", "bf16", 128, 256, 64, 4, 2, 1, True, "grouped", epilogue="tma", stream_k=True),
            KernelConfig("ws-hopper", "fp16", 128, 128, 64, 5, 1, 2, True, "row", epilogue="tma", stream_k=True),
            KernelConfig("ws-hopper", "fp8", 128, 256, 128, 4, 2, 1, True, "grouped", epilogue="tma"),
            KernelConfig("ws-hopper", "fp8", 128, 128, 128, 4),
            KernelConfig("ws-hopper", "fp8", 64, 256, 128, 4, epilogue="tma", split_k=6),
            KernelConfig("ws-hopper", "fp8", 128, 256, 128, 4, 1, 1, True, "grouped", epilogue="tma", stream_k=True),
            KernelConfig("ws-hopper", "fp8", 128, 128, 128, 5, persistent=True, raster="grouped", epilogue="tma",
                         schedule="pingpong"),
        ]
    out += [
        KernelConfig("ws-ampere", "bf16", 128, 128, 32, 4, raster="grouped"),
        KernelConfig("ws-ampere", "bf16", 128, 128, 64, 3),
        KernelConfig("ws-ampere", "fp16", 64, 128, 32, 3),
        KernelConfig("simt", "fp32", 128, 128, 8, 2),
        KernelConfig("simt", "fp32", 64, 64, 16, 1),
    ]
    return out


def _parse_shape(text: str) -> tuple[int, int, int]:
    m, n, k = (int(x) for x in text.lower().split("x"))
    return m, n, k


def _configs(args, arch: str) -> list[KernelConfig]:
    if args.sweep:
        from ..hardware import probe

        configs = sweep_for_gpu(probe(0))
    else:
        configs = default_configs(arch)
    if args.family:
        configs = [c for c in configs if c.family in args.family]
    if args.match:
        configs = [c for c in configs if any(text in c.key() for text in args.match)]
    return configs


def _checks(kern, shapes) -> list[bool]:
    """Verify ``kern`` on each shape; a FAIL line for each wrong one."""
    out = []
    for m, n, k in shapes:
        ok, rel, why = verify(kern, m, n, k)
        out.append(ok)
        if not ok:
            print(f"FAIL {kern.config.key()} {m}x{n}x{k}: {why}", flush=True)
    return out


def _speeds(kern, times: list[str], reps: int) -> list[float]:
    speeds = []
    for text in times:
        m, n, k = _parse_shape(text)
        with GemmRunner(kern, m, n, k) as run:
            run.fill(1234)
            ms = run.median_ms(reps=reps)
        speeds.append(2.0 * m * n * k / ms / 1e9)
    return speeds


def _torch_reference(times: list[str], reps: int) -> None:
    try:
        import torch
    except ImportError:
        print("torch not importable: no cuBLAS reference")
        return
    for text in times:
        m, n, k = _parse_shape(text)
        a = torch.rand(m, k, device="cuda", dtype=torch.bfloat16) - 0.5
        b = torch.rand(n, k, device="cuda", dtype=torch.bfloat16) - 0.5
        for _ in range(3):
            torch.matmul(a, b.t())
        evs = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)) for _ in range(reps)]
        for s, e in evs:
            s.record()
            torch.matmul(a, b.t())
            e.record()
        torch.cuda.synchronize()
        ts = sorted(s.elapsed_time(e) for s, e in evs)
        print(f"torch.matmul bf16 {text}: {2.0 * m * n * k / ts[len(ts) // 2] / 1e9:.1f} TFLOP/s")


def selftest(args) -> int:
    ensure_context(0)
    arch = device_arch(0)
    configs = _configs(args, arch)
    modes = [] if args.no_modes else [m for m in MODES if m != "full"]
    variants = configs + [c.replace(mode=m) for c in configs for m in modes]
    failed = build_all(variants, arch)
    for key, err in failed.items():
        print(f"COMPILE FAIL {key}: {err}", flush=True)
    shapes = [_parse_shape(s) for s in args.shapes] if args.shapes else ODD_SHAPES
    failures, rows = len(failed), []
    print(f"arch {arch}; {len(configs)} configurations; shapes {shapes}", flush=True)
    for cfg in configs:
        t0 = time.time()
        if cfg.key() in failed:
            continue
        kern = build(cfg, arch)
        r = kern.resources
        res = f"{r.registers}r {r.smem_total // 1024}KB spill {r.spills}"
        checks = _checks(kern, shapes)
        for mode in modes:
            if cfg.replace(mode=mode).key() not in failed:
                checks += _checks(build(cfg.replace(mode=mode), arch), [(17, 33, 65), (1000, 1000, 1000)])
        failures += checks.count(False)
        speeds = _speeds(kern, args.time, args.reps)
        rows.append((cfg.key(), res, sum(checks), len(checks), speeds))
        print(f"{cfg.key():55s} {res:24s} ok {sum(checks)}/{len(checks)} "
              + " ".join(f"{s:7.1f}" for s in speeds) + f"  ({time.time() - t0:.1f}s)", flush=True)
    if args.time and args.torch:
        _torch_reference(args.time, args.reps)
    print("\nconfig | resources | checks | TFLOP/s " + " ".join(args.time))
    for key, res, ok, total, speeds in rows:
        print(f"{key} | {res} | {ok}/{total} | " + " ".join(f"{s:.1f}" for s in speeds))
    print(f"{failures} failures")
    return 1 if failures else 0


def compile_sweep(args) -> int:
    """Compile for ``--gpu``'s architecture what the presets may measure: each family's
    default sweep, its split-K / stream-K configurations (``shared_k_configs``), and for
    a family with fp8 both again in fp8; report the kernels that spill."""
    gpu = CATALOG[args.gpu]
    modes = tuple(MODES) if args.all_modes else ("full",)
    configs = sweep_for_gpu(gpu, modes)
    for fam in map(get_family, dict.fromkeys(c.family for c in sweep_for_gpu(gpu))):
        configs += fam.shared_k_configs(gpu, None, modes)
        if "fp8" in fam.dtypes:
            configs += fam.default_sweep(gpu, "fp8", modes) + fam.shared_k_configs(gpu, "fp8", modes)
    configs = list({c.key(): c for c in configs}.values())
    bad = 0
    t0 = time.time()
    for cfg in configs:
        kern = build(cfg, gpu.arch)
        r = kern.resources
        if cfg.mode == "full" and (r.spills or r.stack_frame):
            bad += 1
            print(f"SPILL {cfg.key()}: {r}")
    print(f"{len(configs)} configurations for {gpu.arch} in {time.time() - t0:.0f}s, {bad} with spills")
    return 1 if bad else 0


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python3 -m gemmperf.kernels")
    sub = p.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("selftest", help="compile, verify and time kernels on the local GPU")
    s.add_argument("--family", action="append", help="only this family (repeatable)")
    s.add_argument("--sweep", action="store_true", help="every configuration of the default sweep")
    s.add_argument("--match", action="append", help="only configurations whose key contains this (repeatable)")
    s.add_argument("--shapes", nargs="*", help="verification shapes MxNxK")
    s.add_argument("--time", nargs="*", default=["4096x4096x4096"], help="timing shapes MxNxK")
    s.add_argument("--reps", type=int, default=20)
    s.add_argument("--no-modes", action="store_true", help="skip the ablation modes")
    s.add_argument("--torch", action="store_true", help="time torch.matmul as the cuBLAS reference")
    c = sub.add_parser("compile", help="compile the default sweep (no GPU needed)")
    c.add_argument("--gpu", default="h100-sxm5-80gb")
    c.add_argument("--all-modes", action="store_true")
    args = p.parse_args(argv)
    return selftest(args) if args.cmd == "selftest" else compile_sweep(args)


if __name__ == "__main__":
    sys.exit(main())
