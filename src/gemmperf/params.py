"""Model parameters: T_INIT, T_EPILOGUE, load and math throughput and latency.

One ``Params`` per (GPU, kernel family, dtype). Until the fit stage has run, defaults
are derived from the GPU descriptor and marked ``source="default"``; fitted values
carry ``source="fitted"`` and an uncertainty per parameter.

Units: microseconds, bytes per microsecond (per CTA), FLOP per microsecond (per CTA).
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass, field
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
            if not isinstance(value, (int, float)) or value != value or value < 0:
                raise UserError(f"parameter {name} = {value!r} must be a number >= 0")
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


@dataclass
class ParamSet:
    """Parameters of one GPU, by (family, dtype); falls back to descriptor defaults."""

    gpu: GPU
    entries: dict[tuple[str, str], Params] = field(default_factory=dict)
    overrides: dict[str, float] = field(default_factory=dict)

    def get(self, family: str, dtype: str) -> Params:
        p = self.entries.get((family, dtype)) or default_params(self.gpu, family, dtype)
        return p.replace(**self.overrides) if self.overrides else p

    def to_dict(self) -> dict:
        return {
            "gpu": self.gpu.slug,
            "entries": [
                {"family": f, "dtype": d, **p.to_dict()} for (f, d), p in sorted(self.entries.items())
            ],
        }

    def save(self, path: str | Path) -> None:
        Path(path).write_text(json.dumps(self.to_dict(), indent=2) + "\n")

    @classmethod
    def load(cls, path: str | Path, gpu: GPU) -> ParamSet:
        path = Path(path)
        try:
            data = json.loads(path.read_text())
        except (OSError, ValueError) as err:
            raise UserError(f"{path}: cannot read parameters ({err})") from None
        entries = {}
        for i, e in enumerate(data.get("entries", [])):
            try:
                fields = {k: e[k] for k in e if k not in ("family", "dtype")}
                if "extra" in fields:  # files written before the field was named constants
                    fields["constants"] = {**fields.pop("extra"), **fields.get("constants", {})}
                entries[(e["family"], e["dtype"])] = Params(**fields)
            except (KeyError, TypeError) as err:
                raise UserError(f"{path}: entry {i}: {err}") from None
        return cls(gpu=gpu, entries=entries)
