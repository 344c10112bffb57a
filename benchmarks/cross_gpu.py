"""What two GPUs' fitted models get wrong alike, and what the transfer loses to the target's own fit.

1. Each GPU's ws-pipelined constants fitted on every development row
   (``model_ceiling.fit_in_sample``), scored on those rows: the floor under every fitted
   figure of issues 17 and 18. Leave one testlist out and the transfer score rows the fit
   did not see; a fit scored on its own rows is the best the model's form does.
2. The rows both GPUs measured (the same shape and configuration): each GPU's in-sample
   log error (predicted / measured), their correlation, and their spread split into what
   the two share (the mean of the two errors) and what each has alone (half their
   difference), each again into a part per shape and a part within the shape
   (``shared_errors``). An error both GPUs make alike belongs to the kernel or to the
   model's form, not to one GPU's memory system or clocks.
3. For each direction, the transfer (``fit.transfer``, the source fitted on every
   development row) against the target's own in-sample fit, and what each carried value
   costs: the target's own fit with that one value set to the transferred one, its MAPE on
   the target's rows (``swap_costs``; the launch's and the slot's latencies, which the fits
   trade, also together). The values trade against each other, so the costs do not add
   up; the largest say where the transfer parts from what the target's GEMMs would fit.
4. The rows both GPUs' fits get wrongest alike (``shared_worst``).

    python benchmarks/cross_gpu.py [--gpus h100-sxm5-80gb,h200-sxm-141gb] [--dtype bf16]
        [--microbench H100.csv,H200.csv] [--top 20]

``--microbench`` as in transfer.py (fp8's are under benchmarks/results/microbench/). Two
fits and a few hundred predictions: about two minutes on 2 cores.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent


def paired(pl, a, b):
    """The rows of two prediction tables (``predicted_us``, ``time_us``, ``shape``,
    ``testlist``) that share a testlist and a configuration (``tables.CONFIG_KEY``): those
    columns, each side's measured time (``time_a_us``, ``time_b_us``) and log error
    (``err_a``, ``err_b``)."""
    from gemmperf.tables import CONFIG_KEY

    def side(t, s):
        return t.select(*CONFIG_KEY, "testlist", *(["shape"] if s == "a" else []),
                        pl.col("time_us").alias(f"time_{s}_us"),
                        (pl.col("predicted_us") / pl.col("time_us")).log().alias(f"err_{s}"))

    return side(a, "a").join(side(b, "b"), on=[*CONFIG_KEY, "testlist"], how="inner")


def shared_errors(pl, pair) -> dict:
    """What two GPUs' log errors on the same rows share: their correlation, and the
    standard deviation of the shared part (mean of the two) and of each one's own part
    (half their difference), each split into its shapes' means and what is left within
    the shapes; the MAPE % of each side and of each side's own part alone (the error left
    if the shared part were known)."""
    t = pair.with_columns(((pl.col("err_a") + pl.col("err_b")) / 2).alias("shared"),
                          ((pl.col("err_a") - pl.col("err_b")) / 2).alias("own"))
    out = {"rows": t.height, "shapes": t.get_column("shape").n_unique(),
           "correlation": float(np.corrcoef(t.get_column("err_a"), t.get_column("err_b"))[0, 1])}
    for part in ("shared", "own"):
        by_shape = t.select(pl.col(part).mean().over("shape")).to_series()
        out[f"{part}_sd"] = float(t.get_column(part).std())
        out[f"{part}_shape_sd"] = float(by_shape.std())
        out[f"{part}_within_sd"] = float((t.get_column(part) - by_shape).std())
    for s in ("a", "b"):
        out[f"mape_{s}_pct"] = float(t.select((pl.col(f"err_{s}").exp() - 1).abs().mean()).item() * 100)
    out["own_mape_pct"] = float(t.select((pl.col("own").exp() - 1).abs().mean()).item() * 100)
    return out


def shared_worst(pl, pair, top: int):
    """The ``top`` rows whose errors on both sides point the same way, by the smaller of the
    two errors' sizes (a row one GPU's timing got wrong shows on one side only)."""
    same = pair.filter(pl.col("err_a").sign() == pl.col("err_b").sign())
    return same.with_columns(pl.min_horizontal(pl.col("err_a").abs(), pl.col("err_b").abs()).alias("_size")) \
        .sort("_size", descending=True).head(top).drop("_size")


# values the fits trade against each other, also carried together: a ring slot's round trip
# is load_latency_us + ring_extra_latency_us from DRAM, + hit_extra_latency_us from the L2
# (the fill sees the first alone)
TOGETHER = (("load_latency_us", "ring_extra_latency_us", "hit_extra_latency_us"),)


def swap_costs(rows, own, carried, key, mape, together=TOGETHER) -> list[tuple[str, str, str, float]]:
    """(names, own values, carried values, ``mape(ParamSet, rows)`` with the carried ones)
    for every value the two ParamSets' ``key`` entries both hold that differs, and for each
    group of ``together``: ``own`` with that one value (or group) taken from ``carried``.
    Largest MAPE first; the values as text (a group's joined by " + ")."""
    from gemmperf.fit.constants import with_values
    from gemmperf.params import PARAM_NAMES

    def values(p) -> dict[str, float]:
        return {**{n: float(getattr(p, n)) for n in PARAM_NAMES if isinstance(getattr(p, n), float)},
                **{n: float(v) for n, v in p.constants.items()}}

    mine, theirs = values(own.get(*key)), values(carried.get(*key))
    names = [n for n in mine if n in theirs]
    groups = [(n,) for n in names if mine[n] != theirs[n]] + [g for g in together if all(n in names for n in g)]
    out = []
    for group in groups:
        swapped = with_values(own, *key, {n: theirs[n] for n in group})
        out.append((" + ".join(group), " + ".join(f"{mine[n]:.4g}" for n in group),
                    " + ".join(f"{theirs[n]:.4g}" for n in group), mape(swapped, rows)))
    return sorted(out, key=lambda r: -r[3])


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--gpus", default="h100-sxm5-80gb,h200-sxm-141gb", help="two GPU slugs")
    p.add_argument("--dtype", default="bf16")
    p.add_argument("--microbench", default="", help="each GPU's microbenchmark CSV, in the order of --gpus")
    p.add_argument("--top", type=int, default=20, help="rows of the shared-worst table")
    args = p.parse_args(argv)
    sys.path.insert(0, str(ROOT / "src"))
    sys.path.insert(0, str(ROOT / "benchmarks"))
    import polars as pl

    from gemmperf.fit.accuracy import fit_all
    from gemmperf.fit.transfer import transfer
    from gemmperf.models import ws_pipelined as W
    from transfer import gpu_side

    slugs = args.gpus.split(",")
    given = args.microbench.split(",") if args.microbench else []
    if len(slugs) != 2 or (given and len(given) != 2):
        p.error("--gpus: two slugs; --microbench: one file for each")
    key = ("ws-hopper", args.dtype)
    side = {}
    for i, slug in enumerate(slugs):
        side[slug] = gpu_side(slug, args.dtype, given[i] if given else None, key[0])
        side[slug]["fitted"], _, _ = fit_all(side[slug]["dev"], side[slug]["base"], residual=False)

    def table_mape(t) -> float:
        return float(((t.get_column("predicted_us") / t.get_column("time_us")) - 1).abs().mean() * 100)

    def mape(params, rows) -> float:
        return table_mape(W.predict(rows, params))

    a, b = slugs
    print(f"\n## {args.dtype}: each GPU's fit scored on its own development rows (in sample)\n")
    preds = {s: W.predict(v["dev"], v["fitted"]) for s, v in side.items()}
    in_sample = {s: table_mape(t) for s, t in preds.items()}
    for s in slugs:
        print(f"- {s}: {preds[s].height} rows, MAPE {in_sample[s]:.2f}%")
    pair = paired(pl, preds[a], preds[b])
    f = shared_errors(pl, pair)
    print(f"\n## The rows both measured: {f['rows']} rows, {f['shapes']} shapes (A = {a}, B = {b})\n")
    print(f"- in-sample MAPE on them: A {f['mape_a_pct']:.2f}%, B {f['mape_b_pct']:.2f}%; "
          f"correlation of the two log errors {f['correlation']:.3f}")
    print("- standard deviation of the log error (shapes' means / within the shapes):")
    print(f"  - shared by both (their mean): {f['shared_sd']:.4f} ({f['shared_shape_sd']:.4f} / "
          f"{f['shared_within_sd']:.4f})")
    print(f"  - each GPU's own (half their difference): {f['own_sd']:.4f} ({f['own_shape_sd']:.4f} / "
          f"{f['own_within_sd']:.4f})")
    print(f"- MAPE if the shared part were known, each GPU's own part left: {f['own_mape_pct']:.2f}%")
    for src, dst in ((a, b), (b, a)):
        s, t = side[src], side[dst]
        carried = transfer(s["fitted"], s["base"], t["base"], s["rates"], t["rates"])
        own = in_sample[dst]
        print(f"\n## {src} -> {dst}: the transfer {mape(carried, t['dev']):.2f}%, {dst}'s own fit in sample "
              f"{own:.2f}%\n")
        print(f"{dst}'s own fit with one value carried from {src}, the costliest first (MAPE points over {own:.2f}):\n")
        print("| value | own fit | carried | MAPE % | cost |")
        print("| --- | --- | --- | --- | --- |")
        for name, mine, theirs, m in swap_costs(t["dev"], t["fitted"], carried, key, mape):
            print(f"| {name} | {mine} | {theirs} | {m:.2f} | {m - own:+.2f} |")
    print(f"\n## The {args.top} rows both fits get wrongest alike (predicted / measured)\n")
    print("| testlist | m | n | k | tile | stages | cluster | persistent | raster | epilogue | schedule | split_k | "
          "stream_k | A us | B us | A | B |")
    print("| --- " * 17 + "|")
    for r in shared_worst(pl, pair, args.top).iter_rows(named=True):
        print(f"| {r['testlist']} | {r['m']} | {r['n']} | {r['k']} | {r['tile_m']}x{r['tile_n']} | {r['stages']} | "
              f"{r['cluster_m']}x{r['cluster_n']} | {r['persistent']} | {r['raster']} | {r['epilogue']} | "
              f"{r['schedule']} | {r['split_k']} | {r['stream_k']} | {r['time_a_us']:.1f} | {r['time_b_us']:.1f} | "
              f"{np.exp(r['err_a']):.2f} | {np.exp(r['err_b']):.2f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
