"""Random problem shapes, reproducible from a seed: testlists of shapes nobody chose.

Sizes are drawn log-uniformly (every octave equally likely, so decode-like M = 1..8
and huge K are as common as the middle), then each size is kept as drawn or rounded,
so that odd sizes, primes and sizes with N % 8 != 0 sit beside the aligned sizes real
models use. Only ``random.Random(seed).random()`` is used, whose sequence Python keeps
stable across versions, so a seed names one list for good.
"""

from __future__ import annotations

import math
import random

from .problem import Shape, flops_error

# how a drawn size is rounded, with its probability: the first that the cumulative
# share passes is taken
ROUNDINGS = (("multiple of 64", 0.40), ("multiple of 8", 0.20), ("as drawn", 0.28), ("prime", 0.12))


def _is_prime(x: int) -> bool:
    if x < 2:
        return False
    return all(x % p for p in range(2, math.isqrt(x) + 1))


def _next_prime(x: int) -> int:
    while not _is_prime(x):
        x += 1
    return x


def log_uniform(rng: random.Random, lo: int, hi: int) -> int:
    """An integer in [lo, hi], log-uniform."""
    return min(hi, int(math.exp(math.log(lo) + rng.random() * (math.log(hi + 1) - math.log(lo)))))


def rounded(rng: random.Random, x: int, lo: int, hi: int) -> int:
    """``x`` rounded by a ROUNDINGS draw, kept in [lo, hi] (a rounding that would leave
    the range keeps ``x`` as drawn)."""
    u, kind = rng.random(), ROUNDINGS[-1][0]
    for name, share in ROUNDINGS:
        u -= share
        if u < 0:
            kind = name
            break
    if kind == "multiple of 64":
        y = 64 * max(1, round(x / 64))
    elif kind == "multiple of 8":
        y = 8 * max(1, round(x / 8))
    elif kind == "prime":
        y = _next_prime(max(2, x))
    else:
        y = x
    return y if lo <= y <= hi else x


def random_shapes(seed: int, count: int, m_range: tuple[int, int] = (1, 16384),
                  nk_range: tuple[int, int] = (16, 32768), dtype: str = "bf16") -> list[Shape]:
    """``count`` distinct shapes: M log-uniform in ``m_range``, N and K in ``nk_range``,
    each rounded by a ROUNDINGS draw; in the order drawn."""
    rng = random.Random(seed)
    out: dict[Shape, None] = {}
    while len(out) < count:
        m = rounded(rng, log_uniform(rng, *m_range), *m_range)
        n = rounded(rng, log_uniform(rng, *nk_range), *nk_range)
        k = rounded(rng, log_uniform(rng, *nk_range), *nk_range)
        if flops_error(m, n, k) is None:
            out.setdefault(Shape(m, n, k, dtype), None)
    return list(out)


def model_shapes(seed: int, count: int, projections: list[tuple[str, int, int]],
                 m_range: tuple[int, int] = (1, 8192), dtype: str = "bf16") -> list[tuple[str, Shape]]:
    """``count`` distinct (name, shape): a projection (name, N, K) drawn uniformly from
    ``projections``, M log-uniform in ``m_range`` (tokens in flight), half the time
    rounded to a power of two."""
    rng = random.Random(seed)
    out: dict[Shape, str] = {}
    while len(out) < count:
        name, n, k = projections[min(len(projections) - 1, int(rng.random() * len(projections)))]
        m = log_uniform(rng, *m_range)
        if rng.random() < 0.5:
            m = min(m_range[1], max(m_range[0], 2 ** round(math.log2(m))))
        shape = Shape(m, n, k, dtype)
        if flops_error(m, n, k) is None and shape not in out:
            out[shape] = name
    return [(name, shape) for shape, name in out.items()]
