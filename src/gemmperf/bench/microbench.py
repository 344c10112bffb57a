"""Microbenchmarks on the project's own kernels in their ablation modes (the paper's
section 4.2), plus DRAM copy and L2 bandwidth.

Every kernel run is one full wave: M = TM and N = TN x SMs, so each SM runs one CTA
and all SMs share DRAM as they do in a real GEMM.

- init: ``empty`` mode, K = TK                -> T_INIT
- epilogue: ``epilogue-only`` mode, K = TK     -> T_EPILOGUE (minus T_INIT)
- load: ``load-only`` mode, K = S x TK for several S and >= 4 tiles -> load throughput, latency
- math: ``math-only`` mode, likewise           -> math throughput, latency
- cluster: ``full`` mode, K = TK (one k-block), one wave of the 128x128 tiles alone and in
  clusters of two CTAs (2x1, 1x2), for the families that run clusters -> what running in
  clusters costs a kernel (``cluster_sync_us``, carried to another GPU by fit.transfer)
- dram: a device-to-device copy far larger than L2 (bytes read + written)
- l2: the same copy of a buffer that fits in L2, repeated
"""

from __future__ import annotations

import csv
import math
from pathlib import Path

from cuda.bindings import driver as cu

from ..errors import UserError
from ..kernels.launch import DeviceBuffer, ensure_context
from ..kernels import check_legal
from ..problem import DTYPE_BYTES, KernelConfig
from .collect import families_for, measurer, table_rows
from .sweep import run_sweep
from .timing import check, time_kernel

KINDS = {"empty": "init", "epilogue-only": "epilogue", "load-only": "load", "math-only": "math"}
K_STAGES = (2, 8, 32, 128)
CLUSTER_KIND, CLUSTER_MODE, CLUSTER_TILE = "cluster", "full", (128, 128)
CLUSTERS = ((1, 1), (2, 1), (1, 2))
EXTRA_COLUMNS = ("kind", "k_stages", "ctas", "bytes", "flops")


def microbench_tasks(gpu, families: list[str], dtype: str) -> list[dict]:
    """The kernel rows of every family among ``families`` that runs on ``gpu`` and takes
    ``dtype`` (collect.families_for); a tile whose K the dtype does not have is timed at
    the dtype's tile K (fp8: 128)."""
    tasks = []
    for fam in families_for(gpu, families, dtype):
        fd = fam.dtype_for(dtype)
        ks = sorted({t[2] for t in fam.tiles(fd)})
        for tm, tn, tk in fam.microbench_tiles:
            cfg = KernelConfig(fam.name, fd, tm, tn, tk if tk in ks else ks[0], fam.bench_stages)
            if check_legal(cfg, gpu) is not None:
                continue
            for mode in KINDS:
                for S in ((1,) if mode in ("empty", "epilogue-only") else K_STAGES):
                    tasks.append({"m": tm, "n": tn * gpu.sms, "k": S * tk, **cfg.replace(mode=mode).as_dict()})
            if (tm, tn) == CLUSTER_TILE:
                tasks += cluster_tasks(gpu, cfg)
    return tasks


def cluster_tasks(gpu, cfg: KernelConfig) -> list[dict]:
    """``cfg``'s tile alone and in each of ``CLUSTERS``, one k-block, one wave of 2 x SMs/2
    tiles (every cluster shape tiles it exactly); none where the family runs no clusters."""
    tm, tn, tk = cfg.tile_m, cfg.tile_n, cfg.tile_k
    runs = [cfg.replace(mode=CLUSTER_MODE, cluster_m=cm, cluster_n=cn) for cm, cn in CLUSTERS]
    if any(check_legal(run, gpu) is not None for run in runs):
        return []
    return [{"m": 2 * tm, "n": tn * (gpu.sms // 2), "k": tk, **run.as_dict()} for run in runs]


def kind_of(mode: str) -> str:
    """The microbenchmark kind of a kernel row run in ``mode``."""
    return CLUSTER_KIND if mode == CLUSTER_MODE else KINDS[mode]


def bandwidth_rows(gpu) -> list[dict]:
    """DRAM and L2 copy bandwidth with cuMemcpyDtoDAsync, timed with events."""
    ensure_context(0)
    stream = check(cu.cuStreamCreate(cu.CUstream_flags.CU_STREAM_NON_BLOCKING.value))
    rows = []
    for kind, size in (("dram", max(8 * gpu.l2_bytes, 1 << 30)), ("l2", gpu.l2_bytes // 4)):
        src, dst = DeviceBuffer(size), DeviceBuffer(size)
        try:
            t = time_kernel(lambda _: check(cu.cuMemcpyDtoDAsync(dst.ptr, src.ptr, size, stream)), stream)
            rows.append({"kind": kind, "status": "ok", "bytes": 2 * size, **t.as_row(),
                         "reason": f"{2 * size / t.time_us / 1e6:.3f} TB/s (read + written)"})
        finally:
            src.free()
            dst.free()
    return rows


def run_microbench(gpu, out: str | Path, families: list[str], dtype: str, timeout_s: float = 120.0) -> int:
    """Measure everything into ``out``. The kernel rows are a sweep whose journal is
    ``<out stem>.raw.csv`` (resumes like collect's)."""
    out = Path(out)
    raw = out.with_suffix(".raw.csv")
    tasks = microbench_tasks(gpu, families, dtype)
    if not tasks:
        raise UserError(f"no family of {families} runs on {gpu.slug}")
    factory, context, prepare = measurer(gpu, {})
    run_sweep(tasks, raw, factory, timeout_s=timeout_s, context=context, prepare=prepare)
    rows = table_rows(tasks, raw, context)
    for r in rows:
        m, n, k, tm, tn, tk = (int(r[c]) for c in ("m", "n", "k", "tile_m", "tile_n", "tile_k"))
        ctas = (m // tm) * (n // tn)
        r.update(kind=kind_of(r["mode"]), k_stages=math.ceil(k / tk), ctas=ctas,
                 bytes=(tm + tn) * k * DTYPE_BYTES[r["dtype"]] * ctas, flops=2 * tm * tn * k * ctas)
    rows += [{**context, **r} for r in bandwidth_rows(gpu)]
    columns = list(dict.fromkeys([*EXTRA_COLUMNS, *(c for r in rows for c in r)]))
    tmp = out.with_suffix(".tmp")
    with tmp.open("w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=columns, extrasaction="ignore")
        w.writeheader()
        w.writerows(rows)
    tmp.replace(out)
    return len(rows)
