"""Optimizer speed per shape and family: the pruned Z3 solve against the plain one and
exhaustive search, with agreement checked on every shape.

    PYTHONPATH=src python benchmarks/optimize_speed.py [--gpu h100-sxm5-80gb]
        [--testlists squares dsv3 llm] [--families ws-hopper ws-ampere simt]
        [--models ws-pipelined] [--params results/<gpu>/params.json] [--clock cpu|wall]

For each (model, family), per shape: the time of one ``solve()`` (optimum and runner-up,
what a tilings row costs) on the plain path (``prune=False``: every configuration
encoded, linear search) and the pruned path (the default: configurations a closed-form
bound rules out are left out and Z3 certifies the exhaustive choice among the rest, see
optimize/prune.py), and of exhaustive enumeration with the models' float evaluate()
(numpy, nothing proved) and with exact rationals. Median, p95 and max ms per shape,
the ratio pruned/plain of the medians, and agreement: the pruned and plain solves give
the same configuration, exact time and MATH wait, and runner-up, and both equal the exact
exhaustive optimum; any disagreement is printed and the exit status is 1.

Parameters: ``--params`` if given, else results/<gpu>/params.json where present (as
``gemmperf optimize`` does), else the descriptor defaults; the first line says which.
Times are process CPU time by default (``--clock cpu``; Z3 and numpy run on the calling
thread), which a machine shared with other work inflates less than wall time; the last
lines give both (``--pin``: pinned to one core). The last line but one times
``tilings_table`` over the testlists (what ``gemmperf optimize --testlist`` runs), where
ws-pipelined's tables of a chunk of shapes come from one evaluate() call.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _stats(xs: list[float]) -> tuple[float, float, float]:
    s = sorted(xs)
    return statistics.median(s), s[min(len(s) - 1, int(round(0.95 * (len(s) - 1))))], s[-1]


def _same(a, b) -> bool:
    """Same optimum, exact time and wait, and runner-up."""
    ra, rb = a.runner_up, b.runner_up
    return (a.config == b.config and a.predicted_exact == b.predicted_exact and a.wait_exact == b.wait_exact
            and (ra is None) == (rb is None)
            and (ra is None or (ra.config, ra.predicted_us, ra.math_wait_us) == (rb.config, rb.predicted_us,
                                                                                 rb.math_wait_us)))


def _timed(clock, fn, *args, **kw):
    t0, w0 = clock(), time.perf_counter()
    out = fn(*args, **kw)
    return out, clock() - t0, time.perf_counter() - w0


def run_family(shapes, fam, gpu, pset, model, clock) -> dict:
    """Times (s) per shape of the four searches, and the shapes where they disagree."""
    from gemmperf import optimize

    optimize.solve(shapes[0], fam, gpu, pset, model)  # warm the per-space caches
    optimize.solve(shapes[0], fam, gpu, pset, model, prune=False)
    r = {k: [] for k in ("old", "new", "float", "exact", "old_wall", "new_wall")}
    r["bad"], r["n_configs"] = [], 0
    for s in shapes:
        old, t_old, w_old = _timed(clock, optimize.solve, s, fam, gpu, pset, model, prune=False)
        new, t_new, w_new = _timed(clock, optimize.solve, s, fam, gpu, pset, model)
        _, t_fl, _ = _timed(clock, optimize.exhaustive_float, s, fam, gpu, pset, model)
        (cfg, t, w), t_ex, _ = _timed(clock, optimize.exhaustive_exact, s, fam, gpu, pset, model)
        for k, v in (("old", t_old), ("new", t_new), ("float", t_fl), ("exact", t_ex), ("old_wall", w_old),
                     ("new_wall", w_new)):
            r[k].append(v)
        r["n_configs"] = new.n_configs
        if not (_same(old, new) and (cfg, t, w) == (new.config, new.predicted_exact, new.wait_exact)):
            r["bad"].append((s, old.config.key(), new.config.key(), cfg.key()))
    return r


def _params(a, gpu):
    from gemmperf.params import ParamSet

    path = Path(a.params) if a.params else ROOT / "results" / gpu.slug / "params.json"
    if a.params or path.is_file():
        return ParamSet.load(path, gpu), f"parameters from {path.relative_to(ROOT) if path.is_relative_to(ROOT) else path}"
    return ParamSet(gpu), f"descriptor defaults (no {path.relative_to(ROOT)})"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    ap.add_argument("--gpu", default="h100-sxm5-80gb")
    ap.add_argument("--testlists", nargs="+", default=["squares", "dsv3", "llm"])
    ap.add_argument("--families", nargs="+", default=None, help="default: every family that runs on the GPU")
    ap.add_argument("--models", nargs="+", default=None, help="default: the optimizer's default model")
    ap.add_argument("--params", help="parameters JSON (default results/<gpu>/params.json if present)")
    ap.add_argument("--clock", choices=("cpu", "wall"), default="cpu")
    ap.add_argument("--pin", action="store_true", help="pin the process to one core (os.sched_setaffinity)")
    a = ap.parse_args(argv)
    pinned = "unpinned"
    if a.pin:
        try:
            os.sched_setaffinity(0, {sorted(os.sched_getaffinity(0))[0]})
            pinned = "pinned to 1 core"
        except (AttributeError, OSError):
            pass

    import z3

    from gemmperf import optimize
    from gemmperf.hardware import get_gpu
    from gemmperf.kernels import families_on
    from gemmperf.optimize.tilings import tilings_table
    from gemmperf.problem import FAMILIES, read_testlist

    gpu = get_gpu(a.gpu)
    pset, source = _params(a, gpu)
    shapes = list(dict.fromkeys(s for t in a.testlists for s in read_testlist(ROOT / "testlists" / f"{t}.csv")))
    fams = [f.name for f in families_on(gpu, a.families or FAMILIES)]
    clock = time.process_time if a.clock == "cpu" else time.perf_counter
    print(f"{gpu.slug}, {source}; {len(shapes)} shapes ({' + '.join(a.testlists)}), {pinned}, "
          f"z3 {z3.get_version_string()}, {a.clock} time, ms per shape (optimum + runner-up)")
    print(f"{'model':13} {'family':10} {'configs':>7} | {'plain med/p95/max':>19} | {'pruned med/p95/max':>19} | "
          f"{'numpy':>6} {'exact':>6} | {'ratio':>5} | agree")
    allr = {k: [] for k in ("old", "new", "old_wall", "new_wall")}
    bad = 0
    for model in a.models or [optimize.DEFAULT_MODEL]:
        for fam in fams:
            r = run_family(shapes, fam, gpu, pset, model, clock)
            o, n = _stats(r["old"]), _stats(r["new"])
            print(f"{model:13} {fam:10} {r['n_configs']:7d} | {o[0] * 1e3:5.1f} {o[1] * 1e3:6.1f} {o[2] * 1e3:6.1f} | "
                  f"{n[0] * 1e3:5.1f} {n[1] * 1e3:6.1f} {n[2] * 1e3:6.1f} | "
                  f"{statistics.median(r['float']) * 1e3:6.2f} {statistics.median(r['exact']) * 1e3:6.1f} | "
                  f"{n[0] / o[0]:5.2f} | {len(shapes) - len(r['bad'])}/{len(shapes)}", flush=True)
            for b in r["bad"]:
                print(f"  DISAGREE {b[0]}: plain {b[1]}, pruned {b[2]}, exhaustive {b[3]}")
            bad += len(r["bad"])
            for k in allr:
                allr[k] += r[k]
    for label, old, new in (("", "old", "new"), (" wall", "old_wall", "new_wall")):
        o, n = _stats(allr[old]), _stats(allr[new])
        print(f"all{label}: plain median {o[0] * 1e3:.1f} ms (p95 {o[1] * 1e3:.1f}, max {o[2] * 1e3:.1f}); pruned median "
              f"{n[0] * 1e3:.1f} ms (p95 {n[1] * 1e3:.1f}, max {n[2] * 1e3:.1f}); ratio {n[0] / o[0]:.2f}; "
              f"target median <= 10 ms: {'met' if n[0] <= 0.010 else 'NOT met'}")
    for model in a.models or [optimize.DEFAULT_MODEL]:
        _, t, w = _timed(clock, tilings_table, shapes, gpu, pset, fams, model, nvmmh=False)
        per = len(shapes) * len(fams)
        print(f"tilings_table, {model}, legal space, every family (the testlist's tables built together): "
              f"{t / per * 1e3:.1f} ms per shape and family ({a.clock}), {w / per * 1e3:.1f} ms wall")
    print(f"agreement: {'every shape' if not bad else f'{bad} disagreements'} (pruned == plain == exhaustive)")
    return 0 if not bad else 1


if __name__ == "__main__":
    sys.exit(main())
