"""nvMatmulHeuristics (NVIDIA's ``nvidia-matmul-heuristics``) beside gemmperf's models.

An optional extra (``pip install -e ".[nvmmh]"``), imported lazily: without it every
function here answers ``Unavailable(reason)``, a typed value, never an exception. The
package's Python wrapper is not used for estimates (its ``estimateRuntime`` calls a
method its base class lacks, and its silicon-metric call passes a target where the C
function takes a backend): the adapter loads the shared library the wheel ships and calls
its C API through ctypes, with the structures of ``nvMatmulHeuristics.h`` (library 0.1;
another version answers Unavailable rather than guess at its layout).

API (``rows``: a polars frame with the measurement table's configuration columns,
``tables.KEY_COLUMNS``; dimensions a table lacks read at their defaults;
``gpu``: a ``hardware.GPU`` or its slug):

- ``unavailable(gpu=None) -> Unavailable | None``: why the library cannot answer here
  (package absent, library not loadable, GPU it has no profile of), or None.
- ``estimate_seconds(rows, gpu) -> np.ndarray | Unavailable``: the library's runtime
  estimate of each row's configuration (``nvMatmulHeuristicsEstimateRuntime``), in
  seconds; NaN where it cannot say (see below).
- ``estimate_table(rows, gpu) -> pl.DataFrame | Unavailable``: ``rows`` plus
  ``nvmmh_us`` (null where it cannot say), ``nvmmh_why`` (why not, else null) and
  ``nvmmh_rank`` (1 = its fastest among the rows of the same m, n, k, dtype and family;
  equal estimates share a rank).
- ``picks(rows, gpu) -> pl.DataFrame | Unavailable``: per (m, n, k, dtype, family), the
  row it ranks first, plus ``nvmmh_us``, ``nvmmh_ranked`` (rows it estimated) and
  ``nvmmh_tied`` (rows sharing the best estimate; the pick among them is the first in
  ``tables.TILING_COLUMNS`` order). Pass valid rows (``tables.valid_rows``) to pick among
  what was measured.
- ``top_configs(shape, gpu, family, count) -> list[dict] | Unavailable``: the library's
  own choice over its whole space (``nvMatmulHeuristicsGetGemmConfig`` ranked by its
  performance model), with its estimate; ``optimize.tilings`` shows the first one.

The GPU is always passed explicitly: a hardware descriptor set to the predefined GPU of
the slug (``GPUS``: H100 SXM, H200 SXM, A100 SXM 80GB, RTX A6000, B200), never NULL (the
library would probe the local device, or fall back to defaults without one). A slug it
has no profile of answers Unavailable.

How a row maps onto the library's problem and kernel configuration:

- problem: M, N, K, batch 1, layout ``NT_ROW_MAJOR`` (row-major A of M x K; B of N x K,
  i.e. "B transposed", K-major; row-major C), the layout of every gemmperf kernel;
- precision: bf16 -> ``TST`` (bf16 in and out, fp32 compute), fp16 -> ``HSH``, fp8 ->
  ``QQTST`` (e4m3 A and B, bf16 C and D, fp32 compute: the ws-hopper fp8 kernel writes
  bf16);
- target: ws-hopper -> CUTLASS3 (TMA + wgmma, warp-specialized, clusters); ws-ampere ->
  CUTLASS (2.x multistage: cp.async + mma.sync);
- CTA tile = (tile_m, tile_n, tile_k); load stages = stages; split-K = split_k; cluster =
  (cluster_m, cluster_n); raster row -> CTA order 0 (tiles along N first), column -> 1,
  grouped -> order 0 with swizzle factor group_m (Triton's GROUP_M ordering, which is
  gemmperf's grouped raster); row and column have swizzle 1;
- warp tile: ws-hopper one consumer warpgroup's share (cooperative: tile_m / warpgroups
  rows; ping-pong: the whole tile), instruction m64 x tile_n x k16 (k32 for fp8);
  ws-ampere a quarter of the tile (2 x 2 consumer warps), instruction m16n8k16.

What the library cannot express, and what the adapter does with it:

- ``stages``: passed, but its estimate does not depend on them (nor on the warp and
  instruction tiles, nor on the layout): rows that differ only there get one estimate;
- ``persistent`` and ``persistent_ctas``: no such field; a persistent row is estimated as
  the same tiling launched one CTA per tile;
- ``schedule`` (ping-pong vs cooperative) and ``epilogue`` (direct vs TMA store): no
  field; they change only the warp tile, which the estimate ignores;
- ``stream_k``: the split-K kind is a property of a backend, and the CUTLASS3 target of
  ``EstimateRuntime`` reduces split-K out of place; stream-K rows get NaN;
- ``split_k``: estimated with that out-of-place reduction, while gemmperf's kernel sums
  the fp32 partials in the last CTA to arrive (no second kernel);
- ``mode`` other than full (ablations), the simt family (no target models a SIMT FP32
  kernel), dtypes without a precision (fp32, tf32, nvfp4), a family that does not run on
  the GPU: NaN, with the reason in ``nvmmh_why``;
- the library answers 0 for a configuration it finds illegal (shared memory over the
  GPU's, a warp tile its target rejects): NaN.
The library's internal discovery set is not loaded: with an explicit GPU and no device it
loads nothing (status PROFILE_NOT_ENTIRELY_LOADED) and changes no estimate, and its header
says it works on the current CUDA device, which would tie the answers to the machine.
"""

