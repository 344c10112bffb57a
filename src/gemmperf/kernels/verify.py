"""Checking kernel output against a float64 host reference.

Every check draws fresh random inputs on the device (uniform in [-1, 1), never
zeros), poisons C and a guard region after it with NaN, launches once, and reads back.

``full`` mode: on sampled elements (a grid of sampled rows x sampled columns, all of
them for small shapes), each element must satisfy

    |c - ref| <= tol_out * |ref| + tol_acc * sum_k |a_k * b_k|

where ref is the float64 product of the very (bf16/fp16/fp32) inputs the kernel read,
tol_out is the output rounding (2^-8 bf16, 2^-11 fp16, 2^-22 fp32, each with a
factor-of-2 margin over half an ulp), tol_acc = 2^-18 is room for fp32 accumulation
order, and one step of the output's subnormal grid is added (2^-24 for fp16: tiny
products round on an absolute grid). The norm-relative error ||c - ref|| / ||ref|| over the samples is reported.
Every element read back must be finite (NaN poison left = element never written), and
the guard after C must be untouched; so must the row padding between N and C's leading
dimension, except that a kernel whose stores go out in whole 16-byte chunks (the TMA
epilogue: the tensor engine clips at 16 bytes, not at N) may write exact zeros there in
full mode, which is what it computes past N from B's zero-filled rows.

Other modes check what they promise: ``load-only`` and ``empty`` leave C untouched,
``epilogue-only`` writes exact zeros everywhere in C, ``math-only`` writes every
element with a finite value (it multiplies a fixed resident pattern, not A and B).
"""

from __future__ import annotations

import os
from typing import NamedTuple

import numpy as np

from .families import family_of
from .launch import GemmRunner, decode

TOL_OUT = {"bf16": 2.0**-8, "fp16": 2.0**-11, "fp32": 2.0**-22}
# one step of the output type's subnormal grid: near zero its rounding is absolute
TOL_SUB = {"bf16": 2.0**-133, "fp16": 2.0**-24, "fp32": 2.0**-149}
TOL_ACC = 2.0**-18
# fp8 (e4m3) inputs: the tensor cores add each k32 block of products to the accumulator
# with fewer bits than fp32 (about 14 are kept, as DeepSeek-V3's report measured on the
# H800). Measured on the H100 (benchmarks/fp8_accuracy.py, 256 x 256 outputs each), the
# error beyond the bf16 output's rounding grows with K, slower than sqrt(K): at most
# 2^-13.8 of sum_k |a_k b_k| at K = 512, 2^-12.7 at 4096, 2^-11.3 at 65536 (bf16 inputs:
# 2^-20.6 at 65536). 2^-10 leaves a factor of 2.5 at K = 65536 and catches a lost k-block
# of 128 up to K = 65536 (2^-9 of the sum).
TOL_ACC_INPUT = {"fp8": 2.0**-10}
FULL_READ_LIMIT = 1 << 26  # read all of C up to this many elements
EXHAUSTIVE_LIMIT = 1 << 20  # check every element when M*N is at most this (and K small)


class VerifyResult(NamedTuple):
    ok: bool
    max_rel_err: float  # norm-relative error over the checked elements (full mode), else 0
    reason: str


def _sample(count: int, limit: int, rng) -> np.ndarray:
    if count <= limit:
        return np.arange(count)
    picks = rng.choice(count, size=limit - 2, replace=False)
    return np.unique(np.concatenate([picks, [0, count - 1]]))


def verify(kernel, m: int, n: int, k: int, *, runner: GemmRunner | None = None, samples: int = 64,
           exhaustive: bool | None = None, seed: int | None = None) -> VerifyResult:
    """Check ``kernel`` on an ``m x n x k`` problem; see the module docstring."""
    own = runner is None
    if own:
        runner = GemmRunner(kernel, m, n, k)
    try:
        return _verify(runner, samples, exhaustive, seed)
    finally:
        if own:
            runner.close()


