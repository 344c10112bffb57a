"""Random testlists reproducible from a seed (gemmperf.shapegen) and the three lists made
from it (benchmarks/make_testlists.py: testlists/random.csv, sealed.csv and holdout.csv)."""

from __future__ import annotations

import math
import os
import random
import shutil
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from gemmperf import shapegen
from gemmperf.problem import Shape, flops_error, read_testlist
from gemmperf.shapegen import ROUNDINGS, log_uniform, model_shapes, random_shapes, rounded
from scripts import load_script

REPO = Path(__file__).resolve().parent.parent
MAKE = REPO / "benchmarks" / "make_testlists.py"


def sieve(n: int) -> set[int]:
    flags = [True] * (n + 1)
    flags[0] = flags[1] = False
    for p in range(2, math.isqrt(n) + 1):
        if flags[p]:
            flags[p * p::p] = [False] * len(flags[p * p::p])
    return {i for i, f in enumerate(flags) if f}


PRIMES = sieve(40000)


class FixedRng:
    """A stand-in for random.Random whose random() returns the given values in turn."""

    def __init__(self, *values):
        self.values = list(values)

    def random(self):
        return self.values.pop(0)


def kind(x: int) -> str:
    """The ROUNDINGS kind a size looks like (an 'as drawn' size may look like another)."""
    if x % 64 == 0:
        return "multiple of 64"
    if x % 8 == 0:
        return "multiple of 8"
    if x in PRIMES:
        return "prime"
    return "as drawn"


# ------------------------------------------------------------------ the generator


def test_roundings_are_a_probability_table():
    assert [name for name, _ in ROUNDINGS] == ["multiple of 64", "multiple of 8", "as drawn", "prime"]
    assert all(share > 0 for _, share in ROUNDINGS)
    assert sum(share for _, share in ROUNDINGS) == pytest.approx(1.0)


def test_is_prime_agrees_with_a_sieve():
    assert {x for x in range(0, 40001) if shapegen._is_prime(x)} == PRIMES


@pytest.mark.parametrize("u, x, want", [
    (0.10, 1000, 1024),   # multiple of 64 (nearest)
    (0.10, 1000 - 40, 960),
    (0.10, 20, 64),       # never rounded down to 0
    (0.45, 1003, 1000),   # multiple of 8 (0.40 <= u < 0.60)
    (0.45, 3, 8),
    (0.70, 1003, 1003),   # as drawn (0.60 <= u < 0.88)
    (0.90, 1000, 1009),   # next prime (u >= 0.88)
    (0.90, 1009, 1009),   # a prime stays
    (0.90, 1, 2),         # the smallest prime
    (0.9999999, 24, 29),
])
def test_rounded_follows_the_drawn_kind(u, x, want):
    assert rounded(FixedRng(u), x, 1, 100000) == want


@pytest.mark.parametrize("u, x, lo, hi", [
    (0.10, 20, 16, 40),    # 64 is above the range
    (0.10, 10, 1, 31),     # 64 again (x / 64 rounds to 0, so 64)
    (0.45, 3, 1, 4),       # 8 is above the range
    (0.90, 24, 16, 28),    # next prime 29 is above the range
])
def test_rounding_that_leaves_the_range_keeps_the_drawn_size(u, x, lo, hi):
    assert rounded(FixedRng(u), x, lo, hi) == x


def test_log_uniform_stays_in_range_and_weighs_octaves_equally():
    rng = random.Random(4)
    draws = [log_uniform(rng, 1, 16384) for _ in range(6000)]
    assert min(draws) >= 1 and max(draws) <= 16384
    # half the log range lies below sqrt(16385) ~ 128: about half the draws
    below = sum(d < 128 for d in draws) / len(draws)
    assert 0.45 < below < 0.55
    # every octave [2^i, 2^(i+1)) gets a share near 1/14 (a uniform draw would leave the
    # low octaves nearly empty)
    octaves = Counter(min(13, int(math.log2(d))) for d in draws)
    assert len(octaves) == 14
    assert all(0.04 < octaves[i] / len(draws) < 0.11 for i in range(1, 13)), octaves
    assert log_uniform(random.Random(0), 7, 7) == 7


