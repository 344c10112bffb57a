"""Render a kernel source from a validated configuration, compile it with NVRTC
(through ``cuda.core``), cache the cubin on disk, and report its resource use.

The disk cache key is a hash of the source, the compile options, the NVRTC version
and the target architecture, so cubins compiled by one NVRTC are never loaded by a
machine with another.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import re
import tempfile
from dataclasses import asdict, dataclass, field
from pathlib import Path

from ..errors import UserError
from ..problem import KernelConfig
from ..progress import bar
from .driver import check
from .families import family_of

KERNEL_NAME = "gemm_kernel"
CACHE_FORMAT = 1


@dataclass(frozen=True)
class Resources:
    """What ptxas reported for the kernel."""

    registers: int
    static_smem: int  # bytes of static shared memory
    dynamic_smem: int  # bytes the launch asks for
    stack_frame: int
    spill_stores: int
    spill_loads: int
    threads: int
    warnings: tuple[str, ...] = ()

    @property
    def smem_total(self) -> int:
        return self.static_smem + self.dynamic_smem

    @property
    def spills(self) -> int:
        return self.spill_stores + self.spill_loads


@dataclass
class CompiledKernel:
    config: KernelConfig
    arch: str
    cubin: bytes
    resources: Resources
    key: str
    log: str = ""
    from_cache: bool = False
    # rows of one TMA box of A and of B the source was rendered for (TMA-operand families;
    # fixed at build time, so a probe knob turned later cannot change a built kernel's maps)
    boxes: tuple[int, int] | None = None
    _function: object = field(default=None, repr=False)
    _max_clusters: int | None = field(default=None, repr=False)  # launch.max_active_clusters
    _module: object = field(default=None, repr=False)

    @property
    def threads(self) -> int:
        return self.resources.threads

    @property
    def dynamic_smem(self) -> int:
        return self.resources.dynamic_smem

    def function(self):
        """The loaded ``CUfunction`` (needs a current CUDA context)."""
        if self._function is None:
            from cuda.bindings import driver as cu

            self._module = check(cu.cuModuleLoadData(self.cubin))
            self._function = check(cu.cuModuleGetFunction(self._module, KERNEL_NAME.encode()))
            if self.dynamic_smem > 48 * 1024:
                attr = cu.CUfunction_attribute.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES
                check(cu.cuFuncSetAttribute(self._function, attr, self.dynamic_smem))
        return self._function


def render(config: KernelConfig) -> str:
    """CUDA C++ source for ``config`` (integers and enums only go into it)."""
    config.validate()
    return family_of(config).render(config)


def nvrtc_version() -> tuple[int, int]:
    from cuda.bindings import nvrtc

    err, major, minor = nvrtc.nvrtcVersion()
    if int(err) != 0:
        raise RuntimeError(f"nvrtcVersion failed: {err}")
    return int(major), int(minor)


def cache_dir() -> Path:
    env = os.environ.get("GEMMPERF_CACHE")
    return Path(env) if env else Path.home() / ".cache" / "gemmperf"


def compile_options(config: KernelConfig, arch: str) -> dict:
    return {"arch": arch, "std": "c++17", "ptxas_options": ["-v"]}


_RE_REGS = re.compile(r"Used (\d+) registers")
_RE_SMEM = re.compile(r"(\d+) bytes smem")
_RE_FRAME = re.compile(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads")


def parse_ptxas(log: str) -> dict:
    """Registers, static shared memory, stack frame and spills from ``ptxas -v``."""
    regs = _RE_REGS.findall(log)
    smem = _RE_SMEM.findall(log)
    frame = _RE_FRAME.findall(log)
    if not regs:
        raise RuntimeError(f"no register count in the ptxas report:\n{log}")
    f = frame[-1] if frame else ("0", "0", "0")
    warnings = tuple(
        line.strip() for line in log.splitlines() if "warning" in line.lower() and "ptxas" in line.lower()
    )
    return {
        "registers": int(regs[-1]),
        "static_smem": int(smem[-1]) if smem else 0,
        "stack_frame": int(f[0]),
        "spill_stores": int(f[1]),
        "spill_loads": int(f[2]),
        "warnings": warnings,
    }


def _check_arch(config: KernelConfig, arch: str) -> None:
    m = re.fullmatch(r"sm_(\d+)(a?)", arch)
    if not m:
        raise UserError(f"arch {arch!r}: expected sm_XY or sm_XYa")
    family = family_of(config)
    if not family.runs_on_arch(arch):
        raise UserError(f"{config.key()}: {family.name} needs {family.arch_rule}, not {arch}")


def build(config: KernelConfig, arch: str, *, use_cache: bool = True, cache: Path | None = None) -> CompiledKernel:
    """Compile ``config`` for ``arch`` (e.g. ``sm_90a``), through the disk cache."""
    _check_arch(config, arch)
    source = render(config)
    family = family_of(config)
    options = compile_options(config, arch)
    ver = nvrtc_version()
    key = hashlib.sha256(
        json.dumps(
            {"source": source, "options": options, "nvrtc": ver, "arch": arch, "format": CACHE_FORMAT},
            sort_keys=True,
        ).encode()
    ).hexdigest()[:32]
    dyn = family.dynamic_smem(config)
    nthreads = family.threads(config)
    boxes = family.operand_boxes(config) if family.tma_operands else None
    root = cache if cache is not None else cache_dir()
    cubin_path = root / f"{key}.cubin"
    meta_path = root / f"{key}.json"
    if use_cache and cubin_path.is_file() and meta_path.is_file():
        try:
            meta = json.loads(meta_path.read_text())
            res = Resources(**{**meta["resources"], "warnings": tuple(meta["resources"]["warnings"])})
            return CompiledKernel(config, arch, cubin_path.read_bytes(), res, key, meta.get("log", ""), True, boxes)
        except (OSError, ValueError, KeyError, TypeError):
            pass  # a damaged entry is rebuilt
    cubin, log = _compile(source, options, config.key())
    if not _RE_REGS.search(log):
        # seen with cuda-core 1.2.0: a source compiled a second time in one process
        # came back with an empty log
        cubin, log = _compile_nvrtc(source, options, config.key())
    if not _RE_REGS.search(log):
        # seen with NVRTC 13.0 (the lent H200's): a log holding a front-end warning (an
        # unused variable of a probe mode) came back without ptxas's report; the same
        # compile with the warnings off writes it (the same code: the cubin differs only in
        # its note of the compile's options)
        cubin, log = _compile_nvrtc(source, {**options, "disable_warnings": True}, config.key())
    parsed = parse_ptxas(log)
    res = Resources(dynamic_smem=dyn, threads=nthreads, **parsed)
    kernel = CompiledKernel(config, arch, cubin, res, key, log, False, boxes)
    if use_cache:
        try:
            root.mkdir(parents=True, exist_ok=True)
            _atomic_write(cubin_path, cubin)
            meta = {"config": config.as_dict(), "arch": arch, "nvrtc": ver, "resources": asdict(res), "log": log}
            _atomic_write(meta_path, json.dumps(meta, indent=1).encode())
        except OSError:
            pass  # an unwritable cache only costs time
    return kernel


def _build_one(config: KernelConfig, arch: str) -> str | None:
    """Compile one configuration into the disk cache; its error as one line, or None."""
    try:
        build(config, arch)
    except Exception as err:
        return (f"{type(err).__name__}: {err}".splitlines() or [""])[0][:300]
    return None


def _ignore_sigint() -> None:
    """Compile processes leave Ctrl-C to the parent, which stops them."""
    import signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)


def build_all(configs: list[KernelConfig], arch: str, jobs: int = 1) -> dict[str, str]:
    """Compile every configuration into the disk cache, ``jobs`` NVRTC processes at once,
    with a progress bar; returns {config key: error line} of those that failed."""
    failed: dict[str, str] = {}
    with bar(total=len(configs), desc=f"compiling kernels for {arch}", unit="kernel") as shown:
        if jobs <= 1 or len(configs) <= 1:
            for cfg in configs:
                err = _build_one(cfg, arch)
                if err:
                    failed[cfg.key()] = err
                shown.update()
            return failed
        import multiprocessing as mp
        from concurrent.futures import ProcessPoolExecutor, as_completed

        pool = ProcessPoolExecutor(jobs, mp_context=mp.get_context("spawn"), initializer=_ignore_sigint)
        try:
            futures = {pool.submit(_build_one, c, arch): c for c in configs}
            for fut in as_completed(futures):
                try:
                    err = fut.result()
                except Exception as exc:  # a compile process that died: the worker retries it
                    err = f"{type(exc).__name__}: {exc}"
                if err:
                    failed[futures[fut].key()] = err
                shown.update()
        except BaseException:  # Ctrl-C: the queued compiles are dropped, not waited for
            pool.shutdown(wait=False, cancel_futures=True)
            raise
        pool.shutdown()
    return failed


def _atomic_write(path: Path, data: bytes) -> None:
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.name, suffix=".tmp")
    with os.fdopen(fd, "wb") as fh:
        fh.write(data)
    os.replace(tmp, path)


def compile_source(source: str, arch: str, name: str) -> bytes:
    """Compile a helper source (no config) to a cubin, through the disk cache."""
    options = {"arch": arch, "std": "c++17"}
    key = hashlib.sha256(
        json.dumps({"source": source, "options": options, "nvrtc": nvrtc_version(), "arch": arch}).encode()
    ).hexdigest()[:32]
    path = cache_dir() / f"{name}-{key}.cubin"
    if path.is_file():
        return path.read_bytes()
    cubin, _ = _compile(source, options, name)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        _atomic_write(path, cubin)
    except OSError:
        pass
    return cubin


def _compile_nvrtc(source: str, options: dict, name: str) -> tuple[bytes, str]:
    """Compile through cuda.bindings.nvrtc directly (same options as ``_compile``)."""
    from cuda.bindings import nvrtc

    def ok(result):
        err, *rest = result if isinstance(result, tuple) else (result,)
        if int(err) != 0:
            raise RuntimeError(f"NVRTC error {err} for {name}")
        return rest[0] if rest else None

    prog = ok(nvrtc.nvrtcCreateProgram(source.encode(), f"{name}.cu".encode(), 0, [], []))
    try:
        opts = [f"--gpu-architecture={options['arch']}".encode(), f"--std={options['std']}".encode()]
        opts += [f"--ptxas-options={o}".encode() for o in options.get("ptxas_options", [])]
        opts += [b"--disable-warnings"] if options.get("disable_warnings") else []
        err = nvrtc.nvrtcCompileProgram(prog, len(opts), opts)[0]
        size = int(ok(nvrtc.nvrtcGetProgramLogSize(prog)))
        buf = b" " * (size + 2)  # never a 1-byte (interned) bytes object
        ok(nvrtc.nvrtcGetProgramLog(prog, buf))
        log = buf[:size].rstrip(b"\0 ").decode(errors="replace")
        if int(err) != 0:
            raise RuntimeError(f"NVRTC failed for {name} ({options['arch']}): {err}\n{log}")
        csize = int(ok(nvrtc.nvrtcGetCUBINSize(prog)))
        cbuf = b" " * (csize + 2)
        ok(nvrtc.nvrtcGetCUBIN(prog, cbuf))
        return bytes(cbuf[:csize]), log
    finally:
        nvrtc.nvrtcDestroyProgram(prog)


def _compile(source: str, options: dict, name: str) -> tuple[bytes, str]:
    from cuda.core import Program, ProgramOptions

    opts = ProgramOptions(name=name, **options)
    prog = Program(source, "c++", options=opts)
    logs = io.StringIO()
    try:
        obj = prog.compile("cubin", logs=logs)
    except Exception as err:  # NVRTC reports errors through an exception
        raise RuntimeError(f"NVRTC failed for {name} ({options['arch']}): {err}\n{logs.getvalue()}") from err
    finally:
        try:
            prog.close()
        except Exception:
            pass
    code = obj.code
    if not isinstance(code, (bytes, bytearray)):
        code = bytes(code)
    return bytes(code), logs.getvalue()
