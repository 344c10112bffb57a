"""A hash of the code each workflow stage runs, derived from its imports.

Snakemake reruns a job when its ``params`` change. The rules call the gemmperf command
line, whose code Snakemake cannot see; each carries ``code=code_hash(stage)`` in its
params, so editing a module reruns exactly the stages that import it (a change to
``models/`` reruns fit, accuracy, predict, optimize and report, never a measurement).

A stage is a command of the CLI (app.cli.COMMANDS); its code is the import closure of
the command's entry module, read from the source with ``ast`` (imports inside
functions included), every package ``__init__`` on the way, and the data files (.cu/.cuh kernel sources, .json, .html) in the folders of the
hashed modules' packages (and their subfolders that are not packages themselves).
The dispatcher (app/cli.py) is left out: it only routes argv to the entry module, and
hashing it would rerun every measurement when a command's help text changes.
"""

from __future__ import annotations

import ast
import hashlib
from functools import lru_cache
from pathlib import Path

from .cli import COMMANDS, entry_module

PACKAGE = Path(__file__).resolve().parent.parent  # src/gemmperf
ROOT_NAME = PACKAGE.name
DATA_SUFFIXES = (".cu", ".cuh", ".json", ".html")


def module_files(root: Path = PACKAGE) -> dict[str, Path]:
    """Dotted module name -> source file, for every module of the package."""
    out = {}
    for path in sorted(root.rglob("*.py")):
        if "__pycache__" in path.parts:
            continue
        parts = [root.name, *path.relative_to(root).with_suffix("").parts]
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = path
    return out


def _targets(mod: str, path: Path, node: ast.AST, known: dict[str, Path]) -> list[str]:
    """The package's modules one import statement names."""
    if isinstance(node, ast.Import):
        return [a.name for a in node.names]
    if not isinstance(node, ast.ImportFrom):
        return []
    base = node.module or ""
    if node.level:
        parts = mod.split(".") if path.name == "__init__.py" else mod.split(".")[:-1]
        parts = parts[: len(parts) - (node.level - 1)]
        base = ".".join(parts + ([node.module] if node.module else []))
    return [f"{base}.{a.name}" if f"{base}.{a.name}" in known else base for a in node.names]


def _with_parents(name: str, known: dict[str, Path]) -> list[str]:
    """``name`` and every package above it (importing a module runs their __init__)."""
    parts = name.split(".")
    return [p for p in (".".join(parts[:i]) for i in range(1, len(parts) + 1)) if p in known]


@lru_cache(maxsize=None)
def import_graph(root: Path = PACKAGE) -> dict[str, frozenset[str]]:
    """Module -> the package's modules it imports (anywhere in the file)."""
    known = module_files(root)
    graph = {}
    for mod, path in known.items():
        found = set()
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            for target in _targets(mod, path, node, known):
                if target.split(".")[0] == root.name:
                    found.update(_with_parents(target, known))
        graph[mod] = frozenset(found - {mod})
    return graph


def closure(entries: list[str], root: Path = PACKAGE) -> set[str]:
    """Every module of the package that importing ``entries`` can run."""
    graph = import_graph(root)
    todo = [p for e in entries for p in _with_parents(e, module_files(root))]
    seen: set[str] = set()
    while todo:
        mod = todo.pop()
        if mod not in seen:
            seen.add(mod)
            todo.extend(graph[mod])
    return seen


def _data_files(folder: Path) -> list[Path]:
    """Data files in ``folder`` and in its subfolders that are not packages."""
    out = [p for p in folder.iterdir() if p.is_file() and p.suffix in DATA_SUFFIXES]
    for sub in folder.iterdir():
        if sub.is_dir() and sub.name != "__pycache__" and not (sub / "__init__.py").exists():
            out += _data_files(sub)
    return out


def stage_modules(stage: str, root: Path = PACKAGE) -> set[str]:
    """The modules behind ``stage`` (a command of the CLI)."""
    if stage not in COMMANDS:
        raise KeyError(f"unknown stage {stage!r}; known: {', '.join(COMMANDS)}")
    return closure([entry_module(stage)], root)


def stage_files(stage: str, root: Path = PACKAGE) -> list[Path]:
    """The source and data files behind ``stage``, sorted."""
    files = module_files(root)
    sources = {files[m] for m in stage_modules(stage, root)}
    folders = {p.parent for p in sources}
    return sorted(sources | {d for f in folders for d in _data_files(f)})


@lru_cache(maxsize=None)
def code_hash(stage: str, root: Path = PACKAGE) -> str:
    """A short hash of the files ``stage`` runs (names and contents)."""
    h = hashlib.sha256()
    for path in stage_files(stage, root):
        h.update(path.relative_to(root).as_posix().encode() + b"\0")
        h.update(path.read_bytes() + b"\0")
    return h.hexdigest()[:16]
