"""Launching compiled kernels through the CUDA driver (cuda.bindings).

Buffer contract, the same for every family:
- A: M x K, row-major, leading dimension ``lda = pad_k(K)`` elements;
- B: N x K, row-major (K-major, i.e. a column-major K x N matrix), ``ldb = pad_k(K)``;
- C: M x N, row-major, leading dimension ``ldc = Family.c_ld(cfg, N)``: N, or for
  ws-hopper ``pad_n(N)`` (N rounded up to 8 elements, as TMA stores need); ws-hopper's
  direct epilogue also takes ``ldc = N`` (a C whose rows cannot be padded).
``pad_k`` (``kernels.family``) rounds K up to a multiple of 8 elements so that every row starts on a
16-byte boundary (TMA and cp.async need it); what lies between K (or N) and the leading
dimension is never read nor written. bf16/fp16 for ws-hopper and ws-ampere (C has the
input's type), fp32 for simt; fp8 (e4m3) for ws-hopper, whose rows pad to 16 elements,
with bf16 C and a per-tensor scale of A and of B (``GemmRunner.scales``).
ws-hopper's split-K and stream-K launches also take an fp32 workspace and 32-bit
counters that are zero between launches (``Workspace``).

``cuda.core`` compiles; the launch goes through ``cuLaunchKernelEx`` because the
ws-hopper kernels take CUtensorMap parameters by value, which ``cuda.core.launch``
refuses, and need a cluster shape when they run in clusters; one launch path for every
family keeps timings comparable.
"""

from __future__ import annotations

import ctypes
import statistics
from dataclasses import dataclass

import numpy as np

from ..problem import DTYPE_BYTES, KernelConfig
from .builder import compile_source
from .driver import CudaError, check, compute_arch
from .families import family_of
from .family import pad_k, work_units
from .source import read

POISON16 = 0x7FFF  # NaN in bf16 and in fp16
POISON32 = 0x7FFFFFFF  # NaN in fp32
GUARD_ELEMS = 256  # poisoned elements after C, checked for out-of-bounds writes


_CONTEXT = {}


def ensure_context(device: int = 0):
    """Make the primary context of ``device`` current (through cuda.core)."""
    if device not in _CONTEXT:
        from cuda.core import Device

        dev = Device(device)
        dev.set_current()
        _CONTEXT[device] = dev
    else:
        _CONTEXT[device].set_current()
    return _CONTEXT[device]


def num_sms(device: int = 0) -> int:
    from cuda.bindings import driver as cu

    ensure_context(device)
    dev = check(cu.cuDeviceGet(device))
    return int(check(cu.cuDeviceGetAttribute(cu.CUdevice_attribute.CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev)))


def device_arch(device: int = 0) -> str:
    ensure_context(device)
    return compute_arch(device)


class DeviceBuffer:
    def __init__(self, nbytes: int):
        from cuda.bindings import driver as cu

        self.nbytes = max(int(nbytes), 16)
        self.ptr = int(check(cu.cuMemAlloc(self.nbytes)))

    def free(self):
        if self.ptr:
            from cuda.bindings import driver as cu

            check(cu.cuMemFree(self.ptr))
            self.ptr = 0

    def to_host(self, offset: int, nbytes: int) -> np.ndarray:
        from cuda.bindings import driver as cu

        out = np.empty(nbytes, dtype=np.uint8)
        if nbytes:
            check(cu.cuMemcpyDtoH(out.ctypes.data, self.ptr + offset, nbytes))
        return out

    def from_host(self, arr: np.ndarray, offset: int = 0) -> None:
        from cuda.bindings import driver as cu

        arr = np.ascontiguousarray(arr)
        check(cu.cuMemcpyHtoD(self.ptr + offset, arr.ctypes.data, arr.nbytes))


# ------------------------------------------------------------- device-side fill (fill.cu)


_UTIL: dict = {}


def _util_functions(arch: str):
    if arch not in _UTIL:
        from cuda.bindings import driver as cu

        cubin = compile_source(read("fill.cu"), arch, "gemmperf_util")
        mod = check(cu.cuModuleLoadData(cubin))
        _UTIL[arch] = (
            mod,
            check(cu.cuModuleGetFunction(mod, b"fill16")),
            check(cu.cuModuleGetFunction(mod, b"fill32")),
            check(cu.cuModuleGetFunction(mod, b"fill8")),
        )
    return _UTIL[arch]


