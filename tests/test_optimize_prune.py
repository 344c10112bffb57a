"""The pruned solve (optimize/prune.py): the same answers as the plain Z3 solve and the
exhaustive search, a dropping rule that is sound, Z3 refusing a wrong claim, and the
tilings table's progress bar."""

from __future__ import annotations

import pytest
import z3

from gemmperf.hardware import get_gpu
from gemmperf.optimize import MODELS, exhaustive_exact, family_space, solve, tilings
from gemmperf.optimize import solver as S
from gemmperf.optimize.encode import skeleton
from gemmperf.optimize.pipelined import TIE_TOL, pipelined_table
from gemmperf.optimize.prune import prune_exact, prune_pipelined
from gemmperf.optimize.encode import encode_text
from gemmperf.optimize.space import RankParts, class_key, consts, padded_volume, shape_for, tie_rank
from gemmperf.params import ParamSet
from gemmperf.problem import Shape

H100 = get_gpu("h100-sxm5-80gb")
FAMILIES = ("ws-hopper", "ws-ampere", "simt")
# small, odd, decode-like and long-K shapes, where few tiles fill the GPU or K is one block
ODD = [Shape(1, 1, 1), Shape(3, 5, 7), Shape(130, 70, 33), Shape(1, 4096, 4096), Shape(16, 7168, 2048),
       Shape(7, 13, 4097), Shape(4097, 4095, 65), Shape(8192, 257, 64)]
# decode shapes where ws-pipelined shares K among CTAs (split-K, stream-K)
SHARED_K = [Shape(1, 4096, 14336), Shape(64, 4096, 14336), Shape(8, 7168, 18432)]


@pytest.fixture(scope="module", params=["defaults", "fitted"])
def pset(request):
    if request.param == "defaults":
        return ParamSet(H100)
    from pathlib import Path

    return ParamSet.load(Path(__file__).parent / "data" / "reference" / "params_fitted.json", H100)


def _same(a, b):
    ra, rb = a.runner_up, b.runner_up
    assert (a.config, a.predicted_exact, a.wait_exact) == (b.config, b.predicted_exact, b.wait_exact)
    assert (ra is None) == (rb is None)
    if ra is not None:
        assert (ra.config, ra.predicted_us, ra.math_wait_us) == (rb.config, rb.predicted_us, rb.math_wait_us)
    assert a.breakdown == b.breakdown


@pytest.mark.parametrize("model", MODELS)
def test_pruned_equals_plain_and_exhaustive_odd_shapes(pset, model):
    """Optimum, exact time and wait, runner-up and breakdown: pruned == plain Z3 ==
    exhaustive, every family, small / odd / decode shapes."""
    for shape in ODD + SHARED_K:
        for fam in FAMILIES:
            new = solve(shape, fam, H100, pset, model)
            old = solve(shape, fam, H100, pset, model, prune=False)
            _same(new, old)
            cfg, t, w = exhaustive_exact(shape, fam, H100, pset, model)
            assert (new.config, new.predicted_exact, new.wait_exact) == (cfg, t, w), (shape, fam, model)


@pytest.mark.parametrize("model", MODELS)
def test_pruned_with_pins(model):
    pset = ParamSet(H100)
    for fix in ({"tile_m": 64, "stages": 3}, {"raster": "grouped", "persistent": False}, {"tile_n": 256},
                {"epilogue": "tma", "cluster_m": 2}, {"schedule": "pingpong", "group_m": 4, "raster": "grouped"}):
        for shape in (Shape(2048, 2048, 2048), Shape(1, 4096, 4096)):
            _same(solve(shape, "ws-hopper", H100, pset, model, fix=fix),
                  solve(shape, "ws-hopper", H100, pset, model, fix=fix, prune=False))
    for fix in ({"split_k": 3}, {"stream_k": True, "tile_n": 64}, {"split_k": 1, "stream_k": False}):
        _same(solve(SHARED_K[0], "ws-hopper", H100, pset, model, fix=fix),
              solve(SHARED_K[0], "ws-hopper", H100, pset, model, fix=fix, prune=False))


