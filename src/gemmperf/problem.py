"""Problems (GEMM shapes), data types, kernel configurations and testlists.

Standard library only: the GPU-side code (kernels, timing, collection) imports this
on machines that have numpy and cuda-python but not polars.
"""

from __future__ import annotations

import dataclasses
import math
import re
from dataclasses import dataclass
from pathlib import Path

from . import csvfile
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
# How the accumulators reach C: "direct" stores from registers (any leading dimension of
# C), "tma" through a shared-memory staging buffer and TMA bulk tensor stores (C's rows
# padded to 16 bytes).
EPILOGUES = ("direct", "tma")
# How consumer warpgroups share the work: "cooperative" (all on one tile, split along M)
# or "pingpong" (each on its own tile; their main loops take turns on the tensor cores
# while the other runs its epilogue).
SCHEDULES = ("cooperative", "pingpong")
# The grouped raster's default group: tile rows (cluster rows with clusters) per group.
DEFAULT_GROUP_M = 8
# Output type for an input type: the 8-bit inputs write bf16 (fp32 accumulation, scaled by
# a per-tensor scale of A and of B); every other input type writes its own type.
OUT_DTYPES = {"fp8": "bf16", "nvfp4": "bf16", "fp4": "bf16"}

def check_dtype(dtype: str, origin: str = "dtype") -> str:
    if dtype not in DTYPE_BYTES:
        raise UserError(f"{origin}: unknown dtype {dtype!r}; known: {', '.join(DTYPE_BYTES)}")
    return dtype


# Sizes the arithmetic can hold. The kernels take M, N and K as 32-bit ints (and TMA
# boxes address each dimension with 32-bit coordinates), so no dimension may pass
# 2**31 - 1; the models compute times from 2*M*N*K and byte counts in float64, which
# holds integers exactly up to 2**53, so the flops may not pass that either.
MAX_DIM = 2**31 - 1
MAX_DIM_WHY = "the kernels index M, N and K with 32-bit ints"
MAX_FLOPS = 2**53
MAX_FLOPS_WHY = "2*M*N*K must be exact in float64"


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


def flops_error(m: int, n: int, k: int) -> str | None:
    """Why 2*M*N*K is too large for the arithmetic (MAX_FLOPS), or None."""
    if 2 * m * n * k > MAX_FLOPS:
        return f"2*M*N*K = {2 * m * n * k} is above the limit 2**53 ({MAX_FLOPS_WHY})"
    return None


def check_row_flops(row: dict) -> None:
    """csvfile row check: a row's m, n, k within MAX_FLOPS (blamed on k)."""
    reason = flops_error(row["m"], row["n"], row["k"])
    if reason:
        raise csvfile.BadValue(reason, "k")


