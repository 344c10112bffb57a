"""simt: shared-memory tiled FP32 GEMM with 8x8 register blocking (PA2 / FastGeMM style).

A is M x K row-major, B is N x K row-major (K-major), C is M x N row-major, all fp32.
Each thread computes an 8 x 8 block of C; tiles of A and B are staged through
registers into shared memory stored transposed (k-major) so that the inner loop reads
float4 vectors. ``stages`` is 1 (load, sync, compute) or 2 (double buffer: the next
tile is fetched into registers while the current one is multiplied).
"""

from __future__ import annotations

from ..problem import KernelConfig
from . import source
from .family import Family

# Each thread computes a TM x TN block of C (simt.cu defines the same values).
TM = TN = 8
# Padding (floats) of each k-row of the transposed A and B tiles (bank conflicts).
PAD = 4
# Working registers beside the TM x TN accumulators (fragments of A and B, addresses).
WORKING_REGS = 48


class Simt(Family):
    name = "simt"
    dtypes = ("fp32",)
    tensor_cores = False
    tile_ms = tile_ns = (32, 64, 128)
    tile_ks = (8, 16, 32)
    min_stages, max_stages = 1, 2  # load, sync, compute; or double-buffered
    tma_operands = False
    arch_rule = "any architecture"
    source_files = ("prelude.cuh", "simt.cu")
    bench_stages = 2  # double-buffered
    microbench_tiles = ((64, 64, 8), (64, 64, 16), (128, 64, 8), (128, 128, 8), (64, 128, 16))
    small_picks = ((64, 64, 2, False),)

    def runs_on_arch(self, arch: str) -> bool:
        return True

    def dtype_for(self, dtype: str) -> str:
        """simt is the FP32 kernel whatever the requested dtype."""
        return "fp32"

    def dtype_reason(self) -> str:
        return "simt is fp32"

    def threads(self, cfg: KernelConfig) -> int:
        return (cfg.tile_m // TM) * (cfg.tile_n // TN)

    def dynamic_smem(self, cfg: KernelConfig) -> int:
        """The kernel uses static shared memory only."""
        return 0

    def static_smem(self, cfg: KernelConfig) -> int:
        return cfg.stages * cfg.tile_k * (cfg.tile_m + cfg.tile_n + 2 * PAD) * 4

    def smem_bytes(self, cfg: KernelConfig) -> int:
        return self.static_smem(cfg)

    def accumulators_per_thread(self, cfg: KernelConfig) -> int:
        return TM * TN

    def register_estimate(self, cfg: KernelConfig) -> int:
        return self.accumulators_per_thread(cfg) + WORKING_REGS

    def check_shape(self, cfg: KernelConfig) -> str | None:
        if not self.tile_ok(cfg):
            return self.tile_reason()
        if not self.min_stages <= cfg.stages <= self.max_stages:
            return "simt stages are 1 or 2"
        return None

    def in_default_sweep(self, cfg: KernelConfig, gpu) -> bool:
        """Tiles {64, 128}^2 with K in {8, 16}, 1 and 2 stages, non-persistent, row raster."""
        if cfg.tile_m < 64 or cfg.tile_n < 64 or cfg.tile_k > 16:
            return False
        return not cfg.persistent and cfg.raster == "row"

    def render(self, cfg: KernelConfig) -> str:
        if cfg.tile_m % TM or cfg.tile_n % TN:
            raise ValueError("simt tiles must be multiples of 8")
        if cfg.tile_k % 4:
            raise ValueError("simt tile_k must be a multiple of 4")
        if cfg.stages not in (1, 2):
            raise ValueError("simt stages must be 1 or 2")
        return source.assemble(cfg, "simt.cu", THREADS=self.threads(cfg))


SIMT = Simt()
