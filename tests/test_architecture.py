"""The shape of the code (docs/ARCHITECTURE.md): layers, no import cycles, small units.

Layers, top to bottom: the application (``gemmperf.app``: command line, workflow glue)
-> stages (bench, fit, optimize, report, predictions) -> models and kernels -> core
(errors, hardware, problem, params, tables). A module imports its own layer or lower,
never higher; no module-level import cycle; gemmperf's own modules are imported at the
top of a file, where the import graph can be read, not inside functions.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "src" / "gemmperf"

# first dotted component below gemmperf -> layer (higher imports lower)
LAYERS = {
    "app": 4, "__main__": 4,
    "bench": 3, "fit": 3, "optimize": 3, "report": 3, "predictions": 3,
    "models": 2, "kernels": 2,
    "errors": 1, "hardware": 1, "problem": 1, "params": 1, "tables": 1, "intervals": 1, "configs": 1, "progress": 1, "csvfile": 1, "shapegen": 1,
    "__init__": 0,
}
MAX_FUNCTION_LINES = 80
MAX_MODULE_LINES = 600


def module_name(path: Path) -> str:
    rel = path.relative_to(PACKAGE.parent).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def modules() -> dict[str, Path]:
    return {module_name(p): p for p in sorted(PACKAGE.rglob("*.py")) if "__pycache__" not in p.parts}


def _resolve(mod: str, path: Path, node: ast.ImportFrom, known: set[str]) -> list[str]:
    """The gemmperf modules an ``import``/``from`` statement names."""
    if node.level:
        base = mod.split(".")
        if path.name != "__init__.py":
            base = base[:-1]
        base = base[: len(base) - (node.level - 1)]
        target = ".".join(base + ([node.module] if node.module else []))
    else:
        target = node.module or ""
    if not target.startswith("gemmperf"):
        return []
    out = []
    for alias in node.names:
        sub = f"{target}.{alias.name}"
        out.append(sub if sub in known else target)
    return out


def imports(top_level_only: bool = False) -> dict[str, set[str]]:
    """module -> the gemmperf modules it imports (anywhere, or at module level only)."""
    mods = modules()
    known = set(mods)
    graph: dict[str, set[str]] = {}
    for mod, path in mods.items():
        tree = ast.parse(path.read_text())
        nodes = tree.body if top_level_only else list(ast.walk(tree))
        found: set[str] = set()
        for node in nodes:
            if isinstance(node, ast.ImportFrom):
                found.update(_resolve(mod, path, node, known))
            elif isinstance(node, ast.Import):
                found.update(a.name for a in node.names if a.name.startswith("gemmperf"))
        graph[mod] = {m for m in found if m != mod}
    return graph


def layer(mod: str) -> int:
    parts = mod.split(".")
    key = parts[1] if len(parts) > 1 else "__init__"
    assert key in LAYERS, f"{mod}: not assigned to a layer in tests/test_architecture.py"
    return LAYERS[key]


def test_every_module_has_a_layer():
    for mod in modules():
        layer(mod)


def test_nothing_imports_upward():
    bad = [f"{a} (layer {layer(a)}) imports {b} (layer {layer(b)})"
           for a, deps in imports().items() for b in deps
           if layer(b) > layer(a) and not b == "gemmperf"]
    assert not bad, "\n".join(bad)


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    index, low, stack, on, out = {}, {}, [], set(), []
    counter = [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in graph.get(v, ()):
            if w not in graph:
                continue
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def test_no_import_cycles():
    graph = {m: {d for d in deps if not m.startswith(d + ".")} for m, deps in imports().items()}
    assert not _cycles(graph), _cycles(graph)


def test_cycle_finder_finds_a_cycle():
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert _cycles({"a": {"b"}, "b": set()}) == []


def test_own_modules_imported_at_the_top():
    everywhere, top = imports(), imports(top_level_only=True)
    hidden = sorted(f"{m} imports {d} inside a function" for m in everywhere for d in everywhere[m] - top[m])
    assert not hidden, "\n".join(hidden)


def _functions(tree):
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            yield node


@pytest.mark.parametrize("mod", sorted(modules()))
def test_small_units(mod):
    path = modules()[mod]
    text = path.read_text()
    lines = text.count("\n")
    assert lines <= MAX_MODULE_LINES, f"{path.name}: {lines} lines (at most {MAX_MODULE_LINES})"
    long = [f"{f.name} ({f.end_lineno - f.lineno + 1} lines)" for f in _functions(ast.parse(text))
            if f.end_lineno - f.lineno + 1 > MAX_FUNCTION_LINES]
    assert not long, f"{path.name}: functions over {MAX_FUNCTION_LINES} lines: {', '.join(long)}"