def operand_bytes(shape: Shape, out_dtype: str | None = None) -> int:
    """Bytes of A (MxK), B (KxN), their scale factors and C (MxN, ``out_dtype``, by
    default the input's type): what must fit in GPU memory to run the problem."""
    inputs = (shape.m + shape.n) * shape.k * DTYPE_BYTES[shape.dtype]
    if shape.dtype in SCALE_FACTORS:
        per, size = SCALE_FACTORS[shape.dtype]
        inputs += (shape.m + shape.n) * -(-shape.k // per) * size
    out = shape.m * shape.n * DTYPE_BYTES[out_dtype or shape.dtype]
    return math.ceil(inputs + out)


_DIM = csvfile.integer(1, MAX_DIM, MAX_DIM_WHY)


def parse_shape(text: str, dtype: str = "bf16") -> Shape:
    """'MxNxK' -> Shape, each size in [1, MAX_DIM] and 2*M*N*K <= MAX_FLOPS."""
    parts = text.lower().split("x")
    if len(parts) != 3:
        raise UserError(f"shape {text!r}: expected MxNxK with positive integers")
    dims = []
    for name, raw in zip("MNK", parts):
        try:
            dims.append(_DIM(raw.strip()))
        except ValueError as err:
            raise UserError(f"shape {text!r}: {name} = {raw.strip()!r}: {err}") from None
    reason = flops_error(*dims)
    if reason:
        raise UserError(f"shape {text!r}: {reason}")
    return Shape(*dims, check_dtype(dtype))


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
    epilogue: str = "direct"
    schedule: str = "cooperative"
    # rows of tiles (of clusters) in one group of the grouped raster
    group_m: int = DEFAULT_GROUP_M
    # persistent grid: at most this many CTAs (0: as many as fit at once, one per SM)
    persistent_ctas: int = 0
    # K split over this many CTAs per tile, which reduce their fp32 partial tiles (1: off)
    split_k: int = 1
    # persistent CTAs share the (tile, k-block) iteration space evenly (stream-K)
    stream_k: bool = False

    def __post_init__(self):
        self.validate()

    def validate(self) -> None:
        if self.family not in FAMILIES:
            raise UserError(f"family {self.family!r}: known families are {', '.join(FAMILIES)}")
        if self.mode not in MODES:
            raise UserError(f"mode {self.mode!r}: known modes are {', '.join(MODES)}")
        if self.raster not in RASTERS:
            raise UserError(f"raster {self.raster!r}: known orders are {', '.join(RASTERS)}")
        if self.epilogue not in EPILOGUES:
            raise UserError(f"epilogue {self.epilogue!r}: known epilogues are {', '.join(EPILOGUES)}")
        if self.schedule not in SCHEDULES:
            raise UserError(f"schedule {self.schedule!r}: known schedules are {', '.join(SCHEDULES)}")
        check_dtype(self.dtype)
        for name in ("tile_m", "tile_n", "tile_k", "stages", "cluster_m", "cluster_n", "group_m", "split_k"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise UserError(f"{name} must be a positive integer, got {value!r}")
            if value > MAX_DIM:
                raise UserError(f"{name} = {value} is above the limit {MAX_DIM} ({MAX_DIM_WHY})")
        ctas = self.persistent_ctas
        if not isinstance(ctas, int) or isinstance(ctas, bool) or not 0 <= ctas <= MAX_DIM:
            raise UserError(f"persistent_ctas must be an integer >= 0 (0: one CTA per SM), got {ctas!r}")
        for name in ("persistent", "stream_k"):
            if not isinstance(getattr(self, name), bool):
                raise UserError(f"{name} must be true or false, got {getattr(self, name)!r}")

    @property
    def out_dtype(self) -> str:
        return OUT_DTYPES.get(self.dtype, self.dtype)

    def key(self) -> str:
        """Stable short name, used for caches and row identity. The dimensions added
        after the first measurements are named only where they differ from their
        defaults, so a configuration measured before keeps its name."""
        p = "p" if self.persistent else "np"
        extra = ""
        if self.epilogue != "direct":
            extra += f"-epi{self.epilogue}"
        if self.schedule != "cooperative":
            extra += f"-{self.schedule}"
        if self.group_m != DEFAULT_GROUP_M:
            extra += f"-g{self.group_m}"
        if self.persistent_ctas:
            extra += f"-ctas{self.persistent_ctas}"
        if self.split_k != 1:
            extra += f"-sk{self.split_k}"
        if self.stream_k:
            extra += "-streamk"
        return (
            f"{self.family}-{self.dtype}-{self.tile_m}x{self.tile_n}x{self.tile_k}"
            f"-s{self.stages}-c{self.cluster_m}x{self.cluster_n}-{p}-{self.raster}-{self.mode}{extra}"
        )

    @classmethod
    def from_key(cls, text: str) -> KernelConfig:
        """The configuration ``key()`` names (the runs of the timed answers name theirs so);
        a name ``key()`` would not write stops with one message naming it."""
        m = _KEY.fullmatch(text.strip())
        if m is None:
            raise UserError(f"configuration {text!r}: not a configuration's name "
                            "(family-dtype-MxNxK-sS-cMxN-p|np-raster-mode[-options])")
        g = m.groupdict()
        fields = {"family": g["family"], "dtype": g["dtype"], "tile_m": int(g["tm"]), "tile_n": int(g["tn"]),
                  "tile_k": int(g["tk"]), "stages": int(g["stages"]), "cluster_m": int(g["cm"]),
                  "cluster_n": int(g["cn"]), "persistent": g["p"] == "p", "raster": g["raster"], "mode": g["mode"]}
        options = {"g": "group_m", "ctas": "persistent_ctas", "sk": "split_k"}
        for option in filter(None, (g["options"] or "").split("-")):
            number = option.lstrip("abcdefghijklmnopqrstuvwxyz")
            name = option[:len(option) - len(number)]
            if option.startswith("epi") and not number:
                fields["epilogue"] = option[3:]
            elif option in SCHEDULES and not number:
                fields["schedule"] = option
            elif option == "streamk":
                fields["stream_k"] = True
            elif name in options and number.isdigit():
                fields[options[name]] = int(number)
            else:
                raise UserError(f"configuration {text!r}: unknown option {option!r}")
        try:
            config = cls(**fields)
        except UserError as err:
            raise UserError(f"configuration {text!r}: {err}") from None
        if config.key() != text.strip():
            raise UserError(f"configuration {text!r}: not as key() names it ({config.key()!r})")
        return config

    @property
    def cluster_size(self) -> int:
        return self.cluster_m * self.cluster_n

    def replace(self, **changes) -> KernelConfig:
        return dataclasses.replace(self, **changes)

    def as_dict(self) -> dict:
        return dataclasses.asdict(self)


CONFIG_COLUMNS = tuple(f.name for f in dataclasses.fields(KernelConfig))

def _one_of(names) -> str:
    return "|".join(re.escape(n) for n in sorted(names, key=len, reverse=True))


# KernelConfig.key()'s names: the options after the mode are those that differ from their defaults
_KEY = re.compile(rf"(?P<family>{_one_of(FAMILIES)})-(?P<dtype>{_one_of(DTYPE_BYTES)})"
                  r"-(?P<tm>\d+)x(?P<tn>\d+)x(?P<tk>\d+)-s(?P<stages>\d+)-c(?P<cm>\d+)x(?P<cn>\d+)-(?P<p>p|np)"
                  rf"-(?P<raster>{_one_of(RASTERS)})-(?P<mode>{_one_of(MODES)})(?P<options>(?:-[a-z]+\d*)*)")
# Dimensions added after measurements were first shipped (issues 15 and 16): a table
# without them was measured at their defaults.
LATER_CONFIG_COLUMNS = ("epilogue", "schedule", "group_m", "persistent_ctas", "split_k", "stream_k")


# ---------------------------------------------------------------- testlists


def read_testlist(path: str | Path, default_dtype: str = "bf16") -> list[Shape]:
    """Read a testlist CSV: header ``m,n,k`` with an optional ``dtype`` column; blank
    lines and lines starting with '#' are skipped.

    Read by ``csvfile.read``: a bad header, row or value, a size over MAX_DIM, a shape
    over MAX_FLOPS or a problem listed twice stops with one message naming the file,
    line and value.
    """
    columns = {"m": _DIM, "n": _DIM, "k": _DIM, "dtype": csvfile.choice(DTYPE_BYTES, "dtype")}
    table = csvfile.read(path, columns, required=("m", "n", "k"), nonempty=("m", "n", "k", "dtype"),
                         comments=True, check_row=check_row_flops, what="testlist")
    shapes: list[Shape] = []
    first: dict[Shape, int] = {}
    for row, line in zip(table.rows, table.lines):
        shape = Shape(row["m"], row["n"], row["k"], row.get("dtype") or check_dtype(default_dtype))
        if shape in first:
            raise UserError(f"{where(table.path, line)}: {shape.m},{shape.n},{shape.k},{shape.dtype} "
                            f"is listed twice (lines {first[shape]} and {line})")
        first[shape] = line
        shapes.append(shape)
    if not shapes:
        raise UserError(f"{table.path}: testlist has no problems")
    return shapes


def shard(items: list, index: int, count: int) -> list:
    """Shard ``index`` of ``count`` (0-based), round robin so shards stay balanced."""
    if count < 1 or not 0 <= index < count:
        raise UserError(f"shard {index}/{count}: need 0 <= index < count")
    return items[index::count]
