"""Real GEMM kernels, compiled at run time with NVRTC and launched through cuda-python.

Families: ``ws-hopper`` (TMA + wgmma, sm_90a), ``ws-ampere`` (cp.async + mma.sync,
sm_80+), ``simt`` (fp32 FFMA). Sources are Python strings rendered from a validated
:class:`~gemmperf.problem.KernelConfig`; see ``launch`` for the buffer layout and
``verify`` for the correctness check.

    from gemmperf.kernels import build, legal_configs
    from gemmperf.kernels.launch import GemmRunner, launch
    from gemmperf.kernels.verify import verify

This module imports only the standard library; ``launch`` and ``verify`` need numpy
and cuda-python, imported when used.
"""

from .builder import CompiledKernel, Resources, build, render
from .space import check_legal, default_sweep, legal_configs, register_estimate, smem_bytes, sweep_for_gpu

__all__ = [
    "CompiledKernel",
    "Resources",
    "build",
    "render",
    "check_legal",
    "default_sweep",
    "legal_configs",
    "register_estimate",
    "smem_bytes",
    "sweep_for_gpu",
]