def test_random_shapes_are_reproducible_from_their_seed():
    a = random_shapes(123, 80)
    assert a == random_shapes(123, 80)
    assert len(a) == 80 == len(set(a))
    assert all(isinstance(s, Shape) and s.dtype == "bf16" for s in a)
    # drawn in order: a shorter list is the start of a longer one
    assert random_shapes(123, 30) == a[:30]
    # another seed, another list
    b = random_shapes(124, 80)
    assert b != a and len(set(a) & set(b)) < 10
    assert {s.dtype for s in random_shapes(5, 5, dtype="fp8")} == {"fp8"}


@pytest.fixture(scope="module")
def many():
    return random_shapes(2024, 1500)


def test_random_shapes_respect_the_ranges(many):
    assert all(1 <= s.m <= 16384 and 16 <= s.n <= 32768 and 16 <= s.k <= 32768 for s in many)
    assert all(flops_error(s.m, s.n, s.k) is None for s in many)
    # the ranges are covered to their ends, log-uniformly
    ms, ks = [s.m for s in many], [s.k for s in many]
    assert min(ms) <= 2 and max(ms) >= 8192
    assert min(ks) <= 24 and max(ks) >= 16384
    # decode-like M <= 8 is common (log-uniform: ~23% drawn, some rounded up to 64);
    # a uniform draw would give 0.05%
    assert 0.08 < sum(m <= 8 for m in ms) / len(ms) < 0.3
    narrow = random_shapes(9, 100, m_range=(3, 40), nk_range=(100, 130))
    assert all(3 <= s.m <= 40 and 100 <= s.n <= 130 and 100 <= s.k <= 130 for s in narrow)


def test_random_shapes_mix_every_rounding(many):
    sizes = [x for s in many for x in (s.m, s.n, s.k)]
    seen = Counter(kind(x) for x in sizes)
    assert set(seen) == {name for name, _ in ROUNDINGS}
    share = {name: seen[name] / len(sizes) for name in seen}
    # each kind near its probability (multiples and primes also arise as drawn; small
    # sizes outside the range keep the drawn size)
    assert 0.35 < share["multiple of 64"] < 0.50
    assert 0.15 < share["multiple of 8"] < 0.30
    assert 0.10 < share["prime"] < 0.25
    assert 0.15 < share["as drawn"] < 0.35
    assert sum(s.n % 8 != 0 for s in many) > 0.2 * len(many)
    assert any(p > 1000 for p in sizes if p in PRIMES)


def test_model_shapes_draw_projections_and_tokens():
    projections = [("a qkv", 3072, 1024), ("a o", 1024, 1024), ("b up", 8192, 2048), ("b down", 2048, 8192)]
    out = model_shapes(11, 120, projections)
    assert out == model_shapes(11, 120, projections)
    assert out != model_shapes(12, 120, projections)
    assert len(out) == 120 and len({s for _, s in out}) == 120
    table = {name: (n, k) for name, n, k in projections}
    for name, s in out:
        assert (s.n, s.k) == table[name] and 1 <= s.m <= 8192 and s.dtype == "bf16"
    assert {name for name, _ in out} == set(table)  # every projection drawn
    small = model_shapes(3, 20, projections, m_range=(2, 64), dtype="fp16")
    assert all(2 <= s.m <= 64 and s.dtype == "fp16" for _, s in small)


def test_model_shapes_round_m_to_a_power_of_two_half_the_time():
    # many projections, so that distinct shapes seldom collide (a few projections have
    # only 14 power-of-two shapes each, and the repeats are dropped)
    projections = [(f"p{i}", 1024 + 64 * i, 4096 - 32 * i) for i in range(40)]
    out = model_shapes(5, 200, projections)
    pow2 = sum(s.m & (s.m - 1) == 0 for _, s in out) / len(out)
    assert 0.45 < pow2 < 0.7  # half rounded, plus the few drawn as one


# ------------------------------------------------------------------ the two testlists


def run_make(*args):
    env = {**os.environ, "PYTHONPATH": str(REPO / "src")}
    return subprocess.run([sys.executable, str(MAKE), *args], capture_output=True, text=True, env=env, timeout=120)