def _pruned(shape, fam, pset, model, fix=None):
    shp = shape_for(shape, fam, None)
    space = family_space(fam, H100, shp.dtype)
    sk = skeleton(space, model, H100.smem_per_block)
    rp = RankParts(sk.classes, sk.index, sk.bmax, sk.pref)
    C = consts(shp, fam, H100, pset)
    if model == "ws-pipelined":
        tab = pipelined_table(shp, space, pset, sk.index)
        return shp, space, prune_pipelined(tab, rp, fix, True), tab.exact
    from gemmperf.optimize.exact import exact_objectives

    return shp, space, prune_exact(C, space, rp, model, fix, True), {c: exact_objectives(C, c, model) for c in space}


@pytest.mark.parametrize("model", MODELS)
def test_pruning_is_sound(pset, model):
    """Every dropped configuration's exact time exceeds the bound, the bound is at least
    the optimum's and the runner-up's times (within the tie tolerance), and something
    was dropped (the test can fail both ways)."""
    tol = TIE_TOL if model == "ws-pipelined" else 0
    dropped_any = False
    for shape in ODD[:4] + SHARED_K[:1] + [Shape(4096, 4096, 4096), Shape(4096, 7168, 16384)]:
        for fam in FAMILIES:
            shp, space, pr, exact = _pruned(shape, fam, pset, model)
            dropped = [c for c in space if c not in pr.keep.configs]
            dropped_any |= bool(dropped)
            for c in dropped:
                assert exact[c][0] > pr.bound, (shape, fam, c.key())
            best = min(exact[c][0] for c in space)
            best_class = class_key(min(space, key=lambda x: exact[x][0]))
            other = min(exact[c][0] for c in space if class_key(c) != best_class)
            assert pr.bound >= best and pr.bound >= other
            assert pr.bound <= max(best, other) * (1 + tol) * (1 + 1e-12)
            cfg, _, _ = exhaustive_exact(shape, fam, H100, pset, model)
            assert cfg in pr.keep.configs and cfg in pr.cands
    assert dropped_any


def test_a_wrong_claim_is_not_certified():
    """lex_minimize with hints that are not the minima (a slower configuration's values):
    Z3 finds the better configuration and the answer is the plain search's."""
    pset = ParamSet(H100)
    shape = Shape(4096, 4096, 4096)
    for model in MODELS:
        shp, space, pr, exact = _pruned(shape, "ws-hopper", pset, model)
        sol = solve(shape, "ws-hopper", H100, pset, model, runner_up=False, prune=False)
        worst = max(space, key=lambda c: exact[c][0])
        assert exact[worst][0] > sol.predicted_exact
        sk = skeleton(space, model, H100.smem_per_block)
        t, w = exact[worst]
        v, r = padded_volume(shp, worst), tie_rank(worst, RankParts(sk.classes, sk.index, sk.bmax, sk.pref))
        tab = pipelined_table(shp, space, pset, sk.index) if model == "ws-pipelined" else None
        lines = encode_text(consts(shp, "ws-hopper", H100, pset), sk, model, tab=tab, keep=pr.keep)
        objectives = [S._zv("time"), S._zv("wait")] + ([S._zv("vol")] if model == "ws-pipelined" else []) + \
            [S._zv("rank")]
        hints = [t, w] + ([v] if model == "ws-pipelined" else []) + [r]
        tol = dict(tie_tol=TIE_TOL, n_tol=2) if model == "ws-pipelined" else {}
        solver = z3.SimpleSolver()
        solver.from_string("\n".join(lines))
        assert S._certify(solver, objectives, hints, tol.get("tie_tol", 0), tol.get("n_tol", 0)) is None
        zm = S.lex_minimize(solver, objectives, **tol, hints=hints)
        assert S._decode(zm, "ws-hopper", "bf16") == sol.config


def test_tilings_progress_bar(monkeypatch, capsys):
    pytest.importorskip("tqdm")
    monkeypatch.setenv("GEMMPERF_PROGRESS", "1")
    shapes = [Shape(256, 256, 256), Shape(512, 512, 512), Shape(256, 256, 256)]
    t = tilings.tilings_table(shapes, H100, ParamSet(H100), ["ws-hopper"], "ws-stage", nvmmh=False)
    assert t.height == 3 and t.row(0) == t.row(2)  # a repeated shape: the same row
    assert "optimize ws-stage" in capsys.readouterr().err


