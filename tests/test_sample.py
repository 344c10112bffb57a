"""The sample preset (bench.sample, bench.collect): a stratified sample of a family's
legal configuration space per shape, drawn from a seed (no GPU needed)."""

from __future__ import annotations

import os
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from gemmperf.bench import sample as S
from gemmperf.bench.journal import read_rows, task_key
from gemmperf.bench.collect import SAMPLE_COUNT, SAMPLE_SEED, tasks_for
from gemmperf.hardware import CATALOG
from gemmperf.kernels import check_legal, get_family
from gemmperf.problem import KernelConfig, Shape, read_testlist

REPO = Path(__file__).resolve().parent.parent
H100 = CATALOG["h100-sxm5-80gb"]
HOPPER = get_family("ws-hopper")
RANDOM = read_testlist(REPO / "testlists" / "random.csv", "bf16")
SUBSET = RANDOM[::8]  # 30 shapes: the cheaper draws
FIELDS = tuple(KernelConfig.__dataclass_fields__)


def configs(tasks: list[dict]) -> dict[Shape, list[KernelConfig]]:
    out: dict[Shape, list[KernelConfig]] = {}
    for t in tasks:
        out.setdefault(Shape(t["m"], t["n"], t["k"], "bf16"), []).append(KernelConfig(**{f: t[f] for f in FIELDS}))
    return out


def shared(c: KernelConfig) -> bool:
    return c.split_k > 1 or c.stream_k


@pytest.fixture(scope="module", autouse=True)
def memoized():
    """legal_configs and pool are pure but take seconds; remember them for this module
    (their own determinism is tested on the originals below)."""
    legal_configs, pool, seen = HOPPER.legal_configs, S.pool, {}

    def cached_legal(gpu, dtype=None, modes=("full",)):
        key = ("legal", gpu.slug, dtype, modes)
        if key not in seen:
            seen[key] = legal_configs(gpu, dtype, modes)
        return seen[key]

    def cached_pool(legal, seed, size=S.POOL_SIZE):
        key = ("pool", id(legal), seed, size)
        if key not in seen:
            seen[key] = (legal, pool(legal, seed, size))  # keeps legal alive: its id stays its own
        return seen[key][1]

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(HOPPER, "legal_configs", cached_legal)
        mp.setattr(S, "pool", cached_pool)
        yield pool


@pytest.fixture(scope="module")
def legal():
    return HOPPER.legal_configs(H100, "bf16")


@pytest.fixture(scope="module")
def anchors(legal):
    return S.anchors(HOPPER, {c.key(): c for c in legal}, "bf16", H100)


@pytest.fixture(scope="module")
def full():
    """The sample preset's tasks for testlists/random.csv, bf16, ws-hopper, H100, at
    its defaults: shape -> configurations."""
    return configs(tasks_for(RANDOM, H100, ["ws-hopper"], "bf16", "sample", (SAMPLE_COUNT, SAMPLE_SEED)))


@pytest.fixture(scope="module")
def subset_a():
    return S.sample_configs(HOPPER, H100, "bf16", SUBSET, 12, SAMPLE_SEED)


# ------------------------------------------------------------------ k_sharing_ok


def hopper(**kw) -> KernelConfig:
    base = dict(tile_m=128, tile_n=128, tile_k=64, stages=4, schedule="cooperative")
    return KernelConfig("ws-hopper", "bf16", **{**base, **kw})


def ok(c: KernelConfig, m: int, n: int, k: int, sms: int = 132) -> bool:
    assert check_legal(c, H100) is None, check_legal(c, H100)
    return S.k_sharing_ok(HOPPER, c, Shape(m, n, k, "bf16"), sms)


def test_split_k_needs_a_k_block_per_split():
    # K = 256: 4 k-blocks of 64
    assert ok(hopper(split_k=4), 128, 128, 256)
    assert not ok(hopper(split_k=6), 128, 128, 256)
    # K is padded to 8 elements before it is cut into k-blocks: 129 -> 136, 3 blocks
    assert not ok(hopper(split_k=3), 128, 128, 128)
    assert ok(hopper(split_k=3), 128, 128, 129)


def test_split_k_keeps_the_partial_tiles_within_four_waves():
    # 12 x 11 = 132 tiles: 4 splits are 528 = 4 x 132 partial tiles, 6 are more
    assert ok(hopper(split_k=4), 12 * 128, 11 * 128, 8192)
    assert not ok(hopper(split_k=6), 12 * 128, 11 * 128, 8192)
    assert not ok(hopper(split_k=4), 12 * 128, 11 * 128 + 1, 8192)  # 144 tiles
    # clusters round the tiles up to whole clusters: 3 tile rows in 2x1 clusters are 4
    c = hopper(split_k=4, cluster_m=2)
    assert ok(c, 3 * 128, 128, 4096, sms=4)  # 4 x 4 <= 16
    assert not ok(c, 3 * 128, 128, 4096, sms=3)  # 16 > 12 (3 tiles would give 12)


