"""ws-hopper: warp-specialized TMA + wgmma GEMM for sm_90a.

Layout: A is M x K row-major, B is N x K row-major (K-major, "column-major B"), C is
M x N row-major with its rows padded to 16 bytes (``ldc = pad_n(N)``; the direct
epilogue also takes an unpadded C); both operands are K-major so wgmma runs with no
transposition.

One producer warpgroup (a single thread issues TMA, the group gives its registers away
with ``setmaxnreg``) and one or two consumer warpgroups issuing ``wgmma.m64nBNk16``; a
ring of ``STAGES`` shared-memory buffers with full/empty mbarriers; TMA tiles use the
128-byte swizzle (tile K = 64 elements = 128-byte rows) and zero-fill out-of-bounds tails.
A consumer frees k-block j - 1's slot once j - 1's wgmmas are done and j's are issued
(``wgmma_wait<1>`` after the commit). On a shallow ring of 256-row tiles that issue
waits for half the multiply (16 wgmmas a tensor-core sub-partition a k-block), and the
slot comes back that much later (benchmarks/README.md, the ring depth probe's
``--release``).
The configuration dimensions, each a ``#define`` of ``hopper.cu``:

- schedule ``cooperative``: both consumer warpgroups on one tile, split along M;
  ``pingpong``: each consumer warpgroup on its own tile (tile_m rows), their main loops
  take turns on the tensor cores (an ordered pair of named barriers) so one runs its
  epilogue while the other computes.
- clusters ``cluster_m x cluster_n`` (1x1, 2x1, 1x2, 2x2): the CTAs of a cluster work
  on neighbouring tiles; the ``cluster_m`` CTAs of a cluster column share B's tile and
  the ``cluster_n`` CTAs of a cluster row share A's, each loading a slice of the shared
  tile and multicasting it to all sharers; a consumer frees a ring slot in every CTA
  that writes into it.
- epilogue ``direct``: registers -> global with 16-byte stores (a quad transpose);
  ``tma``: registers -> a double-buffered 16 x 64 staging box per consumer warp
  (stmatrix, 128-byte swizzle) -> ``cp.async.bulk.tensor`` stores that run while the
  consumers go on; each warp on its own, no barrier across the warpgroup.
- persistent: one CTA per SM (``persistent_ctas`` caps the grid), each walking the
  tiles (clusters of tiles) in the raster order; else one CTA per tile.
- K shared among CTAs (cooperative schedule): ``split_k`` S > 1 makes S work items of
  each tile, item s taking k-blocks [s*KT/S, (s+1)*KT/S); ``stream_k`` gives each of the
  W persistent CTAs (clusters) the same share, KT*tiles/W k-blocks, of the (tile,
  k-block) iteration space, so a CTA may start and end inside a tile. A CTA that
  computed part of a tile writes its fp32 partial (only rows < M) to a workspace slot
  of its own and counts itself in the tile's counter; the one that arrives last adds
  the partials in a fixed order (contributor 0, 1, ..., its own from registers at its
  place), resets the counter and runs the epilogue. No CTA waits for another, and the
  sum does not depend on who arrives last: results are deterministic, bit for bit.
  ``workspace_bytes`` and ``counter_count`` size what the launch must provide (the
  counters zeroed once; every launch leaves them zero).
- dtype fp8 (e4m3): 1-byte A and B, tile K = 128 elements (one 128-byte swizzled row),
  ``wgmma.m64nNk32.f32.e4m3.e4m3``, fp32 accumulation; the epilogue multiplies by the
  per-tensor scales of A and B (kernel arguments) and writes bf16.
"""

from __future__ import annotations

from ..problem import DTYPE_BYTES, KernelConfig
from . import source
from .family import MAX_STAGES, Family, pad_n, work_units

# Registers the producer warpgroup keeps after ``setmaxnreg.dec`` (it only issues TMA).
PROD_REGS = 40
# Working registers of a consumer thread beside its accumulators (addresses, descriptors,
# loop counters, the epilogue's packed values).
WORKING_REGS = 40
# The TMA epilogue's staging: per consumer warp, two boxes of 16 rows x 64 columns of
# the 16-bit output (2 KB each), one filled while the other is stored; 16 KB a warpgroup.
STAGING_BYTES_PER_WG = 4 * 2 * 16 * 64 * 2
# Bytes of one mbarrier.
MBARRIER_BYTES = 8


# Bytes of a row of an operand tile: the 128-byte swizzle's row (tile K = 128 / element size).
SWIZZLE_ROW_BYTES = 128
# K splits the kernel implements (1: none): up to 16 CTAs per tile.
SPLIT_KS = (1, 2, 3, 4, 6, 8, 16)
# Tiles the presets measure with split-K and stream-K (shared_k_configs): the small ones
# that make many tiles of a skinny C (64x64 and 64x128 won most decode shapes on the
# H100, benchmarks/README.md), and the two fastest large ones.
SHARED_K_TILES = ((64, 64), (64, 128), (64, 256), (128, 128), (128, 256))


