"""Model parameters: T_INIT, T_EPILOGUE, load and math throughput and latency.

One ``Params`` per (GPU, kernel family, dtype). Until the fit stage has run, defaults
are derived from the GPU descriptor and marked ``source="default"``; fitted values
carry ``source="fitted"`` and an uncertainty per parameter.

Units: microseconds, bytes per microsecond (per CTA), FLOP per microsecond (per CTA).
"""

from __future__ import annotations

import dataclasses
import json
import math
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

from .errors import UserError
from .hardware import GPU

PARAM_NAMES = (
    "t_init_us",
    "t_epilogue_us",
    "load_bytes_per_us",
    "load_latency_us",
    "math_flops_per_us",
    "math_latency_us",
    "l2_hit_rate",
)

# Defaults that no descriptor figure gives; each is a typical value, to be fitted.
DEFAULT_T_INIT_US = 2.0  # launch overhead with CUDA events (the paper measured 1.68 us)
DEFAULT_EPILOGUE_CYCLES = 1000  # gemm-model's epilogue_min_latency in its README
DEFAULT_LOAD_LATENCY_US = 0.6  # order of one DRAM round trip on Hopper/Ampere
DEFAULT_MATH_LATENCY_CYCLES = 64  # order of one tensor-core instruction's latency


@dataclass(frozen=True)
class Params:
    t_init_us: float
    t_epilogue_us: float
    load_bytes_per_us: float
    load_latency_us: float
    math_flops_per_us: float
    math_latency_us: float
    l2_hit_rate: float = 0.0
    source: str = "default"
    # one-sigma uncertainty per parameter name, and fit quality (r2, n points) when fitted
    uncertainty: dict[str, float] = field(default_factory=dict)
    quality: dict[str, float] = field(default_factory=dict)
    # stored values of model constants beyond PARAM_NAMES (e.g. ws-pipelined's
    # l2_bytes_per_us), by name; each model turns the ones it knows into its own typed
    # constants object over its descriptor defaults (models/ws_pipelined/constants.py)
    constants: dict[str, float] = field(default_factory=dict)

    def __post_init__(self):
        for name in PARAM_NAMES:
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) \
                    or value < 0:
                raise UserError(f"parameter {name} = {value!r} must be a finite number >= 0")
        for name in ("load_bytes_per_us", "math_flops_per_us"):
            if getattr(self, name) <= 0:
                raise UserError(f"parameter {name} must be > 0")
        if not 0 <= self.l2_hit_rate < 1:
            raise UserError(f"parameter l2_hit_rate = {self.l2_hit_rate} must be in [0, 1)")

    def replace(self, **changes) -> Params:
        return dataclasses.replace(self, **changes)

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)


def default_params(gpu: GPU, family: str, dtype: str) -> Params:
    """Parameters derived from the descriptor alone (``source='default'``)."""
    clock = gpu.sm_clock_mhz  # cycles per microsecond
    # the core cannot ask the kernels layer (Family.tensor_cores); simt is the one family
    # without tensor cores, and tests/test_kernel_families.py keeps the two in step
    tensor = family != "simt"
    return Params(
        t_init_us=DEFAULT_T_INIT_US,
        t_epilogue_us=DEFAULT_EPILOGUE_CYCLES / clock,
        # one CTA per SM, all SMs loading: each gets its share of DRAM bandwidth
        load_bytes_per_us=gpu.dram_bytes_per_s / gpu.sms / 1e6,
        load_latency_us=DEFAULT_LOAD_LATENCY_US,
        math_flops_per_us=gpu.flops_per_clk_sm(dtype, tensor) * clock,
        math_latency_us=DEFAULT_MATH_LATENCY_CYCLES / clock,
        source="default",
    )


# what a params.json may hold: top-level keys, and the keys of one entry
FILE_KEYS = ("gpu", "entries", "fitted_at", "fit")  # fit: the fit's record (app/fit.fit_block)
ENTRY_KEYS = ("family", "dtype", *PARAM_NAMES, "source", "uncertainty", "quality", "constants",
              "extra")  # extra: files written before the field was named constants


