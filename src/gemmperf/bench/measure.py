"""Measure one configuration: compile, verify against float64, time. Runs in the sweep's
worker process (numpy + cuda-python + the standard library only).

Timing replays a CUDA graph of launches, so Python's launch overhead never shows in the
kernel's time; the time per launch is the graph's time over its launch count (the gaps
between back-to-back kernels are part of every kernel's time, as in a real stream).
Cold L2: the launches of a graph cycle over enough copies of A and B to cover three
times the L2, unless warm L2 was asked for (then one copy is reused).
"""

from __future__ import annotations

import math
import os
import sys

from ..kernels.builder import build
from ..kernels.driver import CudaError, check
from ..kernels.family import pad_k
from ..kernels.launch import (
    DeviceBuffer,
    GemmRunner,
    device_arch,
    ensure_context,
    fill_random,
)
from ..kernels.verify import verify
from ..problem import DTYPE_BYTES, KernelConfig
from .device import sm_clock_mhz
from .timing import time_kernel

MAX_GRAPH_LAUNCHES = 2048
TARGET_GRAPH_US = 1500.0
SAMPLES = 48  # sampled rows x columns checked against the float64 reference


class Measurer:
    """Callable ``task -> row fields``; keeps compiled kernels and input pools warm."""

    def __init__(self, gpu, *, warm_l2: bool = False, rel_spread: float = 0.02, max_seconds: float = 2.0,
                 verify_modes=("full",)):
        from cuda.bindings import driver as cu

        ensure_context(0)
        self.cu = cu
        self.gpu = gpu
        self.arch = device_arch(0)
        self.warm_l2 = warm_l2
        self.rel_spread, self.max_seconds = rel_spread, max_seconds
        self.stream = check(cu.cuStreamCreate(cu.CUstream_flags.CU_STREAM_NON_BLOCKING.value))
        self.kernels: dict[str, object] = {}
        self.pool_key = None
        self.pool = []

    # ---------------------------------------------------------------- pieces
    def kernel(self, cfg: KernelConfig):
        key = cfg.key()
        if key not in self.kernels:
            self.kernels[key] = build(cfg, self.arch)
        return self.kernels[key]

    def input_pool(self, m: int, n: int, k: int, dtype: str):
        """Copies of (A, B) covering 3x the L2 (one copy for warm L2), filled randomly."""
        key = (m, n, k, dtype)
        if self.pool_key == key:
            return self.pool
        for a, b in self.pool:
            a.free()
            b.free()
        esize = DTYPE_BYTES[dtype]
        ld = pad_k(k, esize)
        per_copy = (m + n) * ld * esize
        copies = 1 if self.warm_l2 else max(1, min(MAX_GRAPH_LAUNCHES, math.ceil(3 * self.gpu.l2_bytes / per_copy)))
        self.pool = []
        for i in range(copies):
            a, b = DeviceBuffer(int(m * ld * esize)), DeviceBuffer(int(n * ld * esize))
            fill_random(a, m, k, ld, dtype, 1 + 2 * i, self.arch, self.stream)
            fill_random(b, n, k, ld, dtype, 2 + 2 * i, self.arch, self.stream)
            self.pool.append((a, b))
        self.pool_key = key
        return self.pool

    def sm_clock(self):
        return sm_clock_mhz()

    # ---------------------------------------------------------------- one task
    def __call__(self, task: dict) -> dict:
        cfg = KernelConfig(**{f: task[f] for f in KernelConfig.__dataclass_fields__})
        m, n, k = int(task["m"]), int(task["n"]), int(task["k"])
        row = {"out_dtype": cfg.out_dtype, "acc_dtype": "fp32"}
        try:
            kern = self.kernel(cfg)
        except Exception as err:
            # the whole log: the journal keeps its first line and puts the rest in a side file
            return {**row, "status": "compile_error", "reason": f"{type(err).__name__}: {err}"}
        res = kern.resources
        row.update(registers=res.registers, smem_bytes=res.smem_total, spill_bytes=res.spill_stores + res.spill_loads)
        try:
            with GemmRunner(kern, m, n, k, stream=0) as runner:
                check_ = verify(kern, m, n, k, runner=runner, samples=SAMPLES)
                row["max_rel_err"] = check_.max_rel_err
                if not check_.ok:
                    return {**row, "status": "wrong_result", "reason": check_.reason[:500]}
                pool = self.input_pool(m, n, k, cfg.dtype)
                plans = [runner.plan_for(a.ptr, b.ptr) for a, b in pool]
                row.update(self.time(lambda i: plans[i % len(plans)](self.stream), len(plans)))
        except CudaError as err:
            # a sticky error poisons the context: end this worker, the sweep restarts one
            print(f"CUDA error on {cfg.key()} {m}x{n}x{k}: {err}", file=sys.stderr)
            sys.stderr.flush()
            os._exit(3)
        row["status"], row["reason"] = "ok", ""
        return row

    def time(self, launch, copies: int) -> dict:
        """Time ``launch(i)`` by graph replay; also record the SM clock around it."""
        cu = self.cu
        clock0 = self.sm_clock()
        # estimate one launch to size the graph
        est = time_kernel(launch, self.stream, min_repeats=1, window=1, max_seconds=0.0,
                          target_batch_us=1.0, warmup_us=0.0).time_us
        count = max(copies, int(TARGET_GRAPH_US / max(est, 1.0)))
        count = max(1, min(MAX_GRAPH_LAUNCHES, count))
        check(cu.cuStreamBeginCapture(self.stream, cu.CUstreamCaptureMode.CU_STREAM_CAPTURE_MODE_THREAD_LOCAL))
        try:
            for i in range(count):
                launch(i)
        finally:
            graph = check(cu.cuStreamEndCapture(self.stream))
        exe = check(cu.cuGraphInstantiate(graph, 0))
        try:
            t = time_kernel(lambda _: check(cu.cuGraphLaunch(exe, self.stream)), self.stream,
                            rel_spread=self.rel_spread, max_seconds=self.max_seconds,
                            target_batch_us=max(TARGET_GRAPH_US, est * count), max_batch=20)
        finally:
            cu.cuGraphExecDestroy(exe)
            cu.cuGraphDestroy(graph)
        out = t.as_row()
        for key in ("time_us", "time_us_min", "time_us_max"):
            out[key] = out[key] / count
        out["launches_per_repeat"] = out["launches_per_repeat"] * count
        out.update(sm_clock_start_mhz=clock0, sm_clock_end_mhz=self.sm_clock(), warm_l2=self.warm_l2)
        return out