def test_tables_of_a_testlist_at_once_are_each_shapes():
    """pipelined_tables (one evaluate() call for many shapes) == pipelined_table per shape."""
    from gemmperf.optimize.pipelined import pipelined_tables

    pset = ParamSet(H100)
    for fam, dtype in (("ws-hopper", "bf16"), ("simt", "fp32")):
        space = family_space(fam, H100, dtype)
        index = skeleton(space, "ws-pipelined", H100.smem_per_block).index
        shapes = [Shape(s.m, s.n, s.k, dtype) for s in ODD]
        for one, many in zip((pipelined_table(s, space, pset, index) for s in shapes),
                             pipelined_tables(shapes, space, pset, index)):
            assert (one.symbolic, one.max_dev, one.exact) == (many.symbolic, many.max_dev, many.exact)
            assert all((one.out[k] == many.out[k]).all() for k in one.out)


def test_a_wrong_runner_up_claim_is_not_certified(monkeypatch):
    """The optimum and runner-up are certified together; a runner-up claim that is not the
    minimum outside the optimum's class fails the joint check and the answer is the plain
    search's."""
    from gemmperf.optimize.prune import Pruned

    pset = ParamSet(H100)
    real = Pruned.hints

    def wrong(self, other_than=None):
        if other_than is None:
            return real(self)
        worst = max((v for v in self.cands.values() if v[4] != other_than), key=lambda v: v[:4], default=None)
        if worst is None:
            return None
        return [worst[0], worst[1]] + ([worst[2]] if self.model == "ws-pipelined" else []) + [worst[3]]

    calls, real_runner_up = [], S._runner_up
    monkeypatch.setattr(Pruned, "hints", wrong)
    monkeypatch.setattr(S, "_runner_up", lambda *a, **k: calls.append(1) or real_runner_up(*a, **k))
    for model in MODELS:
        for shape in (Shape(4096, 4096, 4096), Shape(1, 4096, 4096), SHARED_K[0]):
            _same(solve(shape, "ws-hopper", H100, pset, model), solve(shape, "ws-hopper", H100, pset, model,
                                                                       prune=False))
    assert calls  # the joint check failed somewhere and the separate search ran


def test_a_prune_that_drops_k_sharing_is_caught(monkeypatch):
    """An unsound prune (one that drops every split-K and stream-K configuration, whatever
    its bound) changes the answer on a decode shape where K sharing wins: the comparison
    with the plain search and the exhaustive one, which the tests above make, fails."""
    from gemmperf.optimize import prune as P

    pset = ParamSet(H100)
    shape = SHARED_K[0]
    honest = solve(shape, "ws-hopper", H100, pset)
    assert honest.config.split_k > 1 or honest.config.stream_k
    real = P.prune_pipelined

    def unsound(tab, rp, fix, runner_up):
        pr = real(tab, rp, fix, runner_up)
        whole = [j for j, c in enumerate(tab.space) if c.split_k == 1 and not c.stream_k]
        ex, ranks = tab.exact_of(whole), tab.facts.ranks(rp)
        pr.keep = P.Kept.at(tab.space, tab.facts, whole)
        pr.cands = {tab.space[j]: (*ex[tab.space[j]], padded_volume(tab.shape, tab.space[j]), int(ranks[j]),
                                   int(tab.facts.cls[j])) for j in whole}
        return pr

    monkeypatch.setattr(S, "prune_pipelined", unsound)
    broken = solve(shape, "ws-hopper", H100, pset)
    plain = solve(shape, "ws-hopper", H100, pset, prune=False)
    cfg, t, _ = exhaustive_exact(shape, "ws-hopper", H100, pset, "ws-pipelined")
    assert (plain.config, plain.predicted_exact) == (cfg, t) == (honest.config, honest.predicted_exact)
    assert broken.config != plain.config and broken.predicted_exact > plain.predicted_exact
    with pytest.raises(AssertionError):
        _same(broken, plain)
