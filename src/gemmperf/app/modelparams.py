"""The model parameters a command runs with: params.json (or descriptor defaults) and
the ``--set NAME=VALUE`` overrides (the workflow passes config ``model_params`` so)."""

from __future__ import annotations

from pathlib import Path

from ..errors import UserError
from ..hardware import GPU
from ..params import PARAM_NAMES, ParamSet
from .resolve import RESULTS


def parse_overrides(items: list[str] | None) -> dict[str, float]:
    """``--set NAME=VALUE`` items -> {name: value}; names are PARAM_NAMES."""
    out: dict[str, float] = {}
    for item in items or []:
        name, _, value = item.partition("=")
        if name not in PARAM_NAMES:
            raise UserError(f"--set {item!r}: unknown parameter; known: {', '.join(PARAM_NAMES)}")
        try:
            out[name] = float(value)
        except ValueError:
            raise UserError(f"--set {item!r}: {value!r} is not a number") from None
    return out


def resolve_params(gpu: GPU, params_path: str | None, overrides: list[str] | None = None) -> ParamSet:
    """Fitted parameters from --params or results/<gpu>/params.json, else descriptor
    defaults; ``--set`` overrides on top."""
    path = Path(params_path) if params_path else RESULTS / gpu.slug / "params.json"
    if params_path and not path.is_file():
        raise UserError(f"{path}: parameters file not found")
    pset = ParamSet.load(path, gpu) if path.is_file() else ParamSet(gpu)
    pset.overrides.update(parse_overrides(overrides))
    return pset


def add_gpu_flags(p) -> None:
    p.add_argument("--gpu", default="auto", help="catalog slug, hardware.json, or auto (probe)")
    p.add_argument("--params", help="parameters JSON (default results/<gpu>/params.json if present)")
    add_set_flag(p)


def add_set_flag(p) -> None:
    p.add_argument("--set", action="append", metavar="NAME=VALUE",
                   help="override one model parameter (every family and dtype); repeatable")