class WsHopper(Family):
    name = "ws-hopper"
    dtypes = ("bf16", "fp16", "fp8")
    tensor_cores = True
    tile_ms = tile_ns = (64, 128, 256)
    tile_ks = (64, 128)  # one 128-byte swizzled row: 64 16-bit or 128 8-bit elements
    min_stages, max_stages = 2, MAX_STAGES
    tma_operands = True
    cluster_shapes = ((1, 1), (2, 1), (1, 2), (2, 2))
    epilogues = ("direct", "tma")
    schedules = ("cooperative", "pingpong")
    group_ms = (1, 2, 4, 8, 16)
    split_ks = SPLIT_KS
    stream_k = True
    arch_rule = "sm_90a"
    source_files = ("prelude.cuh", "hopper.cu")
    bench_stages = 4
    microbench_tiles = ((64, 128, 64), (128, 128, 64), (128, 256, 64), (256, 128, 64), (64, 256, 64))
    small_picks = ((128, 128, 4, False), (128, 256, 4, True), (256, 128, 4, True), (128, 64, 4, False))
    medium_grid = True
    # Rows a TMA load of an operand carries at most (TMA's own limit is 256 a dimension):
    # a CTA loads its slice of A's tile (tile_m / cluster_n rows) and of B's (tile_n /
    # cluster_m) as boxes of this many rows. Every kernel measured loads a slice as one
    # box; ring_depth_probe --boxes lowers it to 128 to time 256-row slices as two boxes.
    box_limit = 256
    # When a consumer frees the previous k-block's ring slot: as measured, once that
    # k-block's wgmmas are done and this one's are issued (``wgmma_wait<1>`` after the
    # commit); ring_depth_probe --release sets True to free it before this one's issue.
    release_first = False

    def runs_on_arch(self, arch: str) -> bool:
        return arch == "sm_90a"  # wgmma and setmaxnreg

    def consumer_warpgroups(self, cfg: KernelConfig) -> int:
        if cfg.schedule == "pingpong":
            return 2
        return 2 if cfg.tile_m >= 128 else 1

    def warpgroup_rows(self, cfg: KernelConfig) -> int:
        """Rows of C one consumer warpgroup holds: its share of the tile (cooperative)
        or the whole tile (ping-pong)."""
        if cfg.schedule == "pingpong":
            return cfg.tile_m
        return cfg.tile_m // self.consumer_warpgroups(cfg)

    def consumer_regs(self, cfg: KernelConfig) -> int:
        """Registers a consumer thread gets from ``setmaxnreg.inc``: 64K registers per SM,
        one CTA per SM, multiples of 8."""
        return 232 if self.consumer_warpgroups(cfg) == 2 else 240

    def threads(self, cfg: KernelConfig) -> int:
        return (self.consumer_warpgroups(cfg) + 1) * 128

    def accumulators_per_thread(self, cfg: KernelConfig) -> int:
        return self.warpgroup_rows(cfg) * cfg.tile_n // 128

    @staticmethod
    def element_bytes(cfg: KernelConfig) -> int:
        return int(DTYPE_BYTES[cfg.dtype])

    def tile_k_for(self, dtype: str) -> int:
        """The tile K of ``dtype``: one 128-byte swizzled row (256 elements of a 4-bit
        type, which ws-hopper does not take)."""
        return int(SWIZZLE_ROW_BYTES / DTYPE_BYTES[dtype])

    def tiles(self, dtype: str | None = None) -> list[tuple[int, int, int]]:
        k = self.tile_k_for(dtype or self.default_dtype)
        return [t for t in super().tiles() if t[2] == k]

    def tile_reason(self) -> str:
        return (f"{self.name} tiles: M and N in {{{', '.join(map(str, self.tile_ms))}}}, "
                f"K = 64 (16-bit) or 128 (fp8)")

    def tile_ok(self, cfg: KernelConfig) -> bool:
        return super().tile_ok(cfg) and cfg.tile_k == self.tile_k_for(cfg.dtype)

    def check_shape(self, cfg: KernelConfig) -> str | None:
        reason = super().check_shape(cfg)
        if reason:
            return reason
        # ptxas spills 8 bytes when one consumer warpgroup holds 128 accumulators and
        # walks stream-K's 64-bit iteration space (64x256 tiles; seen with NVRTC 13.0)
        if cfg.stream_k and self.consumer_warpgroups(cfg) == 1 and self.accumulators_per_thread(cfg) >= 128:
            return "stream-K with 128 accumulators on one consumer warpgroup (64x256) spills registers"
        # multicast slices are whole 8-row groups of the 128-byte swizzle (1024 bytes)
        if (cfg.tile_m // cfg.cluster_n) % 8 or (cfg.tile_n // cfg.cluster_m) % 8:
            return "a cluster's multicast slices must be multiples of 8 rows"
        return None

    def operand_boxes(self, cfg: KernelConfig) -> tuple[int, int]:
        """Rows of one TMA box of A and of B: the CTA's slice of the operand tile, split
        into equal boxes of at most ``box_limit`` rows."""
        def box(rows: int) -> int:
            parts = -(-rows // self.box_limit)
            if rows % parts:
                raise ValueError(f"{rows} rows do not split into boxes of at most {self.box_limit}")
            return rows // parts
        return box(cfg.tile_m // cfg.cluster_n), box(cfg.tile_n // cfg.cluster_m)

    def staging_bytes(self, cfg: KernelConfig) -> int:
        return self.consumer_warpgroups(cfg) * STAGING_BYTES_PER_WG if cfg.epilogue == "tma" else 0

    def dynamic_smem(self, cfg: KernelConfig) -> int:
        """The ring, the TMA epilogue's staging buffers, 2 mbarriers a stage, 1 KB to
        align the ring to 1024 bytes."""
        stage = (cfg.tile_m + cfg.tile_n) * cfg.tile_k * self.element_bytes(cfg)
        return cfg.stages * stage + self.staging_bytes(cfg) + 2 * cfg.stages * MBARRIER_BYTES + 1024

    def register_estimate(self, cfg: KernelConfig) -> int:
        return self.accumulators_per_thread(cfg) + WORKING_REGS

    def register_limit(self, cfg: KernelConfig, gpu) -> int:
        return self.consumer_regs(cfg)

    def shares_k(self, cfg: KernelConfig) -> bool:
        return cfg.split_k > 1 or cfg.stream_k

    def partial_slots(self, cfg: KernelConfig, m: int, n: int, ctas: int) -> int:
        """Workspace slots (one consumer warpgroup's partial tile each) a launch of
        ``ctas`` CTAs needs: split-K one per work item (each CTA of a cluster unit, each
        K split), stream-K two per CTA (the tiles it starts and ends in); times the
        consumer warpgroups of a CTA."""
        if not self.shares_k(cfg):
            return 0
        per_cta = self.consumer_warpgroups(cfg)
        if cfg.stream_k:
            return 2 * ctas * per_cta
        return work_units(cfg, m, n) * cfg.cluster_size * cfg.split_k * per_cta

    def workspace_bytes(self, cfg: KernelConfig, m: int, n: int, ctas: int) -> int:
        """fp32 workspace of a split-K / stream-K launch of ``ctas`` CTAs (0 otherwise)."""
        return self.partial_slots(cfg, m, n, ctas) * self.warpgroup_rows(cfg) * cfg.tile_n * 4

    def counter_count(self, cfg: KernelConfig, m: int, n: int) -> int:
        """Arrival counters (32-bit, zero between launches) of a split-K / stream-K
        launch: one per consumer warpgroup's part of each tile."""
        if not self.shares_k(cfg):
            return 0
        return work_units(cfg, m, n) * cfg.cluster_size * self.consumer_warpgroups(cfg)

    def c_ld(self, cfg: KernelConfig, n: int) -> int:
        """Leading dimension of C (elements): rows padded to 16 bytes, as TMA needs."""
        return pad_n(n)

    def writes_c_padding(self, cfg: KernelConfig) -> bool:
        return cfg.epilogue == "tma"

    def in_default_sweep(self, cfg: KernelConfig, gpu) -> bool:
        """The baseline (cooperative, 1x1, direct epilogue) at stages 2, 4 and the most
        that fit (at most 6), non-persistent with the row raster and persistent with
        each raster; then, at 4 stages and the most that fit, each new
        dimension the fastest kernels combine: the TMA epilogue alone (the same three
        rasters), with clusters 2x1 and 1x2 (non-persistent row, persistent grouped), 2x2
        (persistent grouped), and ping-pong with the TMA epilogue at 1x1 and 2x1
        (non-persistent row, persistent grouped)."""
        if self.shares_k(cfg):
            return False  # measured where they pay, on few tiles: the presets (bench.collect)
        top = min(6, self.max_legal_stages(cfg, gpu))
        order = (cfg.persistent, cfg.raster)
        if not cfg.persistent and cfg.raster != "row":
            return False
        cluster = (cfg.cluster_m, cfg.cluster_n)
        if (cfg.schedule, cfg.epilogue, cluster) == ("cooperative", "direct", (1, 1)):
            return cfg.stages in {2, 4, top}
        if cfg.stages not in {4, top} or cfg.epilogue != "tma" or order == (True, "column"):
            return False
        if cfg.schedule == "cooperative" and cluster == (1, 1):
            return True
        if order == (True, "row"):
            return False
        if cfg.schedule == "pingpong":
            return cluster in ((1, 1), (2, 1))
        return cluster != (2, 2) or cfg.persistent

    def shared_k_configs(self, gpu, dtype: str | None = None, modes=("full",)) -> list[KernelConfig]:
        """Each of ``SHARED_K_TILES`` at 4 stages with the TMA epilogue: non-persistent
        with the row raster at every K split, and persistent, grouped, with stream-K."""
        dtype = dtype or self.default_dtype
        out = []
        for tm, tn in SHARED_K_TILES:
            base = KernelConfig(self.name, dtype, tm, tn, self.tile_k_for(dtype), 4, epilogue="tma")
            out += [base.replace(split_k=s, mode=m) for s in self.split_ks if s > 1 for m in modes]
            out += [base.replace(persistent=True, raster="grouped", stream_k=True, mode=m) for m in modes]
        return [c for c in out if self.check_legal(c, gpu) is None]

    def shares_k_usefully(self, cfg: KernelConfig, m: int, n: int, k: int, sms: int) -> bool:
        """Whether a split-K / stream-K ``cfg`` is worth measuring on ``m x n x k``.
        Sharing a tile's K pays only when the tiles alone leave SMs idle: T =
        ceil(M / TM) * ceil(N / TN) < ``sms``; then, with KT = ceil(K / TK) k-blocks a tile,
        split-K S when S <= KT (every split has a k-block) and T * S <= 2 * SMs (more
        CTAs than two waves only add partial tiles to reduce), stream-K when KT >= 2.
        Every other configuration: True."""
        if not self.shares_k(cfg):
            return True
        tiles = -(-m // cfg.tile_m) * -(-n // cfg.tile_n)
        k_blocks = -(-k // cfg.tile_k)
        if tiles >= sms:
            return False
        if cfg.stream_k:
            return k_blocks >= 2
        return cfg.split_k <= k_blocks and tiles * cfg.split_k <= 2 * sms

    def render(self, cfg: KernelConfig) -> str:
        if not self.tile_ok(cfg):
            raise ValueError(self.tile_reason())
        ab = {"fp16": "f16", "bf16": "bf16", "fp8": "e4m3"}[cfg.dtype]
        a_box, b_box = self.operand_boxes(cfg)
        return source.assemble(
            cfg,
            "hopper.cu",
            _wgmma_fn(cfg.tile_n, ab),
            ESZ=self.element_bytes(cfg),
            FP8=int(cfg.dtype == "fp8"),
            SPLIT_K=cfg.split_k,
            STREAM_K=int(cfg.stream_k),
            NWG=self.consumer_warpgroups(cfg),
            WG_M=self.warpgroup_rows(cfg),
            THREADS=self.threads(cfg),
            PROD_REGS=PROD_REGS,
            CONS_REGS=self.consumer_regs(cfg),
            CLUSTER_M=cfg.cluster_m,
            CLUSTER_N=cfg.cluster_n,
            A_BOX=a_box,
            B_BOX=b_box,
            RELEASE_FIRST=int(self.release_first),
            PINGPONG=int(cfg.schedule == "pingpong"),
            EPI_TMA=int(cfg.epilogue == "tma"),
        )


def _wgmma_fn(bn: int, ab: str) -> str:
    """``wgmma_tile``: one m64nBNk16 (16-bit, K-major operands: transpose flags 0) or
    m64nBNk32 (e4m3, which has no transpose flags) into ``d``; both read 32 bytes of K."""
    n = bn // 2
    regs = ", ".join(f"%{i}" for i in range(n))
    outs = ", ".join(f'"+f"(d[{i}])' for i in range(n))
    shape, flags = ("k32", "1, 1") if ab == "e4m3" else ("k16", "1, 1, 0, 0")
    return (
        f"__device__ __forceinline__ void wgmma_tile(float (&d)[{n}], u64 da, u64 db) {{\n"
        f'  asm volatile("{{\\n .reg .pred p;\\n setp.ne.b32 p, %{n + 2}, 0;\\n"\n'
        f'    "wgmma.mma_async.sync.aligned.m64n{bn}{shape}.f32.{ab}.{ab} {{{regs}}}, %{n}, %{n + 1}, p, {flags};\\n}}\\n"\n'
        f'    : {outs}\n'
        f'    : "l"(da), "l"(db), "r"(1));\n'
        "}\n"
    )


WS_HOPPER = WsHopper()
