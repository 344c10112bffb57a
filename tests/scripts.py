"""Load a script of benchmarks/ as a module, for tests of its functions; check a GPU
probe's runs."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path


def load_script(path: Path, name: str | None = None):
    """The module of the script at ``path`` (imported afresh, under ``name`` or its stem),
    its folder on the import path as when it is run (benchmarks' scripts import probes).
    While it runs it is in ``sys.modules`` under that name, as a script run is (a dataclass
    finds its module there), and whatever held the name before holds it again after."""
    if str(path.parent) not in sys.path:
        sys.path.append(str(path.parent))
    spec = importlib.util.spec_from_file_location(name or path.stem, path)
    module = importlib.util.module_from_spec(spec)
    before = sys.modules.get(spec.name)
    sys.modules[spec.name] = module
    try:
        spec.loader.exec_module(module)
    finally:
        if before is None:
            del sys.modules[spec.name]
        else:
            sys.modules[spec.name] = before
    return module


def config_of(run: dict):
    """The KernelConfig of a probe's task row (its other keys, m, n, k and labels, left out)."""
    from gemmperf.problem import KernelConfig

    return KernelConfig(**{k: v for k, v in run.items() if k in KernelConfig.__dataclass_fields__})


def refused(runs: list[dict], gpu) -> list[tuple[dict, str]]:
    """(run, why) for every run of ``runs`` whose configuration ``gpu`` cannot run."""
    from gemmperf.kernels import check_legal

    return [(run, why) for run in runs if (why := check_legal(config_of(run), gpu)) is not None]


def distinct(runs: list[dict]) -> int:
    """How many different runs ``runs`` holds."""
    return len({tuple(sorted(r.items())) for r in runs})
