"""Speed of light: the GPU's peak math rate or its DRAM bandwidth, whichever binds.

    predicted_us = max(math_us, dram_us)
    math_us = 2*M*N*K / peak FLOP/s   (tensor cores where the family uses them)
    dram_us = bytes / DRAM bytes/s,  bytes = (M*K + K*N) * in_bytes + M*N * out_bytes
              + block-scale factors of A and B (nvfp4: 1 byte per 16 elements)

Each byte of A, B and C moves once and no tile, wave or latency is counted, so this
is a lower bound that real kernels approach only for large, well-shaped problems. It is
the same bound for split-K and stream-K, whose fp32 partials stay in L2 (C's bytes are
those of ``out_dtype``: bf16 for fp8 inputs).

Columns: predicted_us, limiter ("math" or "dram"), math_us, dram_us.
"""

from __future__ import annotations

import sys

import numpy as np

from . import columns

NAME = "sol"
LIMITERS = ("math", "dram")
INPUTS = ("m", "n", "k", "in_bytes", "out_bytes", "sf_bytes_per_elem",
          "peak_flops_per_us", "dram_bytes_per_us")


def evaluate(m, n, k, in_bytes, out_bytes, sf_bytes_per_elem, peak_flops_per_us,
             dram_bytes_per_us) -> dict[str, np.ndarray]:
    m, n, k = (np.asarray(x, dtype=np.float64) for x in (m, n, k))
    math_us = 2.0 * m * n * k / peak_flops_per_us
    nbytes = (m * k + k * n) * (in_bytes + sf_bytes_per_elem) + m * n * out_bytes
    dram_us = nbytes / dram_bytes_per_us
    return {
        "predicted_us": np.maximum(math_us, dram_us),
        "limiter": np.asarray(dram_us > math_us, dtype=np.int8),
        "math_us": math_us,
        "dram_us": dram_us,
    }


def predict(configs, params):
    return columns.run(configs, params, sys.modules[__name__])
