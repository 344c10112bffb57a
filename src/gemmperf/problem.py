"""Problems (GEMM shapes), data types, kernel configurations and testlists.

Standard library only: the GPU-side code (kernels, timing, collection) imports this
on machines that have numpy and cuda-python but not polars.
"""

from __future__ import annotations

import csv
import dataclasses
from dataclasses import dataclass
from pathlib import Path

from .errors import UserError, where

# Bytes per element. nvfp4 / fp4 are 4-bit; scale factors are counted separately.
DTYPE_BYTES: dict[str, float] = {
    "fp32": 4,
    "tf32": 4,
    "bf16": 2,
    "fp16": 2,
    "fp8": 1,
    "nvfp4": 0.5,
    "fp4": 0.5,
}

# Block-scaled formats: (elements per scale factor, bytes per scale factor).
# nvfp4 carries one e4m3 scale per 16 elements along K.
SCALE_FACTORS: dict[str, tuple[int, float]] = {"nvfp4": (16, 1.0)}

# Kernel family names; the rules of each family are its Family object
# (gemmperf.kernels.families), which the core does not import.
FAMILIES = ("ws-hopper", "ws-ampere", "simt")
MODES = ("full", "load-only", "math-only", "epilogue-only", "empty")
RASTERS = ("row", "column", "grouped")

def check_dtype(dtype: str, origin: str = "dtype") -> str:
    if dtype not in DTYPE_BYTES:
        raise UserError(f"{origin}: unknown dtype {dtype!r}; known: {', '.join(DTYPE_BYTES)}")
    return dtype


@dataclass(frozen=True, order=True)
class Shape:
    m: int
    n: int
    k: int
    dtype: str = "bf16"

    @property
    def flops(self) -> int:
        return 2 * self.m * self.n * self.k

    def __str__(self) -> str:
        return f"{self.m}x{self.n}x{self.k}:{self.dtype}"


def parse_shape(text: str, dtype: str = "bf16") -> Shape:
    """'MxNxK' -> Shape."""
    parts = text.lower().split("x")
    try:
        m, n, k = (int(p) for p in parts)
    except ValueError:
        raise UserError(f"shape {text!r}: expected MxNxK with positive integers") from None
    if min(m, n, k) < 1:
        raise UserError(f"shape {text!r}: M, N and K must be >= 1")
    return Shape(m, n, k, check_dtype(dtype))


@dataclass(frozen=True)
class KernelConfig:
    """One kernel configuration: integers and enums only.

    ``dtype`` is the input type; accumulation is fp32 and the output has the input's
    type (simt: fp32 throughout).
    """

    family: str = "ws-hopper"
    dtype: str = "bf16"
    tile_m: int = 128
    tile_n: int = 128
    tile_k: int = 64
    stages: int = 4
    cluster_m: int = 1
    cluster_n: int = 1
    persistent: bool = False
    raster: str = "row"
    mode: str = "full"

    def __post_init__(self):
        self.validate()

    def validate(self) -> None:
        if self.family not in FAMILIES:
            raise UserError(f"family {self.family!r}: known families are {', '.join(FAMILIES)}")
        if self.mode not in MODES:
            raise UserError(f"mode {self.mode!r}: known modes are {', '.join(MODES)}")
        if self.raster not in RASTERS:
            raise UserError(f"raster {self.raster!r}: known orders are {', '.join(RASTERS)}")
        check_dtype(self.dtype)
        for name in ("tile_m", "tile_n", "tile_k", "stages", "cluster_m", "cluster_n"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise UserError(f"{name} must be a positive integer, got {value!r}")
        if not isinstance(self.persistent, bool):
            raise UserError(f"persistent must be true or false, got {self.persistent!r}")

    @property
    def out_dtype(self) -> str:
        return self.dtype

    def key(self) -> str:
        """Stable short name, used for caches and row identity."""
        p = "p" if self.persistent else "np"
        return (
            f"{self.family}-{self.dtype}-{self.tile_m}x{self.tile_n}x{self.tile_k}"
            f"-s{self.stages}-c{self.cluster_m}x{self.cluster_n}-{p}-{self.raster}-{self.mode}"
        )

    def replace(self, **changes) -> KernelConfig:
        return dataclasses.replace(self, **changes)

    def as_dict(self) -> dict:
        return dataclasses.asdict(self)


CONFIG_COLUMNS = tuple(f.name for f in dataclasses.fields(KernelConfig))


# ---------------------------------------------------------------- testlists


def read_testlist(path: str | Path, default_dtype: str = "bf16") -> list[Shape]:
    """Read a testlist CSV (header ``m,n,k`` and an optional ``dtype`` column).

    A malformed row stops with one message naming the file, line and value.
    """
    path = Path(path)
    if not path.is_file():
        raise UserError(f"{path}: testlist not found")
    shapes: list[Shape] = []
    with path.open(newline="") as fh:
        reader = csv.reader(fh)
        try:
            header = [h.strip().lower() for h in next(reader)]
        except StopIteration:
            raise UserError(f"{where(path, 1)}: empty testlist, expected a header m,n,k") from None
        missing = [c for c in ("m", "n", "k") if c not in header]
        extra = [c for c in header if c not in ("m", "n", "k", "dtype")]
        if missing or extra:
            raise UserError(
                f"{where(path, 1)}: header {','.join(header)!r} must be m,n,k with an optional dtype"
            )
        idx = {c: header.index(c) for c in header}
        for line_no, row in enumerate(reader, start=2):
            if not row or all(not c.strip() for c in row) or row[0].lstrip().startswith("#"):
                continue
            if len(row) != len(header):
                raise UserError(
                    f"{where(path, line_no)}: expected {len(header)} values, got {len(row)}: {','.join(row)!r}"
                )
            dims = []
            for c in ("m", "n", "k"):
                raw = row[idx[c]].strip()
                try:
                    value = int(raw)
                except ValueError:
                    raise UserError(f"{where(path, line_no)}: {c} = {raw!r} is not an integer") from None
                if value < 1:
                    raise UserError(f"{where(path, line_no)}: {c} = {value} must be >= 1")
                dims.append(value)
            dtype = row[idx["dtype"]].strip() if "dtype" in idx else default_dtype
            if dtype not in DTYPE_BYTES:
                raise UserError(f"{where(path, line_no)}: dtype = {dtype!r} is unknown")
            shapes.append(Shape(*dims, dtype))
    if not shapes:
        raise UserError(f"{path}: testlist has no problems")
    return shapes


def shard(items: list, index: int, count: int) -> list:
    """Shard ``index`` of ``count`` (0-based), round robin so shards stay balanced."""
    if count < 1 or not 0 <= index < count:
        raise UserError(f"shard {index}/{count}: need 0 <= index < count")
    return items[index::count]