def _padding_written(r: GemmRunner, pad: np.ndarray, mode: str, poison: int) -> int:
    """Elements of C's row padding (columns N .. ldc - 1) written against the rules.

    A kernel whose stores go out in whole 16-byte chunks may write the chunk holding
    column N - 1 (with zeros in full mode, anything in the modes that do not compute from
    A and B), nothing past it; any other kernel writes no padding at all."""
    written = pad != poison
    if not family_of(r.kernel.config).writes_c_padding(r.kernel.config):
        return int(np.count_nonzero(written))
    chunk = 16 // r.osize
    inside = -(-r.n // chunk) * chunk - r.n
    sign_off = 0x7FFF if r.osize == 2 else 0x7FFFFFFF
    bad_inside = written[:, :inside] & ((pad[:, :inside] & sign_off) != 0) if mode == "full" else 0
    return int(np.count_nonzero(bad_inside)) + int(np.count_nonzero(written[:, inside:]))


def _verify(r: GemmRunner, samples: int, exhaustive: bool | None, seed: int | None) -> VerifyResult:
    m, n, k = r.m, r.n, r.k
    mode = r.kernel.config.mode
    seed = int.from_bytes(os.urandom(4), "little") if seed is None else seed
    rng = np.random.default_rng(seed)
    r.fill(seed)
    r.poison()
    r.launch()
    r.synchronize()

    poison = 0x7FFF if r.osize == 2 else 0x7FFFFFFF
    guard = r.guard_raw()
    if np.any(guard != poison):
        return VerifyResult(False, float("nan"), f"wrote past the end of C ({int(np.sum(guard != poison))} guard elements)")

    if exhaustive is None:
        exhaustive = m * n <= EXHAUSTIVE_LIMIT and m * n * k <= (1 << 31)
    rows = np.arange(m) if exhaustive else _sample(m, samples, rng)
    cols = np.arange(n) if exhaustive else _sample(n, samples, rng)
    padded = _read_rows(r, rows)
    pad_written = _padding_written(r, padded[:, n:], mode, poison)
    if pad_written:
        return VerifyResult(False, float("nan"), f"wrote {pad_written} elements of C's row padding "
                                                 f"(columns {n}..{r.ldc - 1})")
    verdict = _bit_checks(r, padded[:, :n], mode, poison)  # every row read back
    if verdict is not None:
        return verdict
    sampled_raw = padded[rows, :n] if padded.shape[0] == m else padded[:, :n]
    return _against_reference(r, sampled_raw, rows, cols, exhaustive)


def _read_rows(r: GemmRunner, rows: np.ndarray) -> np.ndarray:
    """C's raw bits with its row padding: all of C when small enough, else the rows sampled."""
    if r.m * r.ldc <= FULL_READ_LIMIT:
        return r.c_raw(padded=True)
    return np.stack([r.c_raw(int(i), 1, padded=True)[0] for i in rows])


def _bit_checks(r: GemmRunner, craw: np.ndarray, mode: str, poison: int) -> VerifyResult | None:
    """What the bit patterns of C (the rows read back, columns 0..N-1) show: a failure,
    the verdict of a mode that does not compute from A and B, or None to go on to the
    reference.
    They work on bits: decoding C to float64 would cost more than the kernel for large shapes."""
    what = "all of C" if craw.shape[0] == r.m else f"{craw.shape[0]} rows of C"
    if mode in ("load-only", "empty"):
        touched = int(np.sum(craw != poison))
        if touched:
            return VerifyResult(False, 0.0, f"{mode} wrote {touched} elements of C")
        return VerifyResult(True, 0.0, f"C untouched ({what})")
    exp_mask = {2: 0x7F80 if r.out_dtype == "bf16" else 0x7C00, 4: 0x7F800000}[r.osize]
    unwritten = int(np.count_nonzero(craw == poison))
    nonfinite = int(np.count_nonzero((craw & exp_mask) == exp_mask))
    if unwritten or nonfinite:
        return VerifyResult(False, float("nan"),
                            f"{unwritten} elements never written, {nonfinite} not finite ({what})")
    if mode == "epilogue-only":
        sign_off = 0x7FFF if r.osize == 2 else 0x7FFFFFFF
        nz = int(np.count_nonzero(craw & sign_off))  # +0 and -0 are both zero
        return VerifyResult(nz == 0, 0.0, f"{nz} non-zero elements" if nz else f"zeros ({what})")
    if mode == "math-only":
        return VerifyResult(True, 0.0, f"written and finite ({what})")
    return None


def _against_reference(r: GemmRunner, sampled_raw: np.ndarray, rows: np.ndarray, cols: np.ndarray,
                       exhaustive: bool) -> VerifyResult:
    """The sampled elements of C against the float64 product of the inputs the kernel read."""
    a = r.rows("A", rows)
    b = r.rows("B", cols)
    scale = r.scales[0] * r.scales[1]  # fp8's per-tensor scales (1 for the other types)
    ref = (a @ b.T) * scale
    absum = (np.abs(a) @ np.abs(b).T) * abs(scale)
    got = decode(sampled_raw, r.out_dtype)[:, cols]
    err = np.abs(got - ref)
    bound = TOL_OUT[r.out_dtype] * np.abs(ref) + TOL_ACC_INPUT.get(r.in_dtype, TOL_ACC) * absum + TOL_SUB[r.out_dtype]
    bad = err > bound
    norm_ref = float(np.linalg.norm(ref))
    rel = float(np.linalg.norm(got - ref) / norm_ref) if norm_ref > 0 else float(np.linalg.norm(got - ref))
    checked = f"{ref.size} elements{' (all)' if exhaustive else ''}"
    if np.any(bad):
        i, j = np.unravel_index(int(np.argmax(err / bound)), err.shape)
        return VerifyResult(False, rel, f"{int(bad.sum())} of {checked} out of tolerance; worst C[{rows[i]},{cols[j]}] "
                                        f"= {got[i, j]!r}, reference {ref[i, j]!r}")
    return VerifyResult(True, rel, f"{checked} within tolerance")
