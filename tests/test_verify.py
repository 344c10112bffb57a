"""The correctness check without a GPU: a stand-in runner holds A, B and C in numpy and
"launches" a kernel that writes a chosen C, so each of verify's rules is seen to fail on
the output it exists to catch (row padding, guard, unwritten, tolerance)."""

import dataclasses
from types import SimpleNamespace

import numpy as np
import pytest

from gemmperf.kernels import verify as V
from gemmperf.kernels.family import pad_n
from gemmperf.problem import KernelConfig

POISON = 0x7FFF


def bf16_bits(x: np.ndarray) -> np.ndarray:
    """float64 -> bf16 bit patterns (round to nearest even)."""
    f = np.ascontiguousarray(x, dtype=np.float32).view(np.uint32)
    return ((f + 0x7FFF + ((f >> 16) & 1)) >> 16).astype(np.uint16)


class FakeRunner:
    """GemmRunner's interface over numpy arrays; ``write(ref, c)`` plays the kernel:
    it gets the exact product and the poisoned C (m x ldc) and fills C."""

    def __init__(self, cfg, m, n, k, write, ldc=None):
        self.kernel = SimpleNamespace(config=cfg)
        self.m, self.n, self.k = m, n, k
        self.ldc = pad_n(n) if ldc is None else ldc
        self.osize, self.out_dtype, self.write = 2, cfg.out_dtype, write
        self.in_dtype, self.scales = cfg.dtype, (1.0, 1.0)

    def fill(self, seed):
        rng = np.random.default_rng(seed)
        self.a = V.decode(bf16_bits(rng.uniform(-1, 1, (self.m, self.k))), "bf16")
        self.b = V.decode(bf16_bits(rng.uniform(-1, 1, (self.n, self.k))), "bf16")

    def poison(self):
        self.c = np.full((self.m, self.ldc), POISON, dtype=np.uint16)
        self.guard = np.full(256, POISON, dtype=np.uint16)

    def launch(self):
        self.write(self.a @ self.b.T, self.c, self)

    def synchronize(self):
        pass

    def guard_raw(self):
        return self.guard

    def c_raw(self, row0=0, nrows=None, padded=False):
        rows = self.c[row0: self.m if nrows is None else row0 + nrows]
        return rows if padded else rows[:, : self.n]

    def rows(self, which, idx):
        return (self.a if which == "A" else self.b)[np.asarray(idx)]


def exact(ref, c, r):
    c[:, : r.n] = bf16_bits(ref)


def with_padding(value):
    def write(ref, c, r):
        exact(ref, c, r)
        c[:, r.n:] = value
    return write


TMA = KernelConfig("ws-hopper", "bf16", 128, 128, 64, 4, epilogue="tma")
DIRECT = KernelConfig("ws-hopper", "bf16", 128, 128, 64, 4)


def check(cfg, write, m=40, n=33, k=70, ldc=None):
    return V._verify(FakeRunner(cfg, m, n, k, write, ldc), samples=16, exhaustive=True, seed=5)


def test_a_correct_c_passes_and_padding_stays_poisoned():
    for cfg in (TMA, DIRECT):
        res = check(cfg, exact)
        assert res.ok, res.reason


def test_tma_stores_may_zero_the_padding_of_the_last_16_bytes():
    assert check(TMA, with_padding(0)).ok
    assert check(TMA, with_padding(0x8000)).ok  # -0.0


def test_anything_else_in_the_padding_fails():
    res = check(TMA, with_padding(0x3F80))  # 1.0 where the kernel computes zeros
    assert not res.ok and "row padding" in res.reason
    res = check(DIRECT, with_padding(0))  # the direct epilogue never writes past N
    assert not res.ok and "row padding" in res.reason
    # past the 16-byte chunk holding column N - 1 not even a TMA store may write
    res = check(TMA, with_padding(0), ldc=48)
    assert not res.ok and "row padding" in res.reason


def test_guard_unwritten_and_wrong_values_fail():
    def past_end(ref, c, r):
        exact(ref, c, r)
        r.guard[0] = 0

    def hole(ref, c, r):
        exact(ref, c, r)
        c[3, 5] = POISON

    def off(ref, c, r):
        exact(ref * 1.05, c, r)

    assert "past the end of C" in check(TMA, past_end).reason
    assert "never written" in check(TMA, hole).reason
    res = check(TMA, off)
    assert not res.ok and "out of tolerance" in res.reason


@pytest.mark.parametrize("k", [1, 2])
def test_tiny_fp16_products_round_on_the_subnormal_grid(k):
    """K = 1: products of two values in [-1, 1) can be subnormal in fp16, where rounding
    is absolute (2^-24), not relative: a correctly rounded C must pass."""
    cfg = KernelConfig("ws-hopper", "fp16", 128, 128, 64, 4)

    def fp16(ref, c, r):
        c[:, : r.n] = ref.astype(np.float16).view(np.uint16)

    runner = FakeRunner(cfg, 64, 64, k, fp16)
    runner.fill = lambda seed: (setattr(runner, "a", np.full((64, k), 2.0**-12)),
                                setattr(runner, "b", np.full((64, k), 1.5 * 2.0**-12)))
    res = V._verify(runner, samples=16, exhaustive=True, seed=1)
    assert res.ok, res.reason


def test_a_large_c_is_read_and_checked_by_its_sampled_rows(monkeypatch):
    """Past FULL_READ_LIMIT only the sampled rows come back: a wrong value in one of them
    fails, one in a row not sampled is not seen, and the verdict says how much was read."""
    monkeypatch.setattr(V, "FULL_READ_LIMIT", 0)

    def sampled(write):
        return V._verify(FakeRunner(TMA, 40, 33, 70, write), samples=8, exhaustive=False, seed=5)

    rng = np.random.default_rng(5)  # as _verify draws them: the rows, then the columns
    picked, cols = V._sample(40, 8, rng), V._sample(33, 8, rng)
    assert len(picked) < 40
    res = sampled(exact)
    assert res.ok and res.reason == f"{len(picked) * len(cols)} elements within tolerance"

    def wrong_row(row):
        def write(ref, c, r):
            exact(ref, c, r)
            c[row, :] = POISON
        return write

    res = sampled(wrong_row(int(picked[1])))
    assert not res.ok and f"({len(picked)} rows of C)" in res.reason
    assert sampled(wrong_row(next(i for i in range(40) if i not in picked))).ok


@pytest.mark.parametrize("mode, write, ok, reason", [
    ("load-only", lambda ref, c, r: None, True, "C untouched (all of C)"),
    ("load-only", exact, False, "load-only wrote"),
    ("epilogue-only", lambda ref, c, r: c.__setitem__((slice(None), slice(0, r.n)), 0x8000), True, "zeros (all of C)"),
    ("epilogue-only", exact, False, "non-zero elements"),
    ("math-only", exact, True, "written and finite (all of C)"),
])
def test_the_modes_that_do_not_compute_from_a_and_b_are_checked_by_their_bits(mode, write, ok, reason):
    res = check(dataclasses.replace(TMA, mode=mode), write)
    assert res.ok == ok and reason in res.reason
