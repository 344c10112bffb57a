"""ws-hopper: warp-specialized TMA + wgmma GEMM for sm_90a.

Layout: A is M x K row-major, B is N x K row-major (K-major, "column-major B"), C is
M x N row-major; both operands are K-major so wgmma runs with no transposition.
One producer warpgroup (a single thread issues TMA, the group gives its registers away
with ``setmaxnreg``), ``NWG`` consumer warpgroups issuing ``wgmma.m64nBNk16``; a ring of
``STAGES`` shared-memory buffers with full/empty mbarriers; TMA tiles use the 128-byte
swizzle (tile K = 64 elements = 128-byte rows) and zero-fill out-of-bounds tails.
"""

from __future__ import annotations

from ..problem import KernelConfig
from . import source
from .family import MAX_STAGES, Family

# Registers the producer warpgroup keeps after ``setmaxnreg.dec`` (it only issues TMA).
PROD_REGS = 40
# Working registers of a consumer thread beside its accumulators (addresses, descriptors,
# loop counters, the epilogue's packed values).
WORKING_REGS = 40
# 1: quad-transposed 16-byte stores in the epilogue; 0: 4-byte stores straight from the
# wgmma fragments. A module switch (an integer in the source) for A/B timing.
QUAD_EPILOGUE = 1


class WsHopper(Family):
    name = "ws-hopper"
    dtypes = ("bf16", "fp16")
    tensor_cores = True
    tile_ms = tile_ns = (64, 128, 256)
    tile_ks = (64,)  # 64 16-bit elements = one 128-byte swizzled row
    min_stages, max_stages = 2, MAX_STAGES
    tma_operands = True
    arch_rule = "sm_90a"
    source_files = ("prelude.cuh", "hopper.cu")
    bench_stages = 4
    microbench_tiles = ((64, 128, 64), (128, 128, 64), (128, 256, 64), (256, 128, 64), (64, 256, 64))
    small_picks = ((128, 128, 4, False), (128, 256, 4, True), (256, 128, 4, True), (128, 64, 4, False))
    medium_grid = True

    def runs_on_arch(self, arch: str) -> bool:
        return arch == "sm_90a"  # wgmma and setmaxnreg

    def consumer_warpgroups(self, cfg: KernelConfig) -> int:
        return 2 if cfg.tile_m >= 128 else 1

    def consumer_regs(self, cfg: KernelConfig) -> int:
        """Registers a consumer thread gets from ``setmaxnreg.inc``: 64K registers per SM,
        one CTA per SM, multiples of 8."""
        return 232 if self.consumer_warpgroups(cfg) == 2 else 240

    def threads(self, cfg: KernelConfig) -> int:
        return (self.consumer_warpgroups(cfg) + 1) * 128

    def accumulators_per_thread(self, cfg: KernelConfig) -> int:
        wg_m = cfg.tile_m // self.consumer_warpgroups(cfg)
        return wg_m * cfg.tile_n // 128

    def dynamic_smem(self, cfg: KernelConfig) -> int:
        """The ring, 2 mbarriers a stage, 1 KB to align the ring to 1024 bytes."""
        stage = (cfg.tile_m + cfg.tile_n) * cfg.tile_k * 2
        return cfg.stages * stage + cfg.stages * 16 + 1024

    def register_estimate(self, cfg: KernelConfig) -> int:
        return self.accumulators_per_thread(cfg) + WORKING_REGS

    def register_limit(self, cfg: KernelConfig, gpu) -> int:
        return self.consumer_regs(cfg)

    def in_default_sweep(self, cfg: KernelConfig, gpu) -> bool:
        """Stages 2, 3, 4 and the most that fit (at most 6); non-persistent with the row
        raster, persistent with each raster."""
        top = min(6, self.max_legal_stages(cfg, gpu))
        if cfg.stages not in {2, 3, 4, top}:
            return False
        return cfg.persistent or cfg.raster == "row"

    def render(self, cfg: KernelConfig) -> str:
        if cfg.tile_k != 64:
            raise ValueError("ws-hopper needs tile_k = 64 (128-byte swizzled rows)")
        ab = "f16" if cfg.dtype == "fp16" else "bf16"
        return source.assemble(
            cfg,
            "hopper.cu",
            _wgmma_fn(cfg.tile_n, ab),
            NWG=self.consumer_warpgroups(cfg),
            THREADS=self.threads(cfg),
            PROD_REGS=PROD_REGS,
            CONS_REGS=self.consumer_regs(cfg),
            QUAD_EPI=int(QUAD_EPILOGUE),
        )


def _wgmma_fn(bn: int, ab: str) -> str:
    n = bn // 2
    regs = ", ".join(f"%{i}" for i in range(n))
    outs = ", ".join(f'"+f"(d[{i}])' for i in range(n))
    return (
        f"__device__ __forceinline__ void wgmma_tile(float (&d)[{n}], u64 da, u64 db) {{\n"
        f'  asm volatile("{{\\n .reg .pred p;\\n setp.ne.b32 p, %{n + 2}, 0;\\n"\n'
        f'    "wgmma.mma_async.sync.aligned.m64n{bn}k16.f32.{ab}.{ab} {{{regs}}}, %{n}, %{n + 1}, p, 1, 1, 0, 0;\\n}}\\n"\n'
        f'    : {outs}\n'
        f'    : "l"(da), "l"(db), "r"(1));\n'
        "}\n"
    )


WS_HOPPER = WsHopper()
