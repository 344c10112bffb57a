"""How much of ws-pipelined's error its own terms can explain: the model's ceiling.

1. The fitted model in sample: ws-pipelined's constants fitted on every development row
   (ws-hopper, the shipped lists), its MAPE on those same rows. Against the
   leave-one-testlist-out figure it separates over-fitting from the model's form.
2. A gradient-boosted tree on log(predicted / measured) from the model's own breakdown and
   the configuration (``FEATURES``), scored leave-one-testlist-out: what a flexible
   correction on these terms could still recover. With ``--drop``, the same without each
   feature in turn (what each is worth).
3. With ``--anatomy``, where the in-sample error sits: the MAPE left after each group's
   median error is taken out (``anatomy``), for groups of the configuration (tile,
   schedule, cluster, stages, epilogue, persistence), of the shape and of the weight matrix.
   A factor per group, fitted on the very rows it is scored on, can do no better than that,
   so it bounds every per-configuration or per-shape constant the model could add; and the
   error by measured time and by the SM clock the collector recorded (``buckets``).

    python benchmarks/model_ceiling.py [--gpu h100-sxm5-80gb] [--dtype bf16] [--drop] [--anatomy]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def features(pl):
    """name -> polars expression over W.predict's output (configuration and breakdown)."""
    c = pl.col
    return {
        "log m": c("m").log(), "log n": c("n").log(), "log k": c("k").log(),
        "tile_m": c("tile_m"), "tile_n": c("tile_n"), "stages": c("stages"),
        "cluster_m": c("cluster_m"), "cluster_n": c("cluster_n"),
        "persistent": c("persistent").cast(pl.Int8), "pingpong": (c("schedule") == "pingpong").cast(pl.Int8),
        "tma store": (c("epilogue") == "tma").cast(pl.Int8), "split_k": c("split_k"),
        "stream_k": c("stream_k").cast(pl.Int8), "raster": c("raster").rank("dense"),
        "limiter": c("limiter").rank("dense"), "log k-blocks": c("k_stages").log(), "waves": c("waves"),
        "log tiles": c("tiles").log(), "fill share": c("fill_us") / c("predicted_us"),
        "epilogue share": c("epilogue_us") / c("predicted_us"), "main loop share": c("mainloop_us") / c("predicted_us"),
        "log load/math": (c("stage_load_us") / c("stage_math_us")).log(),
        "log period/math": (c("stage_period_us") / c("stage_math_us")).log(),
        "hit rate": c("l2_hit_rate_est"), "padding": c("padding_waste"), "last wave SMs": c("last_wave_sms"),
        "registers": c("registers"), "smem bytes": c("smem_bytes"),
    }


# --anatomy: the groups whose own median error is taken out, coarse to fine
GROUPS = {
    "tile": ("tile_m", "tile_n"),
    "+ schedule": ("tile_m", "tile_n", "schedule"),
    "+ cluster": ("tile_m", "tile_n", "schedule", "cluster_m", "cluster_n"),
    "+ stages": ("tile_m", "tile_n", "schedule", "cluster_m", "cluster_n", "stages"),
    "+ epilogue, persistence, K split": ("tile_m", "tile_n", "schedule", "cluster_m", "cluster_n", "stages",
                                         "epilogue", "persistent", "split_k", "stream_k"),
    "shape (m, n, k)": ("m", "n", "k"),
    "weight matrix (n, k)": ("n", "k"),
}
TIME_EDGES_US = (6.0, 20.0, 200.0, 4000.0)  # launch-bound, short, medium, long, power-limited
CLOCK_EDGES_MHZ = (1700.0, 1900.0)  # the lower of the clocks recorded before and after a row


def _ape(pl, log_err):
    return (log_err.exp() - 1.0).abs()


def anatomy(pl, pred, groups: dict = GROUPS):
    """[(group, groups, MAPE % after each group's median log error is taken out)] for a
    prediction table with ``predicted_us`` and ``time_us``, after a first entry for the
    table as it is: ("none", 1, MAPE %)."""
    err = pred.select((pl.col("predicted_us") / pl.col("time_us")).log().alias("e"),
                      *(pl.col(c) for c in sorted({c for cols in groups.values() for c in cols})))
    out = [("none", 1, float(err.select(_ape(pl, pl.col("e")).mean()).item() * 100.0))]
    for name, cols in groups.items():
        left = err.select(_ape(pl, pl.col("e") - pl.col("e").median().over(list(cols))).mean()).item()
        out.append((name, err.select(pl.struct(list(cols)).n_unique()).item(), float(left) * 100.0))
    return out


def buckets(pl, pred, column: str, edges):
    """Rows, MAPE %, geomean predicted/measured and the share of the summed absolute error,
    by ``column`` cut at ``edges`` (a polars table, one row per bucket, in order)."""
    bounds = [float("-inf"), *edges, float("inf")]
    e = (pl.col("predicted_us") / pl.col("time_us")).log()
    label = pl.lit(None, dtype=pl.String)
    for lo, hi in zip(bounds[:-1], bounds[1:]):
        label = pl.when((pl.col(column) > lo) & (pl.col(column) <= hi)).then(pl.lit(f"({lo:g}, {hi:g}]")) \
            .otherwise(label)
    t = pred.with_columns(label.alias("bucket"), e.alias("e"), pl.int_range(pl.len()).alias("_row"))
    order = {f"({lo:g}, {hi:g}]": i for i, (lo, hi) in enumerate(zip(bounds[:-1], bounds[1:]))}
    total = t.select(_ape(pl, pl.col("e")).sum()).item()
    return (t.group_by("bucket")
            .agg(pl.len().alias("rows"), (_ape(pl, pl.col("e")).mean() * 100.0).alias("mape_pct"),
                 pl.col("e").mean().exp().alias("geomean"), (_ape(pl, pl.col("e")).sum() / total).alias("error_share"))
            .with_columns(pl.col("bucket").replace_strict(order, return_dtype=pl.Int32).alias("_order"))
            .sort("_order").drop("_order"))


