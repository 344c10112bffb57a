"""What every command resolves the same way: the GPU, kernel families, NxN integers,
output files. User mistakes raise UserError (one line, exit 2). Standard library only
(``gemmperf hardware`` runs on the GPU machine)."""

from __future__ import annotations

import os
from pathlib import Path

from ..errors import UserError
from ..hardware import CATALOG, GPU, NoGPU, get_gpu, load_gpu, probe
from ..problem import FAMILIES

RESULTS = Path("results")
# The input dtype whose workflow files are under results/<gpu>/; another dtype D's are
# under results/<gpu>/D/ (app/plan.py: one chain per GPU and dtype, a "run").
BASE_DTYPE = "bf16"


def pairs_dtype(pairs) -> str:
    """The input dtype of (family, dtype) ``pairs`` whose workflow files hold them: the one
    tensor-core dtype among them (simt's fp32 is in every run), else bf16."""
    dtypes = {d for _, d in pairs if d != "fp32"}
    return dtypes.pop() if len(dtypes) == 1 else BASE_DTYPE


def run_name(slug: str, dtype: str = BASE_DTYPE) -> str:
    """The workflow's run of GPU ``slug`` in input dtype ``dtype``: its files are under
    results/<run>/. bf16 (and fp32, simt's, whose entries every run's params.json holds)
    is the GPU's own folder; any other dtype D a folder D in it."""
    return slug if dtype in (BASE_DTYPE, "fp32") else f"{slug}/{dtype}"


def shipped_data_dir(slug: str, dtype: str = BASE_DTYPE) -> Path:
    """The shipped data of ``dtype``: results/<gpu>/shipped/ for bf16, .../shipped/<dtype>/ otherwise."""
    return RESULTS / slug / "shipped" / Path(run_name(slug, dtype)).relative_to(slug)


def resolve_gpu(spec: str) -> GPU:
    """'auto' (probe the local GPU), a catalog slug, or a hardware.json path."""
    if spec == "auto":
        try:
            return probe()
        except NoGPU as err:
            raise UserError(f"{err}; pass --gpu with one of: {', '.join(CATALOG)}") from None
    if spec.endswith(".json"):
        return load_gpu(spec)
    shipped = RESULTS / spec / "hardware.json"
    if spec not in CATALOG and shipped.is_file():
        return load_gpu(shipped)
    return get_gpu(spec)


def parse_ints(text: str, what: str, n: int) -> list[int]:
    """'128x256x64' -> [128, 256, 64]: ``n`` positive integers joined by x."""
    try:
        values = [int(v) for v in text.lower().split("x")]
    except ValueError:
        values = []
    if len(values) != n or min(values) < 1:
        raise UserError(f"{what} {text!r}: expected {'x'.join(['N'] * n)} with positive integers")
    return values


def parse_families(text: str, allow_all: bool = False) -> list[str]:
    """Comma-separated kernel families, each one of FAMILIES (or 'all' when allowed)."""
    families = [f.strip() for f in text.split(",") if f.strip()]
    known = (*FAMILIES, "all") if allow_all else FAMILIES
    unknown = [f for f in families if f not in known]
    if unknown or not families:
        raise UserError(f"--families {text!r}: unknown {', '.join(unknown)}; known: {', '.join(known)}")
    return families


def write_text(path, text: str) -> None:
    """Write ``text`` to ``path``, creating its folder."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def output_path(path: str, suffixes: tuple[str, ...] | None = None) -> Path:
    """A file to write: not a folder, one of ``suffixes`` (if given); its folder created."""
    out = Path(path)
    if out.is_dir() or path.endswith(("/", os.sep)):
        raise UserError(f"{path}: is a folder; give a file name (e.g. {out / ('out' + (suffixes or ('.csv',))[0])})")
    if suffixes and out.suffix.lower() not in suffixes:
        raise UserError(f"{path}: unknown output format {out.suffix or '(no suffix)'!r}; "
                        f"use {', '.join(suffixes)}")
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise UserError(f"{path}: cannot create its folder ({err.strerror})") from None
    return out
