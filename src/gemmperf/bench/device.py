"""The GPU's identity and clocks as the measurement found them (never changed)."""

from __future__ import annotations

import shutil
import subprocess

from ..hardware import probe
from ..kernels.builder import nvrtc_version
from ..kernels.driver import compute_arch

_NVML: dict = {}


def _nvml_handle(index: int):
    """NVML initialised once per process (nvmlInit costs tens of milliseconds)."""
    if index not in _NVML:
        import pynvml

        pynvml.nvmlInit()
        _NVML[index] = (pynvml, pynvml.nvmlDeviceGetHandleByIndex(index))
    return _NVML[index]


def sm_clock_mhz(index: int = 0) -> float | None:
    """Current SM clock through NVML (nvidia-ml-py) when available, else nvidia-smi."""
    try:
        pynvml, handle = _nvml_handle(index)
        return float(pynvml.nvmlDeviceGetClockInfo(handle, pynvml.NVML_CLOCK_SM))
    except Exception:
        pass
    if shutil.which("nvidia-smi"):
        try:
            out = subprocess.run(
                ["nvidia-smi", f"--id={index}", "--query-gpu=clocks.sm", "--format=csv,noheader,nounits"],
                capture_output=True, text=True, timeout=10,
            ).stdout.strip()
            return float(out.splitlines()[0])
        except (ValueError, IndexError, OSError, subprocess.SubprocessError):
            return None
    return None


def card_identity(index: int = 0) -> str | None:
    """Which physical card this is: "GPU-<uuid>, serial <n>" through NVML or nvidia-smi;
    None where neither answers. Lent machines hand out different cards of one model, and
    two runs of the same configurations differ more than one process repeats itself
    (benchmarks/results/repeat/; whether by card was not separated), so a sweep's log
    names its card."""
    try:
        pynvml, handle = _nvml_handle(index)
        uuid, serial = pynvml.nvmlDeviceGetUUID(handle), pynvml.nvmlDeviceGetSerial(handle)
        text = lambda v: v.decode() if isinstance(v, bytes) else str(v)  # noqa: E731
        return f"{text(uuid)}, serial {text(serial)}"
    except Exception:
        pass
    if shutil.which("nvidia-smi"):
        try:
            out = subprocess.run(["nvidia-smi", f"--id={index}", "--query-gpu=uuid,serial", "--format=csv,noheader"],
                                 capture_output=True, text=True, timeout=10).stdout.strip()
            uuid, serial = (f.strip() for f in out.splitlines()[0].split(","))
            return f"{uuid}, serial {serial}"
        except (OSError, subprocess.SubprocessError, IndexError, ValueError):
            return None
    return None


def nvidia_driver() -> str | None:
    """The NVIDIA driver version (e.g. 580.159.04), through NVML or nvidia-smi."""
    try:
        import pynvml

        pynvml.nvmlInit()
        try:
            v = pynvml.nvmlSystemGetDriverVersion()
            return v.decode() if isinstance(v, bytes) else str(v)
        finally:
            pynvml.nvmlShutdown()
    except Exception:
        pass
    if shutil.which("nvidia-smi"):
        try:
            out = subprocess.run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
                                 capture_output=True, text=True, timeout=10).stdout.strip()
            return out.splitlines()[0] if out else None
        except (OSError, subprocess.SubprocessError, IndexError):
            return None
    return None


def measurement_context(gpu) -> dict:
    """Fields recorded in every measurement row: which GPU, driver and CUDA."""
    from cuda.bindings import driver as cu

    err, version = cu.cuDriverGetVersion()
    major, minor = nvrtc_version()
    return {
        "gpu": gpu.slug,
        "device": gpu.name,
        "driver": nvidia_driver() or "unknown",
        "cuda": f"driver API {version // 1000}.{(version % 1000) // 10}, NVRTC {major}.{minor}",
    }


def local_arch(index: int = 0) -> str:
    """The architecture the kernels are compiled for on the local GPU (the rule of
    kernels.driver.compute_arch), read without creating a context. Without a CUDA driver
    or device: hardware.NoGPU, the one-line "no GPU" message."""
    probe(index)
    return compute_arch(index)