@dataclass
class ParamSet:
    """Parameters of one GPU, by (family, dtype); falls back to descriptor defaults.

    ``origin`` is the file the entries were read from ("" when built in memory) and
    ``fitted_at`` the UTC time the file was written (ISO 8601; "" when unknown)."""

    gpu: GPU
    entries: dict[tuple[str, str], Params] = field(default_factory=dict)
    overrides: dict[str, float] = field(default_factory=dict)
    origin: str = ""
    fitted_at: str = ""

    def get(self, family: str, dtype: str) -> Params:
        p = self.entries.get((family, dtype)) or default_params(self.gpu, family, dtype)
        return p.replace(**self.overrides) if self.overrides else p

    def to_dict(self) -> dict:
        return {
            "gpu": self.gpu.slug,
            **({"fitted_at": self.fitted_at} if self.fitted_at else {}),
            "entries": [
                {"family": f, "dtype": d, **p.to_dict()} for (f, d), p in sorted(self.entries.items())
            ],
        }

    def save(self, path: str | Path) -> None:
        """Write the entries as JSON, stamped with ``fitted_at`` (now, unless already set)."""
        stamped = self.fitted_at or datetime.now(timezone.utc).isoformat(timespec="seconds")
        data = dataclasses.replace(self, fitted_at=stamped).to_dict()
        Path(path).write_text(json.dumps(data, indent=2) + "\n")

    @classmethod
    def load(cls, path: str | Path, gpu: GPU) -> ParamSet:
        """Read a params.json; anything but a well-formed file is one UserError line."""
        path = Path(path)
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as err:
            raise UserError(f"{path}: cannot read parameters ({str(err).splitlines()[0]})") from None
        entries = _entries(path, data)
        record = data.get("fit", {})
        if not isinstance(record, dict):
            raise UserError(f"{path}: fit = {record!r} is not an object")
        fitted_at = record.get("fitted_at", data.get("fitted_at", ""))
        if not isinstance(fitted_at, str):
            raise UserError(f"{path}: fitted_at = {fitted_at!r} is not a date string")
        return cls(gpu=gpu, entries=entries, origin=str(path), fitted_at=fitted_at)


def file_gpu(path: str | Path) -> str | None:
    """The GPU slug a params.json was fitted for (its ``gpu`` field), None if absent."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    gpu = data.get("gpu") if isinstance(data, dict) else None
    return gpu if isinstance(gpu, str) else None


def _entries(path: Path, data) -> dict[tuple[str, str], Params]:
    """The entries of a params.json's parsed ``data``, each checked."""
    if not isinstance(data, dict):
        raise UserError(f"{path}: parameters must be a JSON object with 'entries', got {type(data).__name__}")
    unknown = [k for k in data if k not in FILE_KEYS]
    if unknown or "entries" not in data:
        raise UserError(f"{path}: expected keys {', '.join(FILE_KEYS)}; "
                        + (f"unknown {', '.join(map(repr, unknown))}" if unknown else "no 'entries'"))
    if not isinstance(data["entries"], list) or not data["entries"]:
        raise UserError(f"{path}: 'entries' must be a non-empty list of parameter entries")
    entries: dict[tuple[str, str], Params] = {}
    for i, e in enumerate(data["entries"]):
        key, params = _entry(path, i, e)
        if key in entries:
            raise UserError(f"{path}: entry {i}: a second entry for family {key[0]}, dtype {key[1]}")
        entries[key] = params
    return entries


def _entry(path: Path, i: int, e) -> tuple[tuple[str, str], Params]:
    where_ = f"{path}: entry {i}"
    if not isinstance(e, dict):
        raise UserError(f"{where_}: expected an object, got {type(e).__name__}")
    unknown = [k for k in e if k not in ENTRY_KEYS]
    if unknown:
        raise UserError(f"{where_}: unknown key(s) {', '.join(map(repr, unknown))}; known: {', '.join(ENTRY_KEYS)}")
    missing = [k for k in ("family", "dtype", *PARAM_NAMES[:-1]) if k not in e]
    if missing:
        raise UserError(f"{where_}: missing {', '.join(missing)}")
    if not all(isinstance(e[k], str) for k in ("family", "dtype")):
        raise UserError(f"{where_}: family and dtype must be strings")
    for name in ("uncertainty", "quality", "constants", "extra"):
        _check_numbers(where_, name, e.get(name, {}), finite=name in ("constants", "extra"))
    fields = {k: e[k] for k in e if k not in ("family", "dtype", "extra")}
    fields["constants"] = {**e.get("extra", {}), **e.get("constants", {})}
    try:
        return (e["family"], e["dtype"]), Params(**fields)
    except UserError as err:
        raise UserError(f"{where_}: {err}") from None
    except TypeError as err:
        raise UserError(f"{where_}: {err}") from None


def _check_numbers(where_: str, name: str, values, finite: bool) -> None:
    """``values`` must be {str: number}; with ``finite``, finite numbers."""
    if not isinstance(values, dict):
        raise UserError(f"{where_}: {name} must be an object of numbers")
    for key, value in values.items():
        if isinstance(value, bool) or not isinstance(value, (int, float)) or (finite and not math.isfinite(value)):
            raise UserError(f"{where_}: {name}.{key} = {value!r} must be a {'finite ' if finite else ''}number")
