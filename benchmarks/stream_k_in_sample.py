"""Where ws-pipelined's stream-K error sits, in sample: the constants fitted on every
development row (``model_ceiling.fit_in_sample``), the stream-K rows' fitted error and bias
by the worker's tile segments, by short K with two segments, and by cluster and epilogue,
beside the model's reduction term (the partials' writes, arrivals and read-back).

The segments and parts are read off the predicted k-blocks a worker runs (S = I for
stream-K) and the tile's KT = ceil(K / TK): n_seg = 1 + ceil((I - 1) / KT) at most, as
the model's geometry counts them (geometry.py).

    python benchmarks/stream_k_in_sample.py [--gpu h100-sxm5-80gb] [--dtype bf16]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SHORT_KT = 6  # k-blocks a tile at most, for "short K"


def table(pl, rows, by):
    """Per group of ``by``: rows, fitted MAPE %, bias % (geometric mean of measured /
    predicted, less 1), and the mean reduction term and measured time (us)."""
    return (rows.group_by(by)
            .agg(n=pl.len(), mape=((pl.col("predicted_us") / pl.col("time_us") - 1).abs().mean() * 100),
                 bias=((pl.col("time_us") / pl.col("predicted_us")).log().mean().exp() - 1) * 100,
                 reduction_us=pl.col("reduction_us").mean(), time_us=pl.col("time_us").mean())
            .sort(by))


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--gpu", default="h100-sxm5-80gb")
    p.add_argument("--dtype", default="bf16")
    args = p.parse_args(argv)
    sys.path.insert(0, str(ROOT / "benchmarks"))
    import polars as pl
    from model_ceiling import fit_in_sample

    dev, fitted = fit_in_sample(args.gpu, args.dtype)
    from gemmperf.models import ws_pipelined as W

    pred = W.predict(dev, fitted).with_columns(kt=(pl.col("k") / pl.col("tile_k")).ceil())
    pred = pred.with_columns(segments=1 + ((pl.col("k_stages") - 1) / pl.col("kt")).ceil(),
                             short=pl.col("kt") <= SHORT_KT, cluster=pl.col("cluster_m") * pl.col("cluster_n"))
    sk = pred.filter(pl.col("stream_k").cast(pl.Boolean))
    pl.Config.set_tbl_rows(40)
    pl.Config.set_tbl_width_chars(160)
    pl.Config.set_float_precision(2)
    print(f"{args.gpu} {args.dtype}: {pred.height} development rows, {sk.height} stream-K, fitted in sample")
    print(table(pl, pred.with_columns(pl.col("stream_k").cast(pl.Boolean)), "stream_k"))
    print("stream-K rows by the worker's tile segments (at most)")
    print(table(pl, sk, "segments"))
    print(f"stream-K rows of two segments by KT (short K: KT <= {SHORT_KT})")
    print(table(pl, sk.filter((pl.col("segments") == 2) & pl.col("short")), "kt"))
    print("stream-K rows by short K, cluster CTAs and epilogue")
    print(table(pl, sk, ["short", "cluster", "epilogue"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
