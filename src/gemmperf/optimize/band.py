"""How long the optimizer's answer runs against its predicted time: the answer band.

The answer is the minimum of the model's predictions over a family's whole space (over
20,000 ws-hopper configurations), so its predicted time carries the model's most
optimistic errors with it: the configurations it ranks first are, more often than the
others, those it predicts too fast. On shapes no testlist holds, the answers timed on the
H100 and H200 ran 1.08x their predicted time at the geometric mean (``--corrected``'s pick
1.05-1.06x), where configurations sampled at random on the same shapes ran 0.99-1.00x
(benchmarks/optimizer_picks.py; MODEL_ACCURACY.md). A band read off the protocol's rows
would be too narrow and centred in the wrong place; this one is read off timed answers.

``answer_times`` asks today's fit (and correction) for each timed shape's answer again, and
takes its measured time where a run timed that configuration; ``bands`` turns the ratios
measured / predicted into a median and a split-conformal interval (``intervals``): where
the next shape's answer is exchangeable with the timed ones (a shape drawn as they were,
the same GPU, fit and correction), its ratio falls inside with probability at least the
level.
"""

from __future__ import annotations

import polars as pl

from ..intervals import LEVEL, conformal_band
from ..params import ParamSet
from ..problem import parse_shape
from .shortlist import RERANK, reranked, shortlist
from .solver import solve

ANSWER_TIMES_SCHEMA = {"shape": pl.Utf8, "answer": pl.Utf8, "predicted_us": pl.Float64, "measured_us": pl.Float64,
                       "pick": pl.Utf8, "corrected_us": pl.Float64, "pick_measured_us": pl.Float64}


def answer_times(runs: pl.DataFrame, params: ParamSet, correction=None, family: str = "ws-hopper",
                 dtype: str = "bf16") -> pl.DataFrame:
    """One row per shape of ``runs`` (shape "MxNxK", config key, status, time_us; the first
    ok row of a configuration counts): the answer ``solve`` gives today under ``params``
    (``answer``, ``predicted_us``) and its ``measured_us`` where a run timed it (else null);
    with ``correction`` (fit.residual.Correction), ``--corrected``'s pick (``pick``: the
    model's RERANK best re-ranked by it), its ``corrected_us`` and ``pick_measured_us``."""
    timed: dict[tuple[str, str], float] = {}
    ok = runs.filter(pl.col("status") == "ok")
    for shape, config, time_us in ok.select("shape", "config", "time_us").iter_rows():
        timed.setdefault((shape, config), time_us)
    rows = []
    for name in runs.get_column("shape").unique(maintain_order=True):
        sol = solve(parse_shape(name, dtype), family, params.gpu, params, runner_up=False)
        row = {"shape": name, "answer": sol.config.key(), "predicted_us": float(sol.predicted_us),
               "measured_us": timed.get((name, sol.config.key())), "pick": None, "corrected_us": None,
               "pick_measured_us": None}
        if correction is not None:
            pick, _, corrected_us = reranked(shortlist(sol, params.gpu, params, RERANK), sol.shape, params,
                                             correction)[0]
            row.update(pick=pick.key(), corrected_us=corrected_us, pick_measured_us=timed.get((name, pick.key())))
        rows.append(row)
    return pl.DataFrame(rows, schema=ANSWER_TIMES_SCHEMA)


def bands(times: pl.DataFrame, level: float = LEVEL) -> dict:
    """``answer_times``' table -> {"answer": band of measured / predicted, "corrected":
    band of the corrected pick's measured / corrected time}; each None where too few were
    timed."""
    def ratios(measured: str, predicted: str):
        t = times.filter(pl.col(measured).is_not_null() & pl.col(predicted).is_not_null())
        return (t.get_column(measured) / t.get_column(predicted)).to_list()

    return {"answer": conformal_band(ratios("measured_us", "predicted_us"), level),
            "corrected": conformal_band(ratios("pick_measured_us", "corrected_us"), level)}
