"""Z3 solve time per shape against exhaustive enumeration, over dsv3 and llm.

    python benchmarks/optimize_speed.py [--gpu h100-sxm5-80gb] [--testlists dsv3 llm]
        [--families ws-hopper ws-ampere simt] [--models ws-stage ws-persistent ws-pipelined]
        [--params results/<gpu>/params.json] [--hardware hardware.json] [--agree]

For each (model, family): median and max Z3 solve time per shape (encoding + the
lexicographic solve, runner-up excluded, as ``Solution.solve_s``), the runner-up solve,
and the time of exhaustive enumeration of the same space with the model's vectorized
float ``evaluate`` (numpy) and with exact rationals (``exhaustive_exact``). With
``--agree`` it also checks that Z3 and exhaustive (exact) agree on every shape.
ws-pipelined's solve time includes its per-shape table (the model's evaluate() over the
space); the ``tabled`` column counts shapes where the symbolic split did not reproduce
the model and the encoding fell back to a per-configuration table (see optimize/pipelined.py).

Pinned to one core (os.sched_setaffinity) where the OS allows; Z3 is single-threaded.
Targets (issue 6): median <= 0.2 s, max <= 2 s per shape.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--gpu", default="h100-sxm5-80gb")
    ap.add_argument("--testlists", nargs="+", default=["dsv3", "llm"])
    ap.add_argument("--families", nargs="+", default=None)
    ap.add_argument("--models", nargs="+", default=None, help="default: every model the optimizer encodes")
    ap.add_argument("--params", help="parameters JSON (default: descriptor defaults)")
    ap.add_argument("--hardware", help="hardware.json instead of the catalog entry")
    ap.add_argument("--agree", action="store_true", help="also check Z3 == exhaustive on every shape")
    a = ap.parse_args(argv)
    try:
        os.sched_setaffinity(0, {sorted(os.sched_getaffinity(0))[0]})
        pinned = "1 core"
    except (AttributeError, OSError):
        pinned = "unpinned"

    from gemmperf.hardware import get_gpu, load_gpu
    from gemmperf import optimize
    from gemmperf.params import ParamSet
    from gemmperf.kernels import families_on
    from gemmperf.problem import FAMILIES, read_testlist

    gpu = load_gpu(a.hardware) if a.hardware else get_gpu(a.gpu)
    pset = ParamSet.load(a.params, gpu) if a.params else ParamSet(gpu)
    shapes = [s for t in a.testlists for s in read_testlist(ROOT / "testlists" / f"{t}.csv")]
    fams = [f.name for f in families_on(gpu, a.families or FAMILIES)]
    print(f"{gpu.slug}, {len(shapes)} shapes ({' + '.join(a.testlists)}), {pinned}, z3 "
          f"{__import__('z3').get_version_string()}")
    hdr = (f"{'model':14} {'family':10} {'configs':>7} {'z3 med ms':>9} {'z3 max ms':>9} {'ru med ms':>9} "
           f"{'numpy med ms':>12} {'exact med ms':>12} {'tabled':>6}" + ("  agree" if a.agree else ""))
    print(hdr)
    all_solve = []
    ok_all = True
    for model in a.models or optimize.MODELS:
        for fam in fams:
            z3t, rut, npt, ext, agree, tabled = [], [], [], [], 0, 0
            n_cfg = 0
            for s in shapes:
                sol = optimize.solve(s, fam, gpu, pset, model)
                z3t.append(sol.solve_s)
                rut.append(sol.runner_up_s)
                n_cfg = sol.n_configs
                tabled += sol.encoding == "tabled"
                t0 = time.perf_counter()
                optimize.exhaustive_float(s, fam, gpu, pset, model)
                npt.append(time.perf_counter() - t0)
                t0 = time.perf_counter()
                cfg, t, _ = optimize.exhaustive_exact(s, fam, gpu, pset, model)
                ext.append(time.perf_counter() - t0)
                agree += cfg == sol.config and t == sol.predicted_exact
            all_solve += z3t
            ok_all &= agree == len(shapes)
            print(f"{model:14} {fam:10} {n_cfg:7d} {statistics.median(z3t) * 1e3:9.1f} {max(z3t) * 1e3:9.1f} "
                  f"{statistics.median(rut) * 1e3:9.1f} {statistics.median(npt) * 1e3:12.2f} "
                  f"{statistics.median(ext) * 1e3:12.2f} {tabled:6d}" + (f"  {agree}/{len(shapes)}" if a.agree else ""))
    med, mx = statistics.median(all_solve), max(all_solve)
    print(f"all: median {med * 1e3:.1f} ms, max {mx * 1e3:.1f} ms per shape "
          f"(targets 200 ms / 2000 ms: {'met' if med <= 0.2 and mx <= 2 else 'NOT met'})")
    return 0 if ok_all else 1


if __name__ == "__main__":
    sys.exit(main())
