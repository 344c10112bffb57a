"""Which of gemmperf's own files each workflow stage runs, and a hash of them.

Snakemake reruns a job when its ``params`` change. The shell rules call the gemmperf
command line, whose code Snakemake cannot see; each carries ``code=code_hash(stage)`` in
its params, so editing the library reruns exactly the stages that use the edited files
(a change to ``models/`` reruns fit, accuracy, predict, optimize and report, never a
measurement). Paths are relative to the gemmperf package; a folder means every source
file in it (``.py``, and the kernels' ``.cu`` / ``.cuh`` templates).
"""

from __future__ import annotations

import hashlib
from functools import lru_cache
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent
SUFFIXES = (".py", ".cu", ".cuh", ".json")

_MEASURE = ["bench/measure.py", "bench/timing.py", "bench/device.py", "bench/sweep.py",
            "kernels", "hardware.py", "problem.py", "errors.py"]
_MODEL = ["models", "params.py", "hardware.py", "problem.py", "configs.py", "predictions.py",
          "kernels/space.py", "errors.py"]

STAGE_CODE: dict[str, list[str]] = {
    "hardware": ["hardware.py", "errors.py"],
    "microbench": ["bench/microbench.py", *_MEASURE],
    "collect": ["bench/collect.py", *_MEASURE],
    "merge": ["bench/merge.py", "bench/sweep.py"],
    "fit": ["fit", *_MODEL],
    "accuracy": ["fit", *_MODEL],
    "predict": ["fit/residual.py", *_MODEL],
    "optimize": ["optimize", *_MODEL],
    "report": ["report", "models/ws_stage.py", "params.py", "hardware.py", "problem.py"],
}


def stage_files(stage: str, root: Path = PACKAGE) -> list[Path]:
    """The source files behind ``stage``, sorted."""
    if stage not in STAGE_CODE:
        raise KeyError(f"unknown stage {stage!r}; known: {', '.join(STAGE_CODE)}")
    files: set[Path] = set()
    for rel in STAGE_CODE[stage]:
        path = root / rel
        if path.is_dir():
            files.update(p for p in path.rglob("*") if p.is_file() and p.suffix in SUFFIXES
                         and "__pycache__" not in p.parts)
        elif path.is_file():
            files.add(path)
    return sorted(files)


@lru_cache(maxsize=None)
def code_hash(stage: str, root: Path = PACKAGE) -> str:
    """A short hash of the files ``stage`` runs (names and contents)."""
    h = hashlib.sha256()
    for path in stage_files(stage, root):
        h.update(path.relative_to(root).as_posix().encode() + b"\0")
        h.update(path.read_bytes() + b"\0")
    return h.hexdigest()[:16]