def test_stream_k_needs_two_k_blocks_and_fewer_than_four_waves_of_tiles():
    c = hopper(stream_k=True, persistent=True, raster="grouped")
    assert not ok(c, 128, 128, 64)
    assert ok(c, 128, 128, 65)  # 72 after padding: two k-blocks
    assert ok(c, 128, 4 * 128, 4096, sms=2)  # 4 tiles < 8
    assert not ok(c, 128, 8 * 128, 4096, sms=2)  # 8 tiles: not fewer than 4 waves
    assert ok(c, 128, 7 * 128, 4096, sms=2)
    # stream-K has no split count to bound: 500 tiles < 528 is enough
    assert ok(c, 20 * 128, 25 * 128, 128)


# ------------------------------------------------------------------ the pool and anchors


def test_pool_is_a_bounded_balanced_part_of_the_legal_space(legal, memoized):
    pool = S.pool(legal, SAMPLE_SEED)
    assert len(pool) == S.POOL_SIZE == len(set(pool)) and set(pool) <= set(legal)
    assert pool == memoized(legal, SAMPLE_SEED)  # the original, drawn again
    assert pool != S.pool(legal, 6)
    ways = Counter(S.k_way(c) for c in pool)
    for way, share in S.K_WAY_SHARES.items():
        assert abs(ways[way] - share * S.POOL_SIZE) <= 1
    whole = [c for c in pool if S.k_way(c) == "whole"]
    for dim in ("tile", "stages", "cluster", "epilogue", "raster"):
        counts = Counter(S.DIMENSIONS[dim](c) for c in whole)
        levels = {S.DIMENSIONS[dim](c) for c in legal if S.k_way(c) == "whole"}
        assert set(counts) == levels and max(counts.values()) <= 1.5 * min(counts.values()), (dim, counts)
    # a space no larger than the pool is kept whole
    small = legal[:100]
    assert sorted(S.pool(small, 1, size=1000), key=small.index) == small


def test_anchors_are_the_library_defaults_at_their_deepest_legal_ring(legal, anchors):
    assert len(anchors) == len(S.ANCHORS) == 2
    for spec, c in zip(S.ANCHORS, anchors):
        assert all(getattr(c, key) == value for key, value in spec.items())
        assert check_legal(c, H100) is None and c in legal
        assert check_legal(c.replace(stages=c.stages + 1), H100) is not None
        assert c.stages == HOPPER.max_legal_stages(c, H100)
    # a family none of whose configurations match (no TMA epilogue, no clusters) has none
    simt = get_family("simt")
    assert S.anchors(simt, {c.key(): c for c in simt.legal_configs(H100, "fp32")}, "fp32", H100) == []


# ------------------------------------------------------------------ per shape


def test_the_sample_preset_gives_every_shape_its_count_of_distinct_legal_configs(full, anchors):
    assert list(full) == RANDOM  # in testlist order
    for s, picks in full.items():
        assert len(picks) == SAMPLE_COUNT == len(set(picks)), s
        assert all(c.family == "ws-hopper" and c.dtype == "bf16" and c.mode == "full" for c in picks)
        assert all(check_legal(c, H100) is None for c in picks), s
        assert all(S.k_sharing_ok(HOPPER, c, s, H100.sms) for c in picks if shared(c)), s
        assert picks[: len(anchors)] == anchors  # the anchors first, on every shape


