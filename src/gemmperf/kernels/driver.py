"""Errors of the CUDA driver API (cuda.bindings), unwrapped into exceptions, and the
architecture rule the kernels are compiled by."""

from __future__ import annotations


class CudaError(RuntimeError):
    pass


def check(result):
    """Unwrap a cuda.bindings ``(err, *values)`` tuple, raising on error."""
    if isinstance(result, tuple):
        err, rest = result[0], result[1:]
    else:
        err, rest = result, ()
    if int(err) != 0:
        from cuda.bindings import driver as cu

        name = ""
        try:
            _, s = cu.cuGetErrorString(err)
            name = s.decode() if s else ""
        except Exception:
            pass
        raise CudaError(f"CUDA error {err}: {name}")
    if not rest:
        return None
    return rest[0] if len(rest) == 1 else rest


def compute_arch(device: int = 0) -> str:
    """The architecture the kernels are compiled for on ``device`` (sm_90a on Hopper:
    wgmma and TMA need the arch-specific target). Needs cuInit, not a context."""
    from cuda.bindings import driver as cu

    dev = check(cu.cuDeviceGet(device))
    A = cu.CUdevice_attribute
    major = int(check(cu.cuDeviceGetAttribute(A.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev)))
    minor = int(check(cu.cuDeviceGetAttribute(A.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev)))
    return f"sm_{major}{minor}" + ("a" if major == 9 else "")
