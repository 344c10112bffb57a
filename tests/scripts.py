"""Load a script of benchmarks/ as a module, for tests of its functions."""

from __future__ import annotations

import importlib.util
from pathlib import Path


def load_script(path: Path, name: str | None = None):
    """The module of the script at ``path`` (imported afresh, under ``name`` or its stem)."""
    spec = importlib.util.spec_from_file_location(name or path.stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
