"""Errors of the CUDA driver API (cuda.bindings), unwrapped into exceptions."""

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