def test_k_sharing_slots(full, legal):
    pool = S.pool(legal, SAMPLE_SEED)
    for s, picks in full.items():
        eligible = sum(shared(c) and S.k_sharing_ok(HOPPER, c, s, H100.sms) for c in pool)
        tiles = -(-s.m // 128) * -(-s.n // 128)
        slots = round(SAMPLE_COUNT / 4) if tiles < H100.sms else 1
        assert sum(map(shared, picks)) == min(eligible, slots), (s, eligible)
    # the list has both kinds of shape, and small ones do share K
    assert any(sum(map(shared, p)) == 4 for p in full.values())
    assert any(sum(map(shared, p)) == 1 for p in full.values())


def test_each_shape_sees_every_level_it_can(full):
    # 16 picks cover the 8 tiles, 7 ring depths, 4 clusters, 3 rasters ... on every shape
    for s, picks in full.items():
        for dim in ("tile", "stages", "cluster", "epilogue", "schedule", "persistent", "raster"):
            levels = {S.DIMENSIONS[dim](c) for c in picks}
            want = {"tile": 8, "stages": 7, "cluster": 4, "raster": 3}.get(dim, 2)
            assert len(levels) == want, (s, dim, levels)


def test_levels_are_balanced_over_the_list(full, anchors):
    picks = [c for p in full.values() for c in p if c not in anchors]
    for group in (False, True):
        part = [c for c in picks if shared(c) == group]
        dims = ("tile", "stages", "cluster", "split") if group else (
            "tile", "stages", "cluster", "epilogue", "schedule", "persistent", "raster", "group")
        for dim in dims:
            counts = Counter(S.DIMENSIONS[dim](c) for c in part)
            counts.pop(None, None)
            assert max(counts.values()) <= 1.5 * min(counts.values()), (group, dim, counts)
    levels = Counter(S.DIMENSIONS["split"](c) for c in picks)
    assert set(levels) == {None, *HOPPER.split_ks[1:]}  # every split the family has
    assert any(c.stream_k for c in picks)


# ------------------------------------------------------------------ seeds, counts, collect


def test_same_seed_same_sample_through_collect(subset_a):
    again = configs(tasks_for(SUBSET, H100, ["ws-hopper"], "bf16", "sample", (12, SAMPLE_SEED)))
    assert again == subset_a


def test_another_seed_another_sample(subset_a):
    other = S.sample_configs(HOPPER, H100, "bf16", SUBSET, 12, 6)
    assert list(other) == SUBSET and all(len(p) == 12 for p in other.values())
    differ = sum(set(other[s]) != set(subset_a[s]) for s in SUBSET)
    assert differ >= len(SUBSET) - 2


def test_the_count_is_respected_and_anchors_take_a_quarter(anchors):
    shapes = SUBSET[:6]
    for count, n_anchors in ((1, 0), (3, 0), (4, 1), (7, 1), (9, 2)):
        out = S.sample_configs(HOPPER, H100, "bf16", shapes, count, SAMPLE_SEED)
        for s, picks in out.items():
            assert len(picks) == count == len(set(picks)), (count, s)
            assert picks[:n_anchors] == anchors[:n_anchors]
    assert S.sample_configs(HOPPER, H100, "bf16", shapes, 0, 1) == {s: [] for s in shapes}


def test_the_sample_is_drawn_over_the_whole_list():
    # the balance spans the shapes: a shape's picks depend on the shapes before it, and
    # the first shape's do not depend on those after it
    a = S.sample_configs(HOPPER, H100, "bf16", SUBSET[:4], 8, SAMPLE_SEED)
    b = S.sample_configs(HOPPER, H100, "bf16", SUBSET[:2], 8, SAMPLE_SEED)
    assert a[SUBSET[0]] == b[SUBSET[0]] and a[SUBSET[1]] == b[SUBSET[1]]
    c = S.sample_configs(HOPPER, H100, "bf16", SUBSET[1:4], 8, SAMPLE_SEED)
    assert [c[s] for s in SUBSET[1:4]] != [a[s] for s in SUBSET[1:4]]


def test_sample_preset_tasks_for_several_families_and_fp8():
    shapes = RANDOM[:5]
    tasks = tasks_for(shapes, H100, ["ws-hopper", "ws-ampere", "simt"], "fp8", "sample", (4, 2))
    # ws-ampere has no fp8 kernel and is left out; simt computes fp32 whatever is asked
    per = Counter((t["m"], t["n"], t["k"], t["family"], t["dtype"]) for t in tasks)
    assert {(f, d) for *_, f, d in per} == {("ws-hopper", "fp8"), ("simt", "fp32")}
    assert len(per) == 2 * len(shapes) and set(per.values()) == {4}
    assert all(check_legal(KernelConfig(**{f: t[f] for f in FIELDS}), H100) is None for t in tasks)
    # ordered by shape
    order = [(t["m"], t["n"], t["k"]) for t in tasks]
    assert order == sorted(order, key=[(s.m, s.n, s.k) for s in shapes].index)


def test_collect_cli_sample_preset_through_the_stand_in(tmp_path):
    shapes = RANDOM[:3]
    testlist = tmp_path / "t.csv"
    testlist.write_text("m,n,k\n" + "".join(f"{s.m},{s.n},{s.k}\n" for s in shapes))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO / "src"), str(REPO / "tests")]),
           "GEMMPERF_PROGRESS": "0", "GEMMPERF_MEASURE_STANDIN": "test_sweep_fakes:standin",
           "GEMMPERF_TEST_CALLS": str(tmp_path / "calls")}
    out = tmp_path / "m.csv"
    run = subprocess.run([sys.executable, "-m", "gemmperf", "collect", "--gpu", "h100-sxm5-80gb", "--testlist",
                          str(testlist), "--out", str(out), "--families", "ws-hopper", "--preset", "sample",
                          "--sample-count", "5", "--sample-seed", "6"],
                         capture_output=True, text=True, env=env, timeout=120)
    assert run.returncode == 0, run.stderr
    want = tasks_for(shapes, H100, ["ws-hopper"], "bf16", "sample", (5, 6))
    assert len(want) == 15
    # the stand-in measured exactly the tasks of --sample-count 5 --sample-seed 6
    calls = (tmp_path / "calls").read_text().splitlines()
    assert sorted(calls) == sorted("|".join(task_key(t)) for t in want)
    rows, _ = read_rows(out)
    assert len(rows) == 15 and {r["status"] for r in rows} == {"ok"}
    assert {task_key(r) for r in rows} == {task_key(t) for t in want}
