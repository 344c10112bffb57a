"""Legal configurations per family and GPU, the default sweep, and resource estimates.

A configuration is legal on a GPU when its shared memory fits one CTA's opt-in limit,
its accumulators fit the registers a thread may have, and the family runs on the GPU's
architecture (ws-hopper: sm_90a only; ws-ampere: sm_80 and later; simt: any).
"""

from __future__ import annotations

from ..errors import UserError
from ..hardware import GPU
from ..problem import FAMILIES, MODES, KernelConfig
from . import ampere, hopper, simt

MAX_STAGES = 8


def smem_bytes(cfg: KernelConfig) -> int:
    """Shared memory one CTA of ``cfg`` uses (dynamic + static), in bytes."""
    if cfg.family == "ws-hopper":
        return hopper.smem_bytes(cfg)
    if cfg.family == "ws-ampere":
        return ampere.smem_bytes(cfg)
    return simt.static_smem_bytes(cfg)


def threads(cfg: KernelConfig) -> int:
    return {"ws-hopper": hopper, "ws-ampere": ampere, "simt": simt}[cfg.family].threads(cfg)


def register_estimate(cfg: KernelConfig) -> int:
    """Registers per thread of the math warps (accumulators plus working registers)."""
    if cfg.family == "ws-hopper":
        return hopper.accumulators_per_thread(cfg) + 40
    if cfg.family == "ws-ampere":
        return ampere.accumulators_per_thread(cfg) + 8 * (cfg.tile_m // 32) + 40
    return simt.TM * simt.TN + 48


def register_limit(cfg: KernelConfig, gpu: GPU) -> int:
    if cfg.family == "ws-hopper":
        return hopper.consumer_regs(cfg)
    per_thread = gpu.regs_per_sm // threads(cfg)
    return min(gpu.regs_per_thread, per_thread // 8 * 8)


def _cc(gpu: GPU) -> int:
    major, minor = gpu.compute_capability
    return major * 10 + minor


def check_legal(cfg: KernelConfig, gpu: GPU) -> str | None:
    """None if ``cfg`` is legal on ``gpu``, else the reason it is not."""
    fam = cfg.family
    if cfg.cluster_m != 1 or cfg.cluster_n != 1:
        return "clusters are not implemented (cluster_m = cluster_n = 1)"
    if fam == "ws-hopper":
        if gpu.arch != "sm_90a":
            return "ws-hopper needs sm_90a"
        if cfg.dtype not in ("bf16", "fp16"):
            return "ws-hopper takes bf16 or fp16"
        if cfg.tile_k != 64 or cfg.tile_m not in (64, 128, 256) or cfg.tile_n not in (64, 128, 256):
            return "ws-hopper tiles: M and N in {64, 128, 256}, K = 64"
        if hopper.accumulators_per_thread(cfg) > 128:
            return "accumulators exceed 128 registers a thread"
        if cfg.stages < 2:
            return "ws-hopper needs at least 2 stages"
    elif fam == "ws-ampere":
        if _cc(gpu) < 80:
            return "ws-ampere needs sm_80 or later"
        if cfg.dtype not in ("bf16", "fp16"):
            return "ws-ampere takes bf16 or fp16"
        if cfg.tile_k not in (32, 64) or cfg.tile_m not in (64, 128, 256) or cfg.tile_n not in (64, 128, 256):
            return "ws-ampere tiles: M and N in {64, 128, 256}, K in {32, 64}"
        if ampere.accumulators_per_thread(cfg) > 128:
            return "accumulators exceed 128 registers a thread"
        if cfg.stages < 2:
            return "ws-ampere needs at least 2 stages"
    elif fam == "simt":
        if cfg.dtype != "fp32":
            return "simt is fp32"
        if cfg.tile_m not in (32, 64, 128) or cfg.tile_n not in (32, 64, 128) or cfg.tile_k not in (8, 16, 32):
            return "simt tiles: M and N in {32, 64, 128}, K in {8, 16, 32}"
        if cfg.stages not in (1, 2):
            return "simt stages are 1 or 2"
    else:
        return f"unknown family {fam}"
    if cfg.stages > MAX_STAGES:
        return f"more than {MAX_STAGES} stages"
    if smem_bytes(cfg) > gpu.smem_per_block:
        return f"shared memory {smem_bytes(cfg)} B > {gpu.smem_per_block} B"
    if register_estimate(cfg) > register_limit(cfg, gpu):
        return f"register estimate {register_estimate(cfg)} > {register_limit(cfg, gpu)}"
    return None


def _max_stages(base: KernelConfig, gpu: GPU, lo: int) -> int:
    best = lo - 1
    for s in range(lo, MAX_STAGES + 1):
        if check_legal(base.replace(stages=s), gpu) is None:
            best = s
    return best


def legal_configs(family: str, gpu: GPU, dtype: str | None = None, modes=("full",)) -> list[KernelConfig]:
    """Every legal configuration of ``family`` on ``gpu`` (all rasters, persistence, stages)."""
    if family not in FAMILIES:
        raise UserError(f"family {family!r}: known families are {', '.join(FAMILIES)}")
    dtype = dtype or ("fp32" if family == "simt" else "bf16")
    out = []
    if family == "simt":
        tiles = [(m, n, k) for m in (32, 64, 128) for n in (32, 64, 128) for k in (8, 16, 32)]
        stage_range = (1, 2)
    elif family == "ws-hopper":
        tiles = [(m, n, 64) for m in (64, 128, 256) for n in (64, 128, 256)]
        stage_range = tuple(range(2, MAX_STAGES + 1))
    else:
        tiles = [(m, n, k) for m in (64, 128, 256) for n in (64, 128, 256) for k in (32, 64)]
        stage_range = tuple(range(2, MAX_STAGES + 1))
    for tm, tn, tk in tiles:
        for s in stage_range:
            for persistent in (False, True):
                for raster in ("row", "column", "grouped"):
                    for mode in modes:
                        cfg = KernelConfig(family, dtype, tm, tn, tk, s, 1, 1, persistent, raster, mode)
                        if check_legal(cfg, gpu) is None:
                            out.append(cfg)
    return out


def default_sweep(family: str, gpu: GPU, dtype: str | None = None, modes=("full",)) -> list[KernelConfig]:
    """The configurations the project measures by default: a reduced grid.

    ws-hopper: every legal tile, stages 2, 3, 4 and the most that fit (at most 6);
    non-persistent row raster and persistent with each raster. ws-ampere: tiles with
    M, N in {64, 128}, K in {32, 64}, stages 2 to 4, non-persistent, row and grouped
    raster. simt: tiles {64, 128}^2, K in {8, 16}, 1 and 2 stages, row raster.
    """
    dtype = dtype or ("fp32" if family == "simt" else "bf16")
    out = []
    for cfg in legal_configs(family, gpu, dtype, modes):
        if family == "ws-hopper":
            top = min(6, _max_stages(cfg, gpu, 2))
            if cfg.stages not in {2, 3, 4, top}:
                continue
            if not cfg.persistent and cfg.raster != "row":
                continue
        elif family == "ws-ampere":
            if cfg.tile_m > 128 or cfg.tile_n > 128 or cfg.stages > 4 or cfg.persistent:
                continue
            if cfg.raster == "column":
                continue
        else:
            if cfg.tile_m < 64 or cfg.tile_n < 64 or cfg.tile_k > 16 or cfg.persistent or cfg.raster != "row":
                continue
        out.append(cfg)
    return out


def sweep_for_gpu(gpu: GPU, modes=("full",)) -> list[KernelConfig]:
    """Default sweep of every family that runs on ``gpu`` (bf16 and fp32 for simt)."""
    out = []
    for fam in FAMILIES:
        try:
            out += default_sweep(fam, gpu, None, modes)
        except UserError:
            pass
    return out


ALL_MODES = MODES