def print_anatomy(pl, pred) -> None:
    print("\nin-sample MAPE left after each group's median error is taken out (a bound on any factor per group)")
    print(f"{'group':<34} {'groups':>6} {'MAPE %':>7}")
    for name, n, mape in anatomy(pl, pred):
        print(f"{name:<34} {n:6d} {mape:7.2f}")
    clock = pred.with_columns(pl.min_horizontal("sm_clock_start_mhz", "sm_clock_end_mhz").alias("clock_mhz"))
    for title, table in (("measured time (us)", buckets(pl, pred, "time_us", TIME_EDGES_US)),
                         ("SM clock recorded (MHz, the lower of before and after)",
                          buckets(pl, clock, "clock_mhz", CLOCK_EDGES_MHZ))):
        print(f"\nby {title}")
        print(f"{'bucket':<16} {'rows':>5} {'MAPE %':>7} {'pred/meas':>9} {'error share':>11}")
        for r in table.iter_rows(named=True):
            print(f"{r['bucket']:<16} {r['rows']:5d} {r['mape_pct']:7.2f} {r['geomean']:9.3f} {r['error_share']:11.3f}")


def development(gpu: str = "h100-sxm5-80gb", dtype: str = "bf16"):
    """(development rows, microbenchmark ParamSet) of ``gpu``'s shipped ``dtype``
    measurements (ws-hopper; the held-out list never read)."""
    sys.path.insert(0, str(ROOT / "src"))
    sys.path.insert(0, str(ROOT / "benchmarks"))
    from accuracy_protocol import development_rows
    from gemmperf.fit.microbench import fit_paramset
    from gemmperf.hardware import load_gpu

    shipped = ROOT / "results" / gpu / "shipped"
    pset = fit_paramset(load_gpu(shipped / "hardware.json"), str(shipped / "microbench.csv"), ["ws-hopper"], dtype)
    return development_rows(gpu, dtype), pset


def fit_in_sample(gpu: str = "h100-sxm5-80gb", dtype: str = "bf16"):
    """(development rows, fitted ParamSet): ws-pipelined's constants fitted on every
    development row (``development``), the microbenchmarks' parameters beneath them."""
    dev, pset = development(gpu, dtype)
    from gemmperf.fit.accuracy import fit_all

    fitted, _, _ = fit_all(dev, pset, residual=False)
    return dev, fitted


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--gpu", default="h100-sxm5-80gb")
    p.add_argument("--dtype", default="bf16")
    p.add_argument("--drop", action="store_true", help="also score without each feature in turn")
    p.add_argument("--anatomy", action="store_true",
                   help="also print where the in-sample error sits (by group, measured time and clock)")
    args = p.parse_args(argv)
    sys.path.insert(0, str(ROOT / "src"))
    sys.path.insert(0, str(ROOT / "benchmarks"))
    import numpy as np
    import polars as pl
    from sklearn.ensemble import HistGradientBoostingRegressor
    from sklearn.model_selection import GroupKFold, cross_val_predict

    from gemmperf.fit.accuracy import metrics
    from gemmperf.models import ws_pipelined as W

    dev, fitted = fit_in_sample(args.gpu, args.dtype)
    pred = W.predict(dev, fitted).with_columns(dev.get_column("testlist"))
    m = metrics(pred, pred="predicted_us")
    print(f"in sample ({dev.height} rows, {m['shapes']} shapes): MAPE {m['mape_pct']:.2f}%, "
          f"p95 {m['p95_ape_pct']:.1f}%, Spearman {m['spearman_mean']:.3f}, regret {m['regret_mean_pct']:.2f}%")
    if args.anatomy:
        print_anatomy(pl, pred)  # W.predict keeps the measurement's columns (the clocks among them)
    feats = features(pl)
    names = list(feats)
    x = pred.select(**feats).to_numpy().astype(float)
    y = np.log(pred.get_column("predicted_us").to_numpy() / pred.get_column("time_us").to_numpy())
    groups = pred.get_column("testlist").to_numpy()

    def loto_mape(cols: list[str]) -> float:
        idx = [names.index(c) for c in cols]
        est = HistGradientBoostingRegressor(max_iter=200, learning_rate=0.05, random_state=0)
        fit = cross_val_predict(est, x[:, idx], y, groups=groups, cv=GroupKFold(len(set(groups))))
        return float(np.mean(np.abs(np.exp(fit - y) - 1.0)) * 100.0)

    every = loto_mape(names)
    print(f"gradient-boosted correction on {len(names)} features, leave-one-testlist-out: MAPE {every:.2f}%")
    if args.drop:
        print(f"{'without':<18} {'MAPE %':>7} {'worth':>6}")
        for name in names:
            without = loto_mape([n for n in names if n != name])
            print(f"{name:<18} {without:7.2f} {without - every:6.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