def _params(values: list) -> tuple:
    """ctypes objects for kernel arguments and the void* array pointing at them."""
    objs = []
    for v in values:
        if isinstance(v, ctypes.Array) or isinstance(v, ctypes._SimpleCData):
            objs.append(v)
        else:
            raise TypeError(f"kernel argument must be a ctypes value, got {v!r}")
    arr = (ctypes.c_void_p * len(objs))(*[ctypes.addressof(o) for o in objs])
    return objs, arr


def launch_raw(func, grid, block, smem, stream, values) -> None:
    from cuda.bindings import driver as cu

    objs, arr = _params(values)
    check(cu.cuLaunchKernel(func, grid, 1, 1, block, 1, 1, smem, stream, ctypes.addressof(arr), 0))
    del objs


def fill_random(buf: DeviceBuffer, rows: int, cols: int, ld: int, dtype: str, seed: int, arch: str, stream=0):
    _, f16, f32, f8 = _util_functions(arch)
    grid = min(65535, max(1, (rows * ld + 255) // 256))
    if dtype == "fp8":
        vals = [ctypes.c_uint64(buf.ptr), ctypes.c_longlong(rows), ctypes.c_int(cols), ctypes.c_int(ld),
                ctypes.c_uint32(seed & 0xFFFFFFFF)]
        launch_raw(f8, grid, 256, 0, stream, vals)
    elif dtype == "fp32":
        vals = [ctypes.c_uint64(buf.ptr), ctypes.c_longlong(rows), ctypes.c_int(cols), ctypes.c_int(ld),
                ctypes.c_uint32(seed & 0xFFFFFFFF)]
        launch_raw(f32, grid, 256, 0, stream, vals)
    else:
        vals = [ctypes.c_uint64(buf.ptr), ctypes.c_longlong(rows), ctypes.c_int(cols), ctypes.c_int(ld),
                ctypes.c_uint32(seed & 0xFFFFFFFF), ctypes.c_int(int(dtype == "fp16"))]
        launch_raw(f16, grid, 256, 0, stream, vals)


# ------------------------------------------------------------------ tensor maps


def tensor_map(ptr: int, rows: int, cols: int, ld: int, box_rows: int, box_cols: int, dtype: str):
    """A 2-D TMA descriptor for a row-major ``rows x cols`` matrix with 128-byte swizzle."""
    from cuda.bindings import driver as cu

    types = cu.CUtensorMapDataType
    dt = {"fp16": types.CU_TENSOR_MAP_DATA_TYPE_FLOAT16, "bf16": types.CU_TENSOR_MAP_DATA_TYPE_BFLOAT16,
          "fp8": types.CU_TENSOR_MAP_DATA_TYPE_UINT8}[dtype]
    esize = int(DTYPE_BYTES[dtype])
    tmap = check(
        cu.cuTensorMapEncodeTiled(
            dt,
            2,
            ptr,
            [cu.cuuint64_t(cols), cu.cuuint64_t(rows)],
            [cu.cuuint64_t(ld * esize)],
            [cu.cuuint32_t(box_cols), cu.cuuint32_t(box_rows)],
            [cu.cuuint32_t(1), cu.cuuint32_t(1)],
            cu.CUtensorMapInterleave.CU_TENSOR_MAP_INTERLEAVE_NONE,
            cu.CUtensorMapSwizzle.CU_TENSOR_MAP_SWIZZLE_128B,
            cu.CUtensorMapL2promotion.CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
            cu.CUtensorMapFloatOOBfill.CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE,
        )
    )
    blob = (ctypes.c_uint64 * 16)()
    ctypes.memmove(blob, int(tmap.getPtr()), 128)
    return blob


# ------------------------------------------------------------------ launching


def work_items(config: KernelConfig, m: int, n: int, k: int) -> int:
    """What the launch's CTAs (clusters) share out: units times the K splits, or with
    stream-K the (unit, k-block) iterations."""
    units = work_units(config, m, n)
    if config.stream_k:
        return units * -(-k // config.tile_k)
    return units * config.split_k


def grid_size(config: KernelConfig, m: int, n: int, sms: int, max_clusters: int | None = None,
              k: int | None = None) -> int:
    """CTAs of the launch: one per work item (a tile, or a cluster of tiles times the
    cluster size; times the K splits); persistent, at most one per SM
    (``persistent_ctas`` if set), with clusters at most ``max_clusters`` clusters, the
    number that fit on the GPU at once, and never more than there are items
    (stream-K's items are its iterations, so ``k`` is needed)."""
    if config.stream_k and k is None:
        raise ValueError("stream-K's grid depends on K")
    items = work_items(config, m, n, k if k is not None else config.tile_k)
    size = config.cluster_size
    if not config.persistent:
        return max(1, items) * size
    limit = (config.persistent_ctas or sms) // size
    if max_clusters is not None:
        limit = min(limit, max_clusters)
    return max(1, min(items, limit)) * size


def max_active_clusters(kernel) -> int | None:
    """Clusters of ``kernel``'s shape that fit on the device at once (None: no clusters).
    SMs come in GPCs of uneven size, so this can be fewer than SMs / cluster size."""
    size = kernel.config.cluster_size
    if size == 1:
        return None
    if kernel._max_clusters is None:
        from cuda.bindings import driver as cu

        cfg = _launch_config(size * 64, kernel.threads, kernel.dynamic_smem, 0, size)
        kernel._max_clusters = int(check(cu.cuOccupancyMaxActiveClusters(kernel.function(), cfg)))
        if kernel._max_clusters < 1:
            raise CudaError(f"{kernel.config.key()}: no cluster of {size} CTAs fits on this GPU")
    return kernel._max_clusters


def check_ldc(cfg: KernelConfig, n: int, ldc: int) -> None:
    """C's leading dimension ``ldc`` holds ``n`` columns, and where the kernel stores
    through TMA its rows start on 16 bytes."""
    if ldc < n:
        raise ValueError(f"ldc {ldc} < N {n}")
    if cfg.epilogue == "tma" and (ldc * DTYPE_BYTES[cfg.out_dtype]) % 16:
        raise ValueError(f"the TMA epilogue needs C's rows padded to 16 bytes (ldc = {ldc}, N = {n})")


# Per-tensor scales of A and B an fp8 runner applies unless told otherwise: not powers of
# two, so a kernel that forgets one is caught by verification.
FP8_SCALES = (0.75, 1.25)


@dataclass
class Workspace:
    """What a split-K / stream-K launch needs beside A, B and C: an fp32 workspace for
    partial tiles and 32-bit arrival counters, zero between launches (each launch leaves
    them zero). Sized by the family for a launch of ``ctas`` CTAs."""

    ws: DeviceBuffer | None
    counters: DeviceBuffer | None

    @classmethod
    def for_launch(cls, kernel, m: int, n: int, ctas: int) -> Workspace:
        from cuda.bindings import driver as cu

        family, cfg = family_of(kernel.config), kernel.config
        nbytes = family.workspace_bytes(cfg, m, n, ctas)
        count = family.counter_count(cfg, m, n)
        if not nbytes and not count:
            return cls(None, None)
        ws, counters = DeviceBuffer(nbytes), DeviceBuffer(4 * count)
        check(cu.cuMemsetD32(counters.ptr, 0, counters.nbytes // 4))
        return cls(ws, counters)

    @property
    def pointers(self) -> tuple[int, int]:
        return (self.ws.ptr if self.ws else 0, self.counters.ptr if self.counters else 0)

    def free(self) -> None:
        for b in (self.ws, self.counters):
            if b is not None:
                b.free()


def kernel_args(kernel, a_ptr: int, b_ptr: int, c_ptr: int, m: int, n: int, k: int,
                lda: int | None = None, ldb: int | None = None, ldc: int | None = None,
                workspace: tuple[int, int] = (0, 0), scales: tuple[float, float] = (1.0, 1.0)) -> list:
    """The kernel's arguments. ``workspace``: the (workspace, counters) pointers a
    split-K / stream-K kernel needs (``Workspace``); ``scales``: fp8's per-tensor scales
    of A and B (read by fp8 kernels only)."""
    cfg = kernel.config
    family = family_of(cfg)
    esize = DTYPE_BYTES[cfg.dtype]
    lda = pad_k(k, esize) if lda is None else lda
    ldb = pad_k(k, esize) if ldb is None else ldb
    ldc = family.c_ld(cfg, n) if ldc is None else ldc
    if family.tma_operands:
        # each CTA of a cluster loads its slice of a shared operand tile
        a_box, b_box = kernel.boxes  # as the kernel was built (builder.build)
        tma = tensor_map(a_ptr, m, k, lda, a_box, cfg.tile_k, cfg.dtype)
        tmb = tensor_map(b_ptr, n, k, ldb, b_box, cfg.tile_k, cfg.dtype)
        if cfg.epilogue == "tma":
            check_ldc(cfg, n, ldc)
            tmc = tensor_map(c_ptr, m, n, ldc, 16, 64, cfg.out_dtype)  # one warp's box
        else:
            tmc = (ctypes.c_uint64 * 16)()  # not read by the direct epilogue
        if family.shares_k(cfg) and not all(workspace):
            raise ValueError(f"{cfg.key()} needs a workspace and counters (launch.Workspace)")
        return [tma, tmb, tmc, ctypes.c_uint64(c_ptr), ctypes.c_int(m), ctypes.c_int(n), ctypes.c_int(k),
                ctypes.c_int(ldc), ctypes.c_uint64(workspace[0]), ctypes.c_uint64(workspace[1]),
                ctypes.c_float(scales[0]), ctypes.c_float(scales[1])]
    if ldc != n:
        raise ValueError(f"{family.name} writes C with leading dimension N ({n}), not {ldc}")
    return [ctypes.c_uint64(a_ptr), ctypes.c_uint64(b_ptr), ctypes.c_uint64(c_ptr), ctypes.c_int(m),
            ctypes.c_int(n), ctypes.c_int(k), ctypes.c_int(lda), ctypes.c_int(ldb)]


def _launch_config(grid: int, block: int, smem: int, stream, cluster: int):
    from cuda.bindings import driver as cu

    cfg = cu.CUlaunchConfig()
    cfg.gridDimX, cfg.gridDimY, cfg.gridDimZ = grid, 1, 1
    cfg.blockDimX, cfg.blockDimY, cfg.blockDimZ = block, 1, 1
    cfg.sharedMemBytes = smem
    cfg.hStream = stream
    if cluster > 1:
        attr = cu.CUlaunchAttribute()
        attr.id = cu.CUlaunchAttributeID.CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION
        attr.value.clusterDim.x, attr.value.clusterDim.y, attr.value.clusterDim.z = cluster, 1, 1
        cfg.attrs = [attr]
        cfg.numAttrs = 1
    else:
        cfg.numAttrs = 0
    return cfg


@dataclass
class LaunchPlan:
    """One kernel launch, ready to issue on any stream: function, grid, block, dynamic
    shared memory, cluster size and the argument values."""

    func: object
    grid: int
    block: int
    smem: int
    cluster: int
    args: list

    def __post_init__(self):
        self._objs, self._arr = _params(self.args)
        self._configs: dict = {}  # stream -> CUlaunchConfig (a cluster launch's, built once)

    def __call__(self, stream=0) -> None:
        from cuda.bindings import driver as cu

        if self.cluster == 1:
            check(cu.cuLaunchKernel(self.func, self.grid, 1, 1, self.block, 1, 1, self.smem, stream,
                                    ctypes.addressof(self._arr), 0))
            return
        cfg = self._configs.get(stream)
        if cfg is None:
            cfg = self._configs[stream] = _launch_config(self.grid, self.block, self.smem, stream, self.cluster)
        check(cu.cuLaunchKernelEx(cfg, self.func, ctypes.addressof(self._arr), 0))


def launch_grid(kernel, m: int, n: int, k: int, sms: int) -> int:
    """CTAs of ``kernel``'s launch on this GPU (``grid_size`` with the clusters that fit)."""
    return grid_size(kernel.config, m, n, sms, max_active_clusters(kernel), k)


def launch_plan(kernel, a_ptr: int, b_ptr: int, c_ptr: int, m: int, n: int, k: int, *, sms: int,
                lda: int | None = None, ldb: int | None = None, ldc: int | None = None,
                workspace: tuple[int, int] = (0, 0), scales: tuple[float, float] = (1.0, 1.0)) -> LaunchPlan:
    """The launch of ``kernel`` on device pointers laid out as the module docstring says
    (``kernel_args`` says what ``workspace`` and ``scales`` are)."""
    if min(m, n, k) < 1:
        raise ValueError("M, N and K must be >= 1")
    args = kernel_args(kernel, a_ptr, b_ptr, c_ptr, m, n, k, lda, ldb, ldc, workspace, scales)
    grid = launch_grid(kernel, m, n, k, sms)
    return LaunchPlan(kernel.function(), grid, kernel.threads, kernel.dynamic_smem, kernel.config.cluster_size, args)


def launch(kernel, a_ptr: int, b_ptr: int, c_ptr: int, m: int, n: int, k: int, stream=0, *,
           sms: int | None = None, lda: int | None = None, ldb: int | None = None, ldc: int | None = None,
           workspace: tuple[int, int] = (0, 0), scales: tuple[float, float] = (1.0, 1.0)) -> None:
    """One launch of ``kernel`` on device pointers laid out as the module docstring says."""
    sms = num_sms() if sms is None else sms
    launch_plan(kernel, a_ptr, b_ptr, c_ptr, m, n, k, sms=sms, lda=lda, ldb=ldb, ldc=ldc, workspace=workspace,
                scales=scales)(stream)


class GemmRunner:
    """Owns A, B and C (plus a poisoned guard after C), and a split-K / stream-K
    kernel's workspace, for one kernel and one shape. ``ldc`` overrides C's leading
    dimension (default ``Family.c_ld``); ``scales`` are fp8's per-tensor scales of A and B
    (default FP8_SCALES)."""

    def __init__(self, kernel, m: int, n: int, k: int, *, device: int = 0, stream=0, ldc: int | None = None,
                 scales: tuple[float, float] | None = None):
        if min(m, n, k) < 1:
            raise ValueError("M, N and K must be >= 1")
        ensure_context(device)
        self.kernel, self.m, self.n, self.k = kernel, m, n, k
        self.stream = stream
        cfg = kernel.config
        self.in_dtype = cfg.dtype
        self.out_dtype = cfg.out_dtype
        self.esize = int(DTYPE_BYTES[self.in_dtype])
        self.osize = int(DTYPE_BYTES[self.out_dtype])
        self.lda = self.ldb = pad_k(k, self.esize)
        self.ldc = family_of(cfg).c_ld(cfg, n) if ldc is None else ldc
        check_ldc(cfg, n, self.ldc)
        self.scales = (scales or FP8_SCALES) if self.in_dtype == "fp8" else (1.0, 1.0)
        self.sms = num_sms(device)
        self.arch = kernel.arch
        self.A = DeviceBuffer(m * self.lda * self.esize)
        self.B = DeviceBuffer(n * self.ldb * self.esize)
        self.C = DeviceBuffer((m * self.ldc + GUARD_ELEMS) * self.osize)
        self.workspace = Workspace.for_launch(kernel, m, n, launch_grid(kernel, m, n, k, self.sms))
        self.plan = self.plan_for(self.A.ptr, self.B.ptr)

    def plan_for(self, a_ptr: int, b_ptr: int) -> LaunchPlan:
        """A launch of this runner's kernel on other A and B (same shape and layout) into
        this runner's C, with its workspace and scales."""
        return launch_plan(self.kernel, a_ptr, b_ptr, self.C.ptr, self.m, self.n, self.k, sms=self.sms,
                           lda=self.lda, ldb=self.ldb, ldc=self.ldc, workspace=self.workspace.pointers,
                           scales=self.scales)

    # -- data
    def fill(self, seed: int) -> None:
        fill_random(self.A, self.m, self.k, self.lda, self.in_dtype, seed, self.arch, self.stream)
        fill_random(self.B, self.n, self.k, self.ldb, self.in_dtype, seed ^ 0x5BD1E995, self.arch, self.stream)

    def poison(self) -> None:
        from cuda.bindings import driver as cu

        count = self.m * self.ldc + GUARD_ELEMS
        if self.osize == 2:
            check(cu.cuMemsetD16(self.C.ptr, POISON16, count))
        else:
            check(cu.cuMemsetD32(self.C.ptr, POISON32, count))

    # -- running
    def launch(self) -> None:
        self.plan(self.stream)

    def synchronize(self) -> None:
        from cuda.bindings import driver as cu

        check(cu.cuCtxSynchronize())

    def time(self, reps: int = 20, warmup: int = 3) -> list[float]:
        """Milliseconds of each of ``reps`` launches, timed with CUDA events."""
        from cuda.bindings import driver as cu

        for _ in range(warmup):
            self.launch()
        flags = cu.CUevent_flags.CU_EVENT_DEFAULT
        events = [(check(cu.cuEventCreate(flags)), check(cu.cuEventCreate(flags))) for _ in range(reps)]
        for start, end in events:
            check(cu.cuEventRecord(start, self.stream))
            self.launch()
            check(cu.cuEventRecord(end, self.stream))
        check(cu.cuEventSynchronize(events[-1][1]))
        times = [float(check(cu.cuEventElapsedTime(s, e))) for s, e in events]
        for s, e in events:
            check(cu.cuEventDestroy(s))
            check(cu.cuEventDestroy(e))
        return times

    def median_ms(self, reps: int = 20, warmup: int = 3) -> float:
        return statistics.median(self.time(reps, warmup))

    # -- reading back
    def rows(self, which: str, idx) -> np.ndarray:
        """Rows of A or B (float64, only the first K columns)."""
        buf, ld = (self.A, self.lda) if which == "A" else (self.B, self.ldb)
        out = np.empty((len(idx), self.k), dtype=np.float64)
        for j, r in enumerate(idx):
            raw = buf.to_host(int(r) * ld * self.esize, self.k * self.esize)
            out[j] = decode(raw, self.in_dtype)
        return out

    def c_raw(self, row0: int = 0, nrows: int | None = None, padded: bool = False) -> np.ndarray:
        """Raw bit patterns of C rows (uint16 or uint32): the N columns, or with
        ``padded`` the whole leading dimension (the columns past N must stay untouched)."""
        nrows = self.m - row0 if nrows is None else nrows
        raw = self.C.to_host(row0 * self.ldc * self.osize, nrows * self.ldc * self.osize)
        rows = raw.view(np.uint16 if self.osize == 2 else np.uint32).reshape(nrows, self.ldc)
        return rows if padded else rows[:, : self.n]

    def guard_raw(self) -> np.ndarray:
        raw = self.C.to_host(self.m * self.ldc * self.osize, GUARD_ELEMS * self.osize)
        return raw.view(np.uint16 if self.osize == 2 else np.uint32)

    def close(self) -> None:
        for b in (self.A, self.B, self.C):
            b.free()
        self.workspace.free()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def _e4m3_table() -> np.ndarray:
    """float64 value of each of the 256 e4m3 codes (NaN at 0x7F and 0xFF): sign, 4
    exponent bits (bias 7, subnormal at 0), 3 mantissa bits, no infinities."""
    code = np.arange(256)
    exp, man = (code >> 3) & 15, (code & 7).astype(np.float64)
    mag = np.where(exp == 0, man / 8 * 2.0**-6, (1 + man / 8) * 2.0 ** (exp - 7.0))
    mag[(code & 0x7F) == 0x7F] = np.nan
    return np.where(code & 0x80, -mag, mag)


E4M3 = _e4m3_table()


def decode(raw: np.ndarray, dtype: str) -> np.ndarray:
    """Raw bytes or bit patterns -> float64."""
    if dtype == "fp8":
        return E4M3[np.ascontiguousarray(raw).view(np.uint8)]
    if dtype == "bf16":
        bits = np.ascontiguousarray(raw).view(np.uint16).astype(np.uint32) << 16
        return bits.view(np.float32).astype(np.float64)
    if dtype == "fp16":
        return np.ascontiguousarray(raw).view(np.float16).astype(np.float64)
    return np.ascontiguousarray(raw).view(np.float32).astype(np.float64)