@pytest.fixture(scope="module")
def make():
    return load_script(MAKE, "make_testlists")


def test_check_passes_on_the_repository_testlists():
    run = run_make("--check")
    assert run.returncode == 0, run.stderr
    assert run.stderr == ""


def test_check_fails_on_a_changed_or_missing_testlist(tmp_path):
    for name in ("random.csv", "sealed.csv", "holdout.csv"):
        shutil.copy(REPO / "testlists" / name, tmp_path / name)
    run = run_make("--check", "--out", str(tmp_path))
    assert run.returncode == 0, run.stderr
    text = (tmp_path / "random.csv").read_text()
    first_row = text.splitlines()[4]
    m, n, k = map(int, first_row.split(","))
    (tmp_path / "random.csv").write_text(text.replace(first_row + "\n", f"{m},{n},{k + 1}\n", 1))
    run = run_make("--check", "--out", str(tmp_path))
    assert run.returncode == 1
    assert "random.csv" in run.stderr and "sealed.csv" not in run.stderr
    (tmp_path / "sealed.csv").unlink()
    run = run_make("--check", "--out", str(tmp_path))
    assert run.returncode == 1 and "sealed.csv" in run.stderr


def test_written_testlists_equal_the_repository_files(tmp_path):
    run = run_make("--out", str(tmp_path))
    assert run.returncode == 0, run.stderr
    assert "random.csv: 240 shapes" in run.stdout and "sealed.csv: 96 shapes" in run.stdout
    assert "holdout.csv: 64 shapes" in run.stdout
    for name in ("random.csv", "sealed.csv", "holdout.csv"):
        assert (tmp_path / name).read_text() == (REPO / "testlists" / name).read_text()


def test_random_csv_rows_are_the_generated_shapes(make):
    shapes = read_testlist(REPO / "testlists" / "random.csv")
    assert shapes == random_shapes(make.RANDOM_SEED, make.RANDOM_COUNT)
    assert len(shapes) >= 200
    assert all(1 <= s.m <= 16384 and 16 <= s.n <= 32768 and 16 <= s.k <= 32768 for s in shapes)
    assert any(s.n % 8 for s in shapes) and any(s.k <= 256 for s in shapes)
    assert any(s.m <= 8 for s in shapes) and any(s.k >= 8192 for s in shapes)


@pytest.mark.parametrize("name, seed, drawn, count, projections", [
    ("sealed.csv", "SEALED_SEED", "SEALED_RANDOM", 96, "UNSEEN_PROJECTIONS"),
    ("holdout.csv", "HOLDOUT_SEED", "HOLDOUT_RANDOM", 64, "HOLDOUT_PROJECTIONS")])
def test_each_held_out_csv_is_its_seeds_shapes_and_no_other_lists(make, name, seed, drawn, count, projections):
    shapes = read_testlist(REPO / "testlists" / name)
    seed, projections = getattr(make, seed), getattr(make, projections)
    generated = random_shapes(seed, getattr(make, drawn))
    models = model_shapes(seed + 1, count - len(generated), projections)
    assert shapes == generated + [s for _, s in models]
    assert len(shapes) == count
    # each model shape is preceded by its projection's name, and the name fits N and K
    lines = (REPO / "testlists" / name).read_text().splitlines()
    named = {p: (n, k) for p, n, k in projections}
    for p, s in models:
        i = lines.index(f"{s.m},{s.n},{s.k}")
        assert lines[i - 1] == f"# {p}" and named[p] == (s.n, s.k)
    # held out: no shape of another testlist (random and the other held-out list included)
    for other in sorted((REPO / "testlists").glob("*.csv")):
        if other.name != name:
            assert not {(s.m, s.n, s.k) for s in shapes} & {(s.m, s.n, s.k) for s in read_testlist(other)}, other


def test_the_second_held_out_lists_models_are_new(make):
    """holdout.csv's projections name models neither the first sealed list nor any testlist held."""
    first = {name.split()[0] for name, _, _ in make.UNSEEN_PROJECTIONS}
    assert not first & {name.split()[0] for name, _, _ in make.HOLDOUT_PROJECTIONS}
