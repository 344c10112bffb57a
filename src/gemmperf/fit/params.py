"""The fit stage: model parameters per (family, dtype) for one GPU."""

from __future__ import annotations

from ..hardware import GPU
from ..params import ParamSet, default_params
from ..predictions import family_dtype, runs_on


def default_paramset(gpu: GPU, families: list[str], dtype: str) -> ParamSet:
    """Descriptor-derived parameters for every family that runs on ``gpu``, marked default."""
    entries = {}
    for family in families:
        if runs_on(family, gpu):
            fd = family_dtype(family, dtype)
            entries[(family, fd)] = default_params(gpu, family, fd)
    return ParamSet(gpu=gpu, entries=entries)
