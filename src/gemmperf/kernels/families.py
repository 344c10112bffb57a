"""The registry of kernel families, and the questions asked of a configuration.

``FAMILY_OBJECTS`` maps each name of :data:`gemmperf.problem.FAMILIES` (the core's enum,
in the same order) to its :class:`~gemmperf.kernels.family.Family`.
"""

from __future__ import annotations

from ..errors import UserError
from ..hardware import GPU
from ..problem import FAMILIES, KernelConfig
from .ampere import WS_AMPERE
from .family import Family
from .hopper import WS_HOPPER
from .simt import SIMT

FAMILY_OBJECTS: dict[str, Family] = {f.name: f for f in (WS_HOPPER, WS_AMPERE, SIMT)}


def get_family(name: str) -> Family:
    """The family called ``name``."""
    try:
        return FAMILY_OBJECTS[name]
    except KeyError:
        raise UserError(f"family {name!r}: known families are {', '.join(FAMILIES)}") from None


def family_of(cfg: KernelConfig) -> Family:
    return get_family(cfg.family)


def families_on(gpu: GPU, names=FAMILIES) -> list[Family]:
    """The families among ``names`` that run on ``gpu``, in ``names``' order."""
    return [f for f in map(get_family, names) if f.runs_on(gpu)]


def check_legal(cfg: KernelConfig, gpu: GPU) -> str | None:
    """None if ``cfg`` is legal on ``gpu``, else the reason it is not."""
    return family_of(cfg).check_legal(cfg, gpu)


def sweep_for_gpu(gpu: GPU, modes=("full",)) -> list[KernelConfig]:
    """Default sweep of every family that runs on ``gpu`` (bf16, and fp32 for simt)."""
    return [cfg for fam in FAMILY_OBJECTS.values() for cfg in fam.default_sweep(gpu, None, modes)]