from __future__ import annotations

import ctypes
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import polars as pl

from ..errors import UserError
from ..hardware import CATALOG, GPU
from ..kernels import get_family
from ..problem import FAMILIES, LATER_CONFIG_COLUMNS, SCHEDULES, KernelConfig, Shape
from ..tables import SHAPE_COLUMNS, TILING_COLUMNS, with_config_defaults

PACKAGE = "nvMatmulHeuristics"  # the import name of pip's nvidia-matmul-heuristics
EXTRA = 'pip install -e ".[nvmmh]"'
VERSION = (0, 1)  # the library version whose structures are declared here

# gemmperf GPU slug -> (the library's predefined GPU, its nvmmhNvidiaGpu_t value)
GPUS = {
    "h100-sxm5-80gb": ("H100_SXM", 9000),
    "h200-sxm-141gb": ("H200_SXM", 9003),
    "a100-sxm4-80gb": ("A100_SXM_80GB", 8000),
    "rtx-a6000": ("RTX_A6000", 8602),
    "b200": ("B200", 10000),
}
# input dtype -> precision string (A/B, compute, C/D; five letters: A, B, C, compute, D)
PRECISIONS = {"bf16": "TST", "fp16": "HSH", "fp8": "QQTST"}
# family -> (target name, nvmmhTarget_t value)
TARGETS = {"ws-hopper": ("CUTLASS3", 4), "ws-ampere": ("CUTLASS", 2)}
LAYOUT_NT_ROW_MAJOR = 1  # A M x K, B N x K (transposed while loading), C M x N: row-major
FLAG_PERF_MODEL_BASED_AUTO_TUNING = 1 << 3
STATUS_SUCCESS = 1
RASTER_ORDER = {"row": 0, "column": 1, "grouped": 0}
# the columns the mapping reads; the later configuration dimensions read at their defaults
NEEDED = (*SHAPE_COLUMNS, "family", "dtype", *(c for c in TILING_COLUMNS if c not in LATER_CONFIG_COLUMNS))
GROUP = ("m", "n", "k", "dtype", "family")  # one ranking per shape, dtype and family
UINT16, UINT8 = 0xFFFF, 0xFF


@dataclass(frozen=True)
class Unavailable:
    """nvMatmulHeuristics cannot answer here; ``reason`` says why in one line."""

    reason: str

    def __str__(self) -> str:
        return f"nvMatmulHeuristics not available: {self.reason}"


# ------------------------------------------------------------------ the C structures


