"""Real GEMM kernels, compiled at run time with NVRTC and launched through cuda-python.

Families: ``ws-hopper`` (TMA + wgmma, sm_90a), ``ws-ampere`` (cp.async + mma.sync,
sm_80+), ``simt`` (fp32 FFMA), each a :class:`~gemmperf.kernels.family.Family` object
(``hopper``, ``ampere``, ``simt``; the registry is ``families``) that owns its rules and
renders its ``.cu`` file from a validated :class:`~gemmperf.problem.KernelConfig`; see
``launch`` for the buffer layout and ``verify`` for the correctness check.

    from gemmperf.kernels import build, get_family
    from gemmperf.kernels.launch import GemmRunner, launch
    from gemmperf.kernels.verify import verify

This module imports only the standard library; ``launch`` and ``verify`` need numpy
and cuda-python, imported when used.
"""

from .builder import CompiledKernel, Resources, build, render
from .families import FAMILY_OBJECTS, check_legal, families_on, family_of, get_family, sweep_for_gpu
from .family import K_ALIGN_ELEMS, MAX_STAGES, Family, pad_k
from .source import GROUP_M

__all__ = [
    "CompiledKernel",
    "Resources",
    "build",
    "render",
    "FAMILY_OBJECTS",
    "Family",
    "GROUP_M",
    "K_ALIGN_ELEMS",
    "MAX_STAGES",
    "check_legal",
    "families_on",
    "family_of",
    "get_family",
    "pad_k",
    "sweep_for_gpu",
]
