"""ws-ampere: the paper's GeMM-WS on sm_80+: producer warps with cp.async, consumer
warps with mma.sync (m16n8k16), a ring of ``stages`` shared-memory buffers guarded by
full/empty mbarriers (cp.async.mbarrier.arrive signals a filled stage).

A is M x K row-major, B is N x K row-major (K-major), C is M x N row-major (bf16/fp16).
2 producer warps, 4 consumer warps in a 2 x 2 arrangement, each computing a
(tile_m/2) x (tile_n/2) block; shared-memory rows are XOR-swizzled in 16-byte chunks so
that ldmatrix reads are free of bank conflicts. Tails are zero-filled by cp.async's
source size (M, N rows and the last partial K chunk).
"""

from __future__ import annotations

from ..problem import KernelConfig
from . import source
from .family import MAX_STAGES, Family, compute_capability

CONSUMER_WARPS = 4
PRODUCER_WARPS = 2
# Working registers of a consumer thread beside its accumulators and A fragments.
WORKING_REGS = 40
# A-operand fragments: 8 registers for each 16-row slice of a warp's tile_m / 2 rows.
A_FRAGMENT_REGS_PER_32_ROWS = 8


class WsAmpere(Family):
    name = "ws-ampere"
    dtypes = ("bf16", "fp16")
    tensor_cores = True
    tile_ms = tile_ns = (64, 128, 256)
    tile_ks = (32, 64)
    min_stages, max_stages = 2, MAX_STAGES
    tma_operands = False
    arch_rule = "sm_80 or later"
    source_files = ("prelude.cuh", "ampere.cu")
    bench_stages = 4
    microbench_tiles = ((64, 64, 32), (128, 64, 32), (128, 128, 32), (64, 128, 64), (128, 128, 64))
    small_picks = ((128, 128, 3, False),)

    def runs_on_arch(self, arch: str) -> bool:
        major, _ = compute_capability(arch)
        return major >= 8  # cp.async, mma.sync bf16, mbarrier

    def threads(self, cfg: KernelConfig) -> int:
        return (CONSUMER_WARPS + PRODUCER_WARPS) * 32

    def accumulators_per_thread(self, cfg: KernelConfig) -> int:
        return (cfg.tile_m // 2) * (cfg.tile_n // 2) // 32

    def dynamic_smem(self, cfg: KernelConfig) -> int:
        """The ring, 2 mbarriers a stage, 128 bytes to align the ring."""
        return cfg.stages * (cfg.tile_m + cfg.tile_n) * cfg.tile_k * 2 + cfg.stages * 16 + 128

    def register_estimate(self, cfg: KernelConfig) -> int:
        fragments = A_FRAGMENT_REGS_PER_32_ROWS * (cfg.tile_m // 32)
        return self.accumulators_per_thread(cfg) + fragments + WORKING_REGS

    def in_default_sweep(self, cfg: KernelConfig, gpu) -> bool:
        """Tiles with M, N in {64, 128}, stages 2 to 4, non-persistent, row and grouped."""
        if cfg.tile_m > 128 or cfg.tile_n > 128 or cfg.stages > 4 or cfg.persistent:
            return False
        return cfg.raster != "column"

    def render(self, cfg: KernelConfig) -> str:
        if cfg.tile_k not in (32, 64):
            raise ValueError("ws-ampere tile_k must be 32 or 64")
        if cfg.tile_m % 32 or cfg.tile_n % 32:
            raise ValueError("ws-ampere tiles must be multiples of 32")
        return source.assemble(cfg, "ampere.cu", THREADS=self.threads(cfg))


WS_AMPERE = WsAmpere()
