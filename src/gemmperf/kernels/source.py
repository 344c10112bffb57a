"""The CUDA files of the kernel families and the ``#define`` lines that configure them.

The CUDA code lives in ``.cu`` / ``.cuh`` files in this package (``prelude.cuh``: types,
mbarrier helpers and the raster order every family shares; ``hopper.cu``, ``ampere.cu``,
``simt.cu``: one kernel each; ``fill.cu``: the device-side random fill). Sources include
no headers at all (``cuda.h`` and ``cuda_bf16.h`` are not needed), so NVRTC compiles
them with no include path. A configuration reaches the source only as ``#define``
integers rendered from a validated :class:`~gemmperf.problem.KernelConfig`.
"""

from __future__ import annotations

import functools
from importlib import resources

from ..problem import DEFAULT_GROUP_M, KernelConfig


@functools.cache
def read(name: str) -> str:
    """The text of the CUDA file ``name`` in this package."""
    return resources.files(__package__).joinpath(name).read_text(encoding="utf-8")


MODE_IDS = {"full": 0, "load-only": 1, "math-only": 2, "epilogue-only": 3, "empty": 4}
RASTER_IDS = {"row": 0, "column": 1, "grouped": 2}
# Default tiles along M in one group of the grouped (swizzled) raster; a configuration's
# ``group_m`` is what the source gets.
GROUP_M = DEFAULT_GROUP_M

def defines(cfg: KernelConfig, **extra: int) -> str:
    """``#define`` lines for the values every family uses (integers only)."""
    values = {
        "BM": cfg.tile_m,
        "BN": cfg.tile_n,
        "BK": cfg.tile_k,
        "STAGES": cfg.stages,
        "PERSISTENT": int(cfg.persistent),
        "RASTER": RASTER_IDS[cfg.raster],
        "MODE": MODE_IDS[cfg.mode],
        "GROUP_M": cfg.group_m,
        "OUT_FP16": int(cfg.out_dtype == "fp16"),
    }
    values.update(extra)
    for key, value in values.items():
        if not isinstance(value, int) or isinstance(value, bool):
            raise TypeError(f"define {key} must be an int, got {value!r}")
    return "".join(f"#define {k} {v}\n" for k, v in values.items())


def assemble(cfg: KernelConfig, body: str, generated: str = "", **extra: int) -> str:
    """A family's source: the ``#define`` lines (``extra`` after the shared ones), the
    shared prelude, functions the family generates (``generated``), then ``body``."""
    return defines(cfg, **extra) + "\n" + read("prelude.cuh") + generated + "\n" + read(body)
