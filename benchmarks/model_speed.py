"""How fast the models run on one CPU core.

- configurations per second of each model's vectorized ``evaluate()`` on ~1e6 random
  configurations (best of 3); target >= 1,000,000 per second per model
- the WS-stage event simulator for one wave, M=N=K=1024 (S=16) and K=16384 (S=256),
  TK=64 (best of many); target < 5 ms
- for information: ``predict()`` on a polars table, and ``timeline()``

Run: python benchmarks/model_speed.py [--n 1000000]. Exit code 0 (the figures are for
reading, not a pass/fail gate).
"""

from __future__ import annotations

import os

# one core: set before numpy/polars load their thread pools
for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "POLARS_MAX_THREADS"):
    os.environ[var] = "1"

import argparse  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

import numpy as np  # noqa: E402
import polars as pl  # noqa: E402

from gemmperf.hardware import CATALOG  # noqa: E402
from gemmperf.models import MODELS, columns, ws_stage  # noqa: E402
from gemmperf.params import PARAM_NAMES, ParamSet  # noqa: E402
from gemmperf.problem import KernelConfig, Shape  # noqa: E402

CONFIG_TARGET = 1_000_000  # configurations per second
SIM_TARGET_MS = 5.0


def best_of(fn, repeats: int) -> float:
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def random_arrays(n: int, params: ParamSet, seed: int = 0) -> dict[str, np.ndarray]:
    """Every input any evaluate() takes, for n random bf16 configurations."""
    rng = np.random.default_rng(seed)
    p = params.get("ws-hopper", "bf16")
    gpu = params.gpu
    arrays = {
        "m": rng.integers(1, 16385, n), "n": rng.integers(1, 16385, n), "k": rng.integers(1, 16385, n),
        "tile_m": rng.choice([64, 128, 256], n), "tile_n": rng.choice([64, 128, 256], n),
        "tile_k": rng.choice([32, 64, 128], n), "stages": rng.integers(1, 9, n),
        "cluster_m": rng.choice([1, 2], n), "cluster_n": rng.choice([1, 2], n),
        "in_bytes": np.full(n, 2.0), "out_bytes": np.full(n, 2.0), "sf_bytes_per_elem": np.zeros(n),
        "sms": np.full(n, gpu.sms), "dram_bytes_per_us": np.full(n, gpu.dram_bytes_per_s / 1e6),
        "peak_flops_per_us": np.full(n, gpu.peak_flops("bf16") / 1e6),
    }
    arrays.update({name: np.full(n, float(getattr(p, name))) for name in PARAM_NAMES})
    return arrays


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=1_000_000, help="random configurations (default 1e6)")
    args = ap.parse_args(argv)
    params = ParamSet(CATALOG["h100-sxm5-80gb"])
    arrays = random_arrays(args.n, params)

    rows = []
    print(f"one core, {args.n:,} random configurations, best of 3")
    print(f"{'what':<44}{'time':>12}{'figure':>22}  target")
    for name, mod in MODELS.items():
        if hasattr(mod, "prepare"):  # its inputs include per-family constants and codes
            frame = pl.DataFrame({k: arrays[k] for k in ("m", "n", "k", "tile_m", "tile_n", "tile_k",
                                                         "stages", "cluster_m", "cluster_n")})
            inputs = mod.prepare(frame, params)[1]
        else:
            inputs = {k: arrays[k] for k in mod.INPUTS}
        secs = best_of(lambda: mod.evaluate(**inputs), 3)
        rate = args.n / secs
        # the target covers the four models of the source documents
        required = name in ("sol", "sync", "ws-stage", "ws-persistent")
        ok = rate >= CONFIG_TARGET or not required
        rows.append(ok)
        verdict = ("ok" if rate >= CONFIG_TARGET else "MISSED") if required else "(info)"
        print(f"{name + ' evaluate()':<44}{secs * 1e3:>10.1f}ms{rate:>16,.0f} cfg/s  "
              f">= {CONFIG_TARGET:,} {verdict}")

    p = params.get("ws-hopper", "bf16")
    for label, shape in (("M=N=K=1024", Shape(1024, 1024, 1024)), ("K=16384", Shape(1024, 1024, 16384))):
        cfg = KernelConfig(tile_k=64, stages=4)
        t_a, t_b, t_m = (float(x) for x in columns.stage_times(
            cfg.tile_m, cfg.tile_n, cfg.tile_k, 2.0, 0.0, p.load_bytes_per_us, p.load_latency_us,
            p.math_flops_per_us, p.math_latency_us))
        S = -(-shape.k // cfg.tile_k)
        secs = best_of(lambda: ws_stage.simulate(S, cfg.stages, t_a, t_b, t_m, p.t_epilogue_us), 50)
        ok = secs * 1e3 < SIM_TARGET_MS
        rows.append(ok)
        print(f"{'simulate() ' + label + f', TK=64 (S={S})':<44}{secs * 1e3:>10.3f}ms{'':>22}  "
              f"< {SIM_TARGET_MS} ms {'ok' if ok else 'MISSED'}")
        secs = best_of(lambda: ws_stage.timeline(cfg, params, shape), 10)
        bars = len(ws_stage.timeline(cfg, params, shape))
        print(f"{'timeline() ' + label + f' ({bars} bars)':<44}{secs * 1e3:>10.3f}ms{'':>22}  (info)")

    n_table = min(args.n, 200_000)
    rng = np.random.default_rng(1)
    table = pl.DataFrame({k: arrays[k][:n_table] for k in ("m", "n", "k", "tile_m", "tile_n",
                                                           "tile_k", "stages", "cluster_m", "cluster_n")})
    table = table.with_columns(
        family=pl.Series(rng.choice(["ws-hopper", "ws-ampere", "simt"], n_table)),
    ).with_columns(dtype=pl.when(pl.col("family") == "simt").then(pl.lit("fp32")).otherwise(pl.lit("bf16")))
    for name in MODELS:
        secs = best_of(lambda: MODELS[name].predict(table, params), 3)
        print(f"{name + f' predict() polars, {n_table:,} rows':<44}{secs * 1e3:>10.1f}ms"
              f"{n_table / secs:>16,.0f} cfg/s  (info)")
    print("all targets met" if all(rows) else "SOME TARGETS MISSED")
    return 0


if __name__ == "__main__":
    sys.exit(main())
