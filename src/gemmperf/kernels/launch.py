"""Launching compiled kernels through the CUDA driver (cuda.bindings).

Buffer contract, the same for every family:
- A: M x K, row-major, leading dimension ``lda = pad_k(K)`` elements;
- B: N x K, row-major (K-major, i.e. a column-major K x N matrix), ``ldb = pad_k(K)``;
- C: M x N, row-major, leading dimension N.
``pad_k`` (``kernels.family``) rounds K up to a multiple of 8 elements so that every row starts on a
16-byte boundary (TMA and cp.async need it); what lies between K and the leading
dimension is never read. bf16/fp16 for ws-hopper and ws-ampere (C has the input's
type), fp32 for simt.

``cuda.core`` compiles; the launch goes through ``cuLaunchKernel`` because the
ws-hopper kernels take CUtensorMap parameters by value, which ``cuda.core.launch``
refuses, and one launch path for every family keeps timings comparable.
"""

from __future__ import annotations

import ctypes
import statistics

import numpy as np

from ..problem import DTYPE_BYTES, KernelConfig
from .builder import compile_source
from .driver import check, compute_arch
from .families import family_of
from .family import pad_k
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
    _, f16, f32 = _util_functions(arch)
    grid = min(65535, max(1, (rows * ld + 255) // 256))
    if dtype == "fp32":
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

    dt = (
        cu.CUtensorMapDataType.CU_TENSOR_MAP_DATA_TYPE_FLOAT16
        if dtype == "fp16"
        else cu.CUtensorMapDataType.CU_TENSOR_MAP_DATA_TYPE_BFLOAT16
    )
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


def grid_size(config: KernelConfig, m: int, n: int, sms: int) -> int:
    tiles = -(-m // config.tile_m) * -(-n // config.tile_n)
    if config.persistent:
        return max(1, min(tiles, sms))
    return max(1, tiles)


def kernel_args(kernel, a_ptr: int, b_ptr: int, c_ptr: int, m: int, n: int, k: int,
                lda: int | None = None, ldb: int | None = None) -> list:
    cfg = kernel.config
    lda = pad_k(k) if lda is None else lda
    ldb = pad_k(k) if ldb is None else ldb
    if family_of(cfg).tma_operands:
        tma = tensor_map(a_ptr, m, k, lda, cfg.tile_m, cfg.tile_k, cfg.dtype)
        tmb = tensor_map(b_ptr, n, k, ldb, cfg.tile_n, cfg.tile_k, cfg.dtype)
        return [tma, tmb, ctypes.c_uint64(c_ptr), ctypes.c_int(m), ctypes.c_int(n), ctypes.c_int(k)]
    return [ctypes.c_uint64(a_ptr), ctypes.c_uint64(b_ptr), ctypes.c_uint64(c_ptr), ctypes.c_int(m),
            ctypes.c_int(n), ctypes.c_int(k), ctypes.c_int(lda), ctypes.c_int(ldb)]


def launch(kernel, a_ptr: int, b_ptr: int, c_ptr: int, m: int, n: int, k: int, stream=0, *,
           sms: int | None = None, lda: int | None = None, ldb: int | None = None) -> None:
    """One launch of ``kernel`` on device pointers laid out as the module docstring says."""
    if min(m, n, k) < 1:
        raise ValueError("M, N and K must be >= 1")
    sms = num_sms() if sms is None else sms
    args = kernel_args(kernel, a_ptr, b_ptr, c_ptr, m, n, k, lda, ldb)
    grid = grid_size(kernel.config, m, n, sms)
    launch_raw(kernel.function(), grid, kernel.threads, kernel.dynamic_smem, stream, args)


class GemmRunner:
    """Owns A, B and C (plus a poisoned guard after C) for one kernel and one shape."""

    def __init__(self, kernel, m: int, n: int, k: int, *, device: int = 0, stream=0):
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
        self.lda = self.ldb = pad_k(k)
        self.sms = num_sms(device)
        self.arch = kernel.arch
        self.A = DeviceBuffer(m * self.lda * self.esize)
        self.B = DeviceBuffer(n * self.ldb * self.esize)
        self.C = DeviceBuffer((m * n + GUARD_ELEMS) * self.osize)
        self._args = kernel_args(kernel, self.A.ptr, self.B.ptr, self.C.ptr, m, n, k, self.lda, self.ldb)
        self._grid = grid_size(cfg, m, n, self.sms)
        self._func = kernel.function()

    # -- data
    def fill(self, seed: int) -> None:
        fill_random(self.A, self.m, self.k, self.lda, self.in_dtype, seed, self.arch, self.stream)
        fill_random(self.B, self.n, self.k, self.ldb, self.in_dtype, seed ^ 0x5BD1E995, self.arch, self.stream)

    def poison(self) -> None:
        from cuda.bindings import driver as cu

        count = self.m * self.n + GUARD_ELEMS
        if self.osize == 2:
            check(cu.cuMemsetD16(self.C.ptr, POISON16, count))
        else:
            check(cu.cuMemsetD32(self.C.ptr, POISON32, count))

    # -- running
    def launch(self) -> None:
        launch_raw(self._func, self._grid, self.kernel.threads, self.kernel.dynamic_smem, self.stream, self._args)

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

    def c_raw(self, row0: int = 0, nrows: int | None = None) -> np.ndarray:
        """Raw bit patterns of C rows (uint16 or uint32)."""
        nrows = self.m - row0 if nrows is None else nrows
        raw = self.C.to_host(row0 * self.n * self.osize, nrows * self.n * self.osize)
        return raw.view(np.uint16 if self.osize == 2 else np.uint32).reshape(nrows, self.n)

    def guard_raw(self) -> np.ndarray:
        raw = self.C.to_host(self.m * self.n * self.osize, GUARD_ELEMS * self.osize)
        return raw.view(np.uint16 if self.osize == 2 else np.uint32)

    def close(self) -> None:
        for b in (self.A, self.B, self.C):
            b.free()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def decode(raw: np.ndarray, dtype: str) -> np.ndarray:
    """Raw bytes or bit patterns -> float64."""
    if dtype == "bf16":
        bits = np.ascontiguousarray(raw).view(np.uint16).astype(np.uint32) << 16
        return bits.view(np.float32).astype(np.float64)
    if dtype == "fp16":
        return np.ascontiguousarray(raw).view(np.float16).astype(np.float64)
    return np.ascontiguousarray(raw).view(np.float32).astype(np.float64)