class KernelConfiguration(ctypes.Structure):
    """nvmmhKernelConfiguration_t."""

    _fields_ = [("cta", ctypes.c_uint16 * 3), ("warp", ctypes.c_uint16 * 3), ("instr", ctypes.c_uint16 * 3),
                ("splitK", ctypes.c_uint16), ("loadStages", ctypes.c_uint8), ("gridSwizzle", ctypes.c_uint8),
                ("ctaOrder", ctypes.c_uint8), ("cluster", ctypes.c_uint8 * 2)]


class MatmulProblem(ctypes.Structure):
    """nvmmhMatmulProblem_t."""

    _fields_ = [("M", ctypes.c_uint32), ("N", ctypes.c_uint32), ("K", ctypes.c_uint32),
                ("batchSize", ctypes.c_uint32), ("matmulLayout", ctypes.c_uint8)]


def _declare(lib) -> None:
    """Argument and result types of the functions used (nvMatmulHeuristics.h, 0.1)."""
    vp, cfg, prob = ctypes.c_void_p, ctypes.POINTER(KernelConfiguration), ctypes.POINTER(MatmulProblem)
    sigs = {
        "nvMatmulHeuristicsGetVersionMajor": (ctypes.c_uint, []),
        "nvMatmulHeuristicsGetVersionMinor": (ctypes.c_uint, []),
        "nvMatmulHeuristicsGetVersionPatch": (ctypes.c_uint, []),
        "nvMatmulHeuristicsCreate": (ctypes.c_int, [ctypes.POINTER(vp)]),
        "nvMatmulHeuristicsHardwareDescriptorCreate": (ctypes.c_int, [ctypes.POINTER(vp)]),
        "nvMatmulHeuristicsHardwareDescriptorSetPredefinedGpu": (ctypes.c_int, [vp, ctypes.c_int]),
        "nvMatmulHeuristicsEstimateRuntime": (ctypes.c_double, [vp, ctypes.c_char_p, ctypes.c_int, prob, cfg, vp]),
        "nvMatmulHeuristicsGetGemmConfig": (ctypes.c_uint, [vp, ctypes.c_char_p, ctypes.c_uint, ctypes.c_int, prob,
                                                            cfg, ctypes.c_uint, vp]),
        "nvMatmulHeuristicsKernelConfigurationGetString": (ctypes.c_uint, [cfg, ctypes.c_char_p, ctypes.c_uint]),
    }
    for name, (restype, argtypes) in sigs.items():
        fn = getattr(lib, name)
        fn.restype, fn.argtypes = restype, argtypes


# ------------------------------------------------------------------ loading the library


@dataclass
class Library:
    """The loaded shared library, one handle, and a hardware descriptor per GPU."""

    lib: ctypes.CDLL
    handle: ctypes.c_void_p
    version: tuple[int, int, int]
    path: str
    descriptors: dict

    def descriptor(self, code: int) -> ctypes.c_void_p | None:
        if code not in self.descriptors:
            d = ctypes.c_void_p()
            ok = (self.lib.nvMatmulHeuristicsHardwareDescriptorCreate(ctypes.byref(d)) == STATUS_SUCCESS
                  and self.lib.nvMatmulHeuristicsHardwareDescriptorSetPredefinedGpu(d, code) == STATUS_SUCCESS)
            self.descriptors[code] = d if ok and d.value else None
        return self.descriptors[code]


_LOADED: dict[str, Library] = {}  # by the shared library's path


def _library_path(package) -> str:
    default = Path(package.__file__).resolve().parent.parent / "nvidia" / PACKAGE / "lib" / f"lib{PACKAGE}.so.0"
    return str(Path(getattr(package, "WHEEL_LIB_PATH_", default)).resolve())


