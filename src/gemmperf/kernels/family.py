"""What a kernel family is: the rules one family owns, asked by legality, the sweep
space, the builder and the models instead of comparing family names.

A :class:`Family` holds its name, the architectures it runs on, its dtypes, whether it
runs on tensor cores, its tile and stage rules, its shared-memory and register formulas,
its thread count, its sweep spaces and its CUDA source. Each family is one subclass in
its own module (``hopper``, ``ampere``, ``simt``); ``families`` is the registry.
Standard library only (the GPU machine has no polars).
"""

from __future__ import annotations

import itertools
import re

from ..problem import DEFAULT_GROUP_M, RASTERS, KernelConfig
from .source import GROUP_M

# Deepest shared-memory ring any family accepts.
MAX_STAGES = 8
# A and B rows start every pad_k(K) elements: K rounded up to 8 elements (16 bytes of a
# 16-bit type; 16 elements of an 8-bit one), because TMA and cp.async need 16-byte
# aligned rows.
K_ALIGN_ELEMS = 8


def k_align(esize: float = 2) -> int:
    """Elements a row of A or B is rounded up to, for elements of ``esize`` bytes: 16
    bytes, and never fewer than K_ALIGN_ELEMS elements."""
    return max(K_ALIGN_ELEMS, int(-(-16 // esize)))


def pad_k(k, esize: float = 2):
    """Leading dimension (elements) of the A and B rows for reduction length ``k`` (an
    int or a numpy array) and elements of ``esize`` bytes."""
    align = k_align(esize)
    return (k + align - 1) // align * align


def pad_n(n: int) -> int:
    """Leading dimension (elements) of a 16-bit C padded like A and B: ``n`` rounded up
    to 8 elements, so every row starts on 16 bytes (TMA stores need it)."""
    return pad_k(n)


def work_units(config: KernelConfig, m: int, n: int) -> int:
    """Tiles of C, or with clusters, cluster-shaped groups of tiles."""
    units_m = -(-(-(-m // config.tile_m)) // config.cluster_m)
    units_n = -(-(-(-n // config.tile_n)) // config.cluster_n)
    return units_m * units_n


def compute_capability(arch: str) -> tuple[int, int]:
    """``sm_90a`` -> (9, 0); ``sm_100a`` -> (10, 0)."""
    digits = re.sub(r"\D", "", arch)
    return int(digits[:-1]), int(digits[-1])


class Family:
    """One kernel family. Subclasses set the class attributes and the formulas."""

    name: str = ""
    # Input dtypes the kernel compiles for; the first is the default.
    dtypes: tuple[str, ...] = ()
    # Whether the math runs on tensor cores (else FP32 FFMA on the CUDA cores).
    tensor_cores: bool = True
    # Tile sizes the kernel is written for (elements).
    tile_ms: tuple[int, ...] = ()
    tile_ns: tuple[int, ...] = ()
    tile_ks: tuple[int, ...] = ()
    # Ring depths the kernel accepts (shared memory and registers may allow fewer).
    min_stages: int = 2
    max_stages: int = MAX_STAGES
    # fp32 accumulators a math thread may hold in registers.
    max_accumulators: int = 128
    # Whether A and B reach the kernel as TMA descriptors (else as pointers + ld).
    tma_operands: bool = False
    # The architecture rule, in words, for reasons and errors.
    arch_rule: str = ""
    # CUDA files this family's source is rendered from (in gemmperf/kernels).
    source_files: tuple[str, ...] = ()
    # What the measurement presets and microbenchmarks (bench/) measure of this family:
    # the ring depth they use; the tiles (M, N, K) the microbenchmarks time; the
    # (tile_m, tile_n, stages, persistent) picks of the "small" preset; whether the
    # "medium" preset measures every legal tile of the family (else it is "small").
    bench_stages: int = 4
    microbench_tiles: tuple[tuple[int, int, int], ...] = ()
    small_picks: tuple[tuple[int, int, int, bool], ...] = ()
    medium_grid: bool = False
    # Thread-block cluster shapes (cluster_m, cluster_n), epilogues and consumer schedules
    # the kernel implements (problem.EPILOGUES, problem.SCHEDULES).
    cluster_shapes: tuple[tuple[int, int], ...] = ((1, 1),)
    epilogues: tuple[str, ...] = ("direct",)
    schedules: tuple[str, ...] = ("cooperative",)
    # Group sizes the grouped raster accepts (tile rows, or cluster rows, per group).
    group_ms: tuple[int, ...] = (DEFAULT_GROUP_M,)
    # K splits per tile the kernel implements (1: none), and whether it has stream-K.
    split_ks: tuple[int, ...] = (1,)
    stream_k: bool = False
    # Same for every family today; the models read them from here.
    group_m = GROUP_M  # default tile rows of one group of the grouped raster
    k_align_elems = K_ALIGN_ELEMS

    # ------------------------------------------------------------ architecture, dtypes

    def runs_on_arch(self, arch: str) -> bool:
        """Whether the kernel compiles and runs for ``arch`` (e.g. ``sm_90a``)."""
        raise NotImplementedError

    def runs_on(self, gpu) -> bool:
        return self.runs_on_arch(gpu.arch)

    def dtype_for(self, dtype: str) -> str:
        """The input dtype this family computes when ``dtype`` is requested: the
        tensor-core families take it as it is (the models also predict dtypes the
        kernels do not compile yet, such as fp8); simt is always fp32."""
        return dtype

    @property
    def default_dtype(self) -> str:
        return self.dtypes[0]

    def dtype_reason(self) -> str:
        *head, tail = self.dtypes
        return f"{self.name} takes {', '.join(head) + ' or ' if head else ''}{tail}"

    @staticmethod
    def pad_k(k: int) -> int:
        return pad_k(k)

    def shares_k(self, cfg: KernelConfig) -> bool:
        """Whether CTAs share a tile's K (split-K, stream-K) and reduce partial tiles."""
        return False

    def workspace_bytes(self, cfg: KernelConfig, m: int, n: int, ctas: int) -> int:
        """Bytes of global workspace a launch of ``ctas`` CTAs needs (0: none)."""
        return 0

    def counter_count(self, cfg: KernelConfig, m: int, n: int) -> int:
        """32-bit counters, zero between launches, a launch needs (0: none)."""
        return 0

    def c_ld(self, cfg: KernelConfig, n: int) -> int:
        """Leading dimension (elements) of C for ``n`` columns: ``n`` unless the family
        pads C's rows (ws-hopper)."""
        return n

    def writes_c_padding(self, cfg: KernelConfig) -> bool:
        """Whether the kernel's stores may reach into C's row padding (past column N, up
        to the 16-byte chunk holding column N - 1): TMA stores go out in whole 16-byte
        chunks."""
        return False

    # ------------------------------------------------------------ resources

    def threads(self, cfg: KernelConfig) -> int:
        """Threads of one CTA."""
        raise NotImplementedError

    def dynamic_smem(self, cfg: KernelConfig) -> int:
        """Bytes of dynamic shared memory the launch asks for."""
        raise NotImplementedError

    def smem_bytes(self, cfg: KernelConfig) -> int:
        """Shared memory one CTA uses (dynamic + static), in bytes."""
        return self.dynamic_smem(cfg)

    def accumulators_per_thread(self, cfg: KernelConfig) -> int:
        """fp32 accumulators one math thread holds."""
        raise NotImplementedError

    def register_estimate(self, cfg: KernelConfig) -> int:
        """Registers per thread of the math warps (accumulators plus working registers)."""
        raise NotImplementedError

    def register_limit(self, cfg: KernelConfig, gpu) -> int:
        """Registers a math thread may use: one CTA per SM, allocation in units of 8."""
        per_thread = gpu.regs_per_sm // self.threads(cfg)
        return min(gpu.regs_per_thread, per_thread // 8 * 8)

    # ------------------------------------------------------------ legality

    def tile_reason(self) -> str:
        ks = self.tile_ks
        k = f"K = {ks[0]}" if len(ks) == 1 else f"K in {{{', '.join(map(str, ks))}}}"
        return f"{self.name} tiles: M and N in {{{', '.join(map(str, self.tile_ms))}}}, {k}"

    def check_shape(self, cfg: KernelConfig) -> str | None:
        """The family's own rules on tiles, accumulators and stages: None, or the reason."""
        if not self.tile_ok(cfg):
            return self.tile_reason()
        if self.accumulators_per_thread(cfg) > self.max_accumulators:
            return f"accumulators exceed {self.max_accumulators} registers a thread"
        if cfg.stages < self.min_stages:
            return f"{self.name} needs at least {self.min_stages} stages"
        return None

    def check_dimensions(self, cfg: KernelConfig, gpu) -> str | None:
        """The configuration dimensions beside the tile: cluster shape, epilogue,
        schedule, raster group and persistent grid. None, or the reason."""
        if (cfg.cluster_m, cfg.cluster_n) not in self.cluster_shapes:
            shapes = ", ".join(f"{m}x{n}" for m, n in self.cluster_shapes)
            return f"{self.name} clusters (cluster_m x cluster_n): {shapes}"
        if cfg.epilogue not in self.epilogues:
            return f"{self.name} epilogues: {', '.join(self.epilogues)}"
        if cfg.schedule not in self.schedules:
            return f"{self.name} schedules: {', '.join(self.schedules)}"
        if cfg.raster == "grouped" and cfg.group_m not in self.group_ms:
            return f"group_m (grouped raster) in {{{', '.join(map(str, self.group_ms))}}}"
        if cfg.raster != "grouped" and cfg.group_m != DEFAULT_GROUP_M:
            return f"group_m applies to the grouped raster only (leave it at {DEFAULT_GROUP_M})"
        reason = self.check_k_decomposition(cfg)
        if reason:
            return reason
        if cfg.persistent_ctas:
            if not cfg.persistent:
                return "persistent_ctas applies to persistent kernels only (leave it at 0)"
            if cfg.persistent_ctas > gpu.sms:
                return f"persistent_ctas {cfg.persistent_ctas} > {gpu.sms} SMs"
            if cfg.persistent_ctas % cfg.cluster_size:
                return f"persistent_ctas {cfg.persistent_ctas} is not a multiple of the cluster size {cfg.cluster_size}"
        return None

    def check_k_decomposition(self, cfg: KernelConfig) -> str | None:
        """Split-K and stream-K: what the family implements, and with what. They share K
        among CTAs, which reduce their partial tiles in the cooperative schedule's
        epilogue; stream-K's CTAs walk the iteration space, so they are persistent; the
        raster keeps its default group. None, or the reason."""
        if cfg.split_k not in self.split_ks:
            return f"{self.name} split_k in {{{', '.join(map(str, self.split_ks))}}}"
        if cfg.stream_k and not self.stream_k:
            return f"{self.name} has no stream-K"
        if cfg.split_k == 1 and not cfg.stream_k:
            return None
        if cfg.stream_k and cfg.split_k > 1:
            return "split-K and stream-K are two ways to share K: choose one"
        if cfg.schedule != "cooperative":
            return "split-K and stream-K run the cooperative schedule"
        if cfg.stream_k and not cfg.persistent:
            return "stream-K needs a persistent kernel"
        if cfg.group_m != DEFAULT_GROUP_M:
            return f"split-K and stream-K keep the raster group at {DEFAULT_GROUP_M}"
        return None

    def check_legal(self, cfg: KernelConfig, gpu) -> str | None:
        """None if ``cfg`` is legal on ``gpu``, else the reason it is not."""
        reason = self.check_dimensions(cfg, gpu)
        if reason:
            return reason
        if not self.runs_on(gpu):
            return f"{self.name} needs {self.arch_rule}"
        if cfg.dtype not in self.dtypes:
            return self.dtype_reason()
        reason = self.check_shape(cfg)
        if reason:
            return reason
        if cfg.stages > MAX_STAGES:
            return f"more than {MAX_STAGES} stages"
        if self.smem_bytes(cfg) > gpu.smem_per_block:
            return f"shared memory {self.smem_bytes(cfg)} B > {gpu.smem_per_block} B"
        if self.register_estimate(cfg) > self.register_limit(cfg, gpu):
            return f"register estimate {self.register_estimate(cfg)} > {self.register_limit(cfg, gpu)}"
        return None

    def tile_ok(self, cfg: KernelConfig) -> bool:
        return cfg.tile_m in self.tile_ms and cfg.tile_n in self.tile_ns and cfg.tile_k in self.tile_ks

    # ------------------------------------------------------------ sweep spaces

    def tiles(self, dtype: str | None = None) -> list[tuple[int, int, int]]:
        """(tile_m, tile_n, tile_k) the kernel is written for, for ``dtype`` (default:
        the family's default dtype)."""
        return list(itertools.product(self.tile_ms, self.tile_ns, self.tile_ks))

    def stage_range(self) -> tuple[int, ...]:
        return tuple(range(self.min_stages, self.max_stages + 1))

    def legal_configs(self, gpu, dtype: str | None = None, modes=("full",)) -> list[KernelConfig]:
        """Every legal configuration on ``gpu``: all tiles, stages, clusters, epilogues,
        schedules, persistence, rasters (the grouped raster with each group size), K
        splits and stream-K; the persistent grid at its default (one CTA per SM)."""
        dtype = dtype or self.default_dtype
        k_ways = [(s, False) for s in self.split_ks] + ([(1, True)] if self.stream_k else [])
        out = []
        for (tm, tn, tk), s, (cm, cn), epi, sched, persistent, raster, mode, (split, streamk) in itertools.product(
            self.tiles(dtype), self.stage_range(), self.cluster_shapes, self.epilogues, self.schedules,
            (False, True), RASTERS, modes, k_ways
        ):
            for group in self.group_ms if raster == "grouped" else (DEFAULT_GROUP_M,):
                cfg = KernelConfig(self.name, dtype, tm, tn, tk, s, cm, cn, persistent, raster, mode,
                                   epilogue=epi, schedule=sched, group_m=group, split_k=split, stream_k=streamk)
                if self.check_legal(cfg, gpu) is None:
                    out.append(cfg)
        return out

    def in_default_sweep(self, cfg: KernelConfig, gpu) -> bool:
        """Whether a legal ``cfg`` belongs to the reduced grid the project measures."""
        raise NotImplementedError

    def shared_k_configs(self, gpu, dtype: str | None = None, modes=("full",)) -> list[KernelConfig]:
        """The split-K and stream-K configurations the presets measure on shapes with
        fewer tiles than SMs (bench.collect picks among them per shape); none for a
        family without them."""
        return []

    def default_sweep(self, gpu, dtype: str | None = None, modes=("full",)) -> list[KernelConfig]:
        """The configurations the project measures by default (see ``in_default_sweep``):
        the grouped raster at its default group, the persistent grid at one CTA per SM."""
        return [c for c in self.legal_configs(gpu, dtype, modes)
                if c.group_m == DEFAULT_GROUP_M and not c.persistent_ctas and self.in_default_sweep(c, gpu)]

    def max_legal_stages(self, cfg: KernelConfig, gpu) -> int:
        """The deepest legal ring for ``cfg``'s tile on ``gpu`` (min_stages - 1 if none)."""
        best = self.min_stages - 1
        for s in range(self.min_stages, MAX_STAGES + 1):
            if self.check_legal(cfg.replace(stages=s), gpu) is None:
                best = s
        return best

    # ------------------------------------------------------------ source

    def render(self, cfg: KernelConfig) -> str:
        """CUDA C++ source for ``cfg``: ``#define`` integers, then the family's files."""
        raise NotImplementedError

    def __repr__(self) -> str:
        return f"<Family {self.name}>"