def library() -> Library | Unavailable:
    """The library, loaded once per process; Unavailable if it cannot be."""
    try:
        import nvMatmulHeuristics as package
    except Exception as err:  # absent, or an install that fails to import
        return Unavailable(f"the package nvidia-matmul-heuristics does not import ({type(err).__name__}: "
                           f"{err}); install the extra: {EXTRA}")
    try:
        path = _library_path(package)
    except Exception as err:
        return Unavailable(f"cannot locate its shared library ({type(err).__name__}: {err})")
    if path in _LOADED:
        return _LOADED[path]
    try:
        lib = ctypes.CDLL(path)
        _declare(lib)
    except (OSError, AttributeError) as err:
        return Unavailable(f"its shared library {path} does not load ({err})")
    version = (lib.nvMatmulHeuristicsGetVersionMajor(), lib.nvMatmulHeuristicsGetVersionMinor(),
               lib.nvMatmulHeuristicsGetVersionPatch())
    if version[:2] != VERSION:
        return Unavailable(f"library version {'.'.join(map(str, version))}; this adapter declares the "
                           f"structures of {'.'.join(map(str, VERSION))}")
    handle = ctypes.c_void_p()
    if lib.nvMatmulHeuristicsCreate(ctypes.byref(handle)) != STATUS_SUCCESS or not handle.value:
        return Unavailable("nvMatmulHeuristicsCreate failed")
    _LOADED[path] = Library(lib, handle, version, path, {})
    return _LOADED[path]


def _gpu(gpu: GPU | str) -> tuple[GPU, str, int] | Unavailable:
    """(gemmperf GPU, the library's GPU name, its enum value) of ``gpu``."""
    slug = gpu if isinstance(gpu, str) else gpu.slug
    if slug not in GPUS:
        return Unavailable(f"GPU {slug!r} has no predefined profile in the library (known here: {', '.join(GPUS)})")
    if isinstance(gpu, str):
        gpu = CATALOG[slug]
    return (gpu, *GPUS[slug])


def _open(gpu: GPU | str) -> tuple[Library, GPU, ctypes.c_void_p] | Unavailable:
    lib = library()
    if isinstance(lib, Unavailable):
        return lib
    found = _gpu(gpu)
    if isinstance(found, Unavailable):
        return found
    g, name, code = found
    descriptor = lib.descriptor(code)
    if descriptor is None:
        return Unavailable(f"the library refused its predefined GPU {name} ({code})")
    return lib, g, descriptor


def unavailable(gpu: GPU | str | None = None) -> Unavailable | None:
    """Why the library cannot answer here (for ``gpu``, if given), or None if it can."""
    if gpu is None:
        lib = library()
        return lib if isinstance(lib, Unavailable) else None
    found = _open(gpu)
    return found if isinstance(found, Unavailable) else None


# ------------------------------------------------------------------ rows -> configurations


def _tiles(row: dict) -> tuple[tuple, tuple]:
    """(warp tile, instruction tile) of a row's kernel (see the module doc)."""
    tm, tn, tk = row["tile_m"], row["tile_n"], row["tile_k"]
    if row["family"] == "ws-ampere":
        return (tm // 2, tn // 2, tk), (16, 8, 16)
    cfg = KernelConfig(family="ws-hopper", dtype=row["dtype"], tile_m=tm, tile_n=tn, tile_k=tk,
                       schedule=row["schedule"])
    return (get_family("ws-hopper").warpgroup_rows(cfg), tn, tk), (64, tn, 32 if row["dtype"] == "fp8" else 16)


def describe(row: dict, gpu: GPU) -> tuple[str, int, MatmulProblem, KernelConfiguration] | str:
    """(precision, target, problem, configuration) of one row, or why it has none."""
    family, dtype = row["family"], row["dtype"]
    empty = [c for c, v in row.items() if v is None and c != "mode"]
    if empty:
        return f"{empty[0]} is empty"
    if family not in TARGETS:
        return f"family {family}: no library target models it"
    if not get_family(family).runs_on(gpu):
        return f"family {family} does not run on {gpu.slug} ({gpu.arch})"
    if dtype not in PRECISIONS:
        return f"dtype {dtype}: no precision of the library stands for it"
    if row.get("mode") not in (None, "full"):
        return f"mode {row['mode']}: an ablation, not a GEMM"
    if row["stream_k"]:
        return "stream-K: EstimateRuntime's CUTLASS3 target reduces split-K out of place only"
    if row["raster"] not in RASTER_ORDER or row["schedule"] not in SCHEDULES:
        return f"raster {row['raster']} or schedule {row['schedule']}: not one gemmperf knows"
    group = row["group_m"] if row["raster"] == "grouped" else 1
    small = {"tile_m": UINT16, "tile_n": UINT16, "tile_k": UINT16, "split_k": UINT16, "stages": UINT8,
             "cluster_m": UINT8, "cluster_n": UINT8}
    over = [c for c, top in small.items() if row[c] > top] + (["group_m"] if group > UINT8 else [])
    if over or max(row["m"], row["n"], row["k"]) > 0xFFFFFFFF:
        return f"{(over or ['m, n or k'])[0]} is beyond the library's field"
    warp, instr = _tiles(row)
    cfg = KernelConfiguration()
    cfg.cta[:] = [row["tile_m"], row["tile_n"], row["tile_k"]]
    cfg.warp[:], cfg.instr[:] = list(warp), list(instr)
    cfg.splitK, cfg.loadStages = row["split_k"], row["stages"]
    cfg.gridSwizzle, cfg.ctaOrder = group, RASTER_ORDER[row["raster"]]
    cfg.cluster[:] = [row["cluster_m"], row["cluster_n"]]
    problem = MatmulProblem(row["m"], row["n"], row["k"], 1, LAYOUT_NT_ROW_MAJOR)
    return PRECISIONS[dtype], TARGETS[family][1], problem, cfg


def _rows(rows: pl.DataFrame) -> pl.DataFrame:
    """The configuration columns of ``rows``, later dimensions at their defaults."""
    missing = [c for c in NEEDED if c not in rows.columns]
    if missing:
        raise UserError(f"nvMatmulHeuristics: rows lack column(s) {', '.join(missing)}")
    df = with_config_defaults(rows)
    keep = [*SHAPE_COLUMNS, "family", "dtype", *TILING_COLUMNS, *(["mode"] if "mode" in df.columns else [])]
    return df.select(keep).with_columns(pl.col("persistent", "stream_k").cast(pl.Utf8).str.to_lowercase()
                                        .is_in(["true", "1"]))


def _estimate(rows: pl.DataFrame, gpu: GPU | str) -> tuple[np.ndarray, list] | Unavailable:
    """(seconds, why) per row: NaN and a reason where the library cannot say."""
    opened = _open(gpu)
    if isinstance(opened, Unavailable):
        return opened
    lib, g, descriptor = opened
    df = _rows(rows)
    seconds, why, done = np.full(df.height, np.nan), [None] * df.height, {}
    for i, row in enumerate(df.iter_rows(named=True)):
        key = tuple(row.values())
        if key not in done:
            done[key] = _one(lib, row, g, descriptor)
        seconds[i], why[i] = done[key]
    return seconds, why


def _one(lib: Library, row: dict, gpu: GPU, descriptor) -> tuple[float, str | None]:
    described = describe(row, gpu)
    if isinstance(described, str):
        return np.nan, described
    precision, target, problem, cfg = described
    s = lib.lib.nvMatmulHeuristicsEstimateRuntime(lib.handle, precision.encode(), target, ctypes.byref(problem),
                                                  ctypes.byref(cfg), descriptor)
    if not np.isfinite(s) or s <= 0:
        return np.nan, "the library answered no time (a configuration it finds illegal)"
    return float(s), None


# ------------------------------------------------------------------ the answers


def estimate_seconds(rows: pl.DataFrame, gpu: GPU | str) -> np.ndarray | Unavailable:
    """The library's runtime estimate of each row's configuration on ``gpu``, in seconds
    (NaN where it cannot say), or Unavailable."""
    out = _estimate(rows, gpu)
    return out if isinstance(out, Unavailable) else out[0]


def estimate_table(rows: pl.DataFrame, gpu: GPU | str) -> pl.DataFrame | Unavailable:
    """``rows`` plus nvmmh_us, nvmmh_why and nvmmh_rank (module doc), or Unavailable."""
    out = _estimate(rows, gpu)
    if isinstance(out, Unavailable):
        return out
    seconds, why = out
    us = pl.Series("nvmmh_us", seconds * 1e6, dtype=pl.Float64).fill_nan(None)
    df = rows.with_columns(us, pl.Series("nvmmh_why", why, dtype=pl.Utf8))
    return df.with_columns(pl.col("nvmmh_us").rank("min").over(list(GROUP)).cast(pl.Int64).alias("nvmmh_rank"))


def picks(rows: pl.DataFrame, gpu: GPU | str) -> pl.DataFrame | Unavailable:
    """Per (m, n, k, dtype, family): the row the library ranks first (module doc)."""
    table = estimate_table(rows, gpu)
    if isinstance(table, Unavailable):
        return table
    ranked = with_config_defaults(table).filter(pl.col("nvmmh_us").is_not_null())
    counts = ranked.group_by(list(GROUP)).agg(pl.len().alias("nvmmh_ranked"),
                                              (pl.col("nvmmh_rank") == 1).sum().cast(pl.Int64).alias("nvmmh_tied"))
    order = [*GROUP, "nvmmh_us", *TILING_COLUMNS]
    best = ranked.sort(order, maintain_order=True).group_by(list(GROUP), maintain_order=True).first()
    return best.join(counts, on=list(GROUP), how="left").drop("nvmmh_rank", "nvmmh_why")


def top_configs(shape: Shape, gpu: GPU | str, family: str = "ws-hopper", count: int = 1) -> list[dict] | Unavailable:
    """The library's own top ``count`` configurations for ``shape`` (its dtype) on
    ``gpu``, ranked by its performance model, each with its estimate (``nvmmh_us``)."""
    if family not in FAMILIES:
        raise UserError(f"family {family!r}: known families are {', '.join(FAMILIES)}")
    opened = _open(gpu)
    if isinstance(opened, Unavailable):
        return opened
    lib, g, descriptor = opened
    if family not in TARGETS or shape.dtype not in PRECISIONS or not get_family(family).runs_on(g):
        return Unavailable(f"no library target and precision for {family} {shape.dtype} on {g.slug}")
    precision, target = PRECISIONS[shape.dtype].encode(), TARGETS[family][1]
    problem = MatmulProblem(shape.m, shape.n, shape.k, 1, LAYOUT_NT_ROW_MAJOR)
    found = (KernelConfiguration * count)()
    n = lib.lib.nvMatmulHeuristicsGetGemmConfig(lib.handle, precision, FLAG_PERF_MODEL_BASED_AUTO_TUNING, target,
                                                ctypes.byref(problem), found, count, descriptor)
    out = []
    for cfg in found[:n]:
        s = lib.lib.nvMatmulHeuristicsEstimateRuntime(lib.handle, precision, target, ctypes.byref(problem),
                                                      ctypes.byref(cfg), descriptor)
        text = ctypes.create_string_buffer(512)
        lib.lib.nvMatmulHeuristicsKernelConfigurationGetString(ctypes.byref(cfg), text, len(text))
        out.append({"tile_m": cfg.cta[0], "tile_n": cfg.cta[1], "tile_k": cfg.cta[2], "stages": cfg.loadStages,
                    "cluster_m": cfg.cluster[0], "cluster_n": cfg.cluster[1], "split_k": cfg.splitK,
                    "cta_order": cfg.ctaOrder, "swizzle": cfg.gridSwizzle,
                    "nvmmh_us": s * 1e6 if np.isfinite(s) and s > 0 else None,
                    "kernel": text.value.decode(errors="replace")})
    return out
