"""The overview page of a GPU's report, in the order a reader wants it: where the data
came from (GPU, device, driver, dates, measured and verified rows, which parameters),
the headline accuracy of the best model out of sample and its predicted-against-measured
chart; then skipped stages, parameters, every model's accuracy and the ablations."""

from __future__ import annotations

import polars as pl

from ..params import PARAM_NAMES
from ..tables import ABLATION_MARK, FITTED_MODEL, valid_rows
from . import charts
from .common import MEASURED_KEY, NAV, NOTHING_MEASURED, OOS_MODELS, OVERVIEW, SCATTER_PER_MODEL, models_in, none
from .data import ReportData
from .html import Page, esc, table_html

# the out-of-sample splits the headline can quote, preferred first, and what each means
HEADLINE_SPLITS = {
    "loto": "leave-one-testlist-out (ws-hopper rows): each development testlist predicted by a fit on the "
            "other testlists only",
    "cv": "grouped cross-validation by shape on the development testlists: each shape predicted by a fit "
          "that never saw it",
    "heldout": "the {heldout} testlist, never used in any fit",
    "all": "grouped cross-validation and the held-out testlist pooled",
}


# --------------------------------------------------------------- where the data came from


def testlist_counts(data: ReportData) -> pl.DataFrame:
    """Per testlist: rows measured, rows verified (status ok, full kernel, a valid time),
    shapes; from the measurement files, else from the measured predictions."""
    rows = []
    if data.measurements:
        for name, meas in data.measurements.items():
            ok = valid_rows(meas)
            shapes = ok.select("m", "n", "k").unique().height if ok.height else 0
            rows.append({"testlist": name, "rows measured": meas.height, "verified": ok.height, "shapes": shapes})
        return pl.DataFrame(rows)
    meas = data.predictions.filter(pl.col("time_us").is_not_null()).unique(subset=MEASURED_KEY)
    return meas.group_by("testlist").agg(pl.len().alias("verified"), pl.col("shape").n_unique().alias("shapes")).sort(
        "testlist")


def measured_facts(data: ReportData) -> list[str]:
    """Device, driver, dates and clocks of the measured rows, one item each."""
    meas = data.predictions.filter(pl.col("time_us").is_not_null()).unique(subset=MEASURED_KEY)
    items = []
    for c in ("device", "driver", "cuda"):
        if c in meas.columns:
            items.append(f"{c}: {', '.join(str(v) for v in meas[c].drop_nulls().unique().sort())}")
    if "timestamp" in meas.columns:
        ts = meas["timestamp"].cast(pl.Utf8)
        items.append(f"measured from {ts.min()} to {ts.max()}")
    if "sm_clock_start_mhz" in meas.columns:
        clk = pl.concat([meas["sm_clock_start_mhz"], meas["sm_clock_end_mhz"]]).cast(pl.Float64)
        items.append(f"SM clock during the runs: {clk.min():.0f}-{clk.max():.0f} MHz (never locked)")
    return items


def params_source(data: ReportData) -> str:
    """Which model parameters the predictions used, and where they came from."""
    sources = sorted({p.source for p in data.pset.entries.values()}) or ["default"]
    if sources == ["default"]:
        text = "descriptor defaults (nothing fitted)"
    else:
        where = f" ({data.params_file}, written {data.params_date})" if data.params_file else ""
        text = f"{' and '.join(sources)} by the workflow's fit{where}"
    if data.pset.overrides:
        text += "; overridden by the config: " + ", ".join(f"{k}={v}" for k, v in data.pset.overrides.items())
    return f"model parameters: {text}"


def data_source(page: Page, data: ReportData) -> None:
    g = data.gpu
    page.h2("Where the data came from")
    if data.source == "measure":
        page.p("Measured now, on this machine's GPU, by this workflow's collect and microbench rules.")
    elif data.source == "shipped":
        page.p(f"Shipped reference measurements (results/{g.slug}/shipped/); no GPU of this kind here.")
        if data.shipped_readme:
            paras = [p.strip() for p in data.shipped_readme.split("\n\n") if p.strip()]
            head = paras[0].lstrip("# ") if paras else ""
            first = paras[1] if len(paras) > 1 else ""
            page.add(f"<blockquote><b>{esc(head)}</b><br>{esc(first)}</blockquote>")
    else:
        none(page, NOTHING_MEASURED)
    items = [f"GPU: {g.name} ({g.slug}, {g.arch}, {g.sms} SMs, {g.sm_clock_mhz:.0f} MHz, "
             f"{g.dram_bytes_per_s / 1e12:.2f} TB/s DRAM, {g.l2_bytes / 2**20:.0f} MiB L2; descriptor: {g.source}"
             f"{', driver ' + g.driver if g.driver else ''})"]
    if data.measured:
        items += measured_facts(data)
    items.append(params_source(data))
    page.add("<ul>" + "".join(f"<li>{esc(i)}</li>" for i in items) + "</ul>")
    if data.measured:
        page.add(table_html(testlist_counts(data)))


# ------------------------------------------------------------------------ headline


def accuracy_table(acc: pl.DataFrame) -> pl.DataFrame:
    t = acc.filter(pl.col("family") == "all").select(
        "split", "model", "n", "shapes", "median_ape_pct", "mape_pct", "p90_ape_pct", "p95_ape_pct",
        "max_ape_pct", "within_10pct", "geomean_ratio", "spearman_mean", "regret_mean_pct",
    )
    best = pl.col("median_ape_pct") == pl.col("median_ape_pct").min().over("split")
    return t.with_columns(best=best).sort("split", "median_ape_pct")


def headline(data: ReportData) -> tuple[str, dict] | None:
    """(split, row of accuracy_table) of the most accurate model on the preferred split
    (HEADLINE_SPLITS) that accuracy.csv has; None when nothing was scored."""
    if data.accuracy is None or data.accuracy.is_empty():
        return None
    t = accuracy_table(data.accuracy)
    for split in HEADLINE_SPLITS:
        rows = t.filter((pl.col("split") == split) & pl.col("best"))
        if rows.height:
            return split, rows.row(0, named=True)
    return None


def _figures(r: dict) -> str:
    return (f"median error {r['median_ape_pct']:.1f}%, mean {r['mape_pct']:.1f}%, 95th percentile "
            f"{r['p95_ape_pct']:.1f}%, {r['within_10pct']:.0%} of configurations within 10%")


def headline_section(page: Page, data: ReportData) -> str | None:
    """The headline sentence and the best model's out-of-sample chart; returns the model."""
    page.h2("Headline: the best model out of sample")
    best = headline(data)
    if best is None:
        none(page, NOTHING_MEASURED)
        return None
    split, r = best
    regret = (f"; its pick per shape runs {r['regret_mean_pct']:.1f}% slower than the measured best on average"
              if r.get("regret_mean_pct") is not None else "")
    page.add(f"<p><b>{esc(r['model'])}</b>: {esc(_figures(r))}{esc(regret)} ({r['n']} configurations, "
             f"{r['shapes']} shapes).<br>Split: {esc(split)}, "
             f"{esc(HEADLINE_SPLITS[split].format(heldout=data.heldout))}.</p>")
    held = data.accuracy.filter((pl.col("split") == "heldout") & (pl.col("model") == r["model"])
                                & (pl.col("family") == "all"))
    if split != "heldout" and held.height:
        h = held.row(0, named=True)
        page.p(f"On the held-out {data.heldout} testlist, never used in any fit: {_figures(h)} "
               f"({h['n']} configurations).")
    oos_chart(page, data, r["model"])
    return r["model"]


def oos_chart(page: Page, data: ReportData, model: str) -> None:
    if data.out_of_sample is None:
        return
    d = data.out_of_sample.filter(pl.col("model") == model)
    if d.is_empty():
        return
    d = d.with_columns(model=pl.format("{} ({})", "model", "split"), limiter=pl.lit(""), breakdown=pl.lit(""))
    pts, dropped = charts.sample(d, SCATTER_PER_MODEL, "model")
    cols = ["model", "shape", "config", "testlist", "split", "time_us", "predicted_us", "ratio", "limiter",
            "breakdown"]
    shown = f" {pts.height} of {d.height} points shown (a random sample that keeps the worst)." if dropped else ""
    page.h2(f"Predicted against measured: {model}, out of sample")
    page.chart(charts.predicted_vs_measured(pts.select(cols), sorted(pts["model"].unique().to_list())),
               f"Each dot is one measured configuration predicted by a fit that never saw it (colour: the split); "
               f"on the dashed diagonal the prediction is exact, above it the model predicts slower than measured. "
               f"Every model on every row: the page Predicted vs measured.{shown}")


# ------------------------------------------------------------------------ the rest


def answer_band_section(page: Page, data: ReportData) -> None:
    """How long the optimizer's answer runs against its predicted time (optimize.band):
    the band `gemmperf optimize` gives with its answer, where the run has one."""
    b = data.answer_band
    if not b:
        return
    page.h2("How long the optimizer's answer runs")
    rows = [{"pick": name, "timed": x["n"], "median measured / predicted": round(x["median"], 3),
             f"{x['level']:.0%} of them within": f"{x['low']:.3f}-{x['high']:.3f}x"}
            for name, x in (("the answer (fitted model)", b.get("answer")),
                            ("--corrected's pick (corrected time)", b.get("corrected"))) if x]
    page.p(f"The optimizer's answer is the minimum of the model's predictions over the whole space, so its "
           f"predicted time carries the model's most optimistic errors. Read off {b['shapes']} shapes no testlist "
           f"holds, whose answers were timed ({', '.join(b['runs'])}), asked of this fit again: `gemmperf optimize "
           f"--shape` gives this band with its answer (median and split-conformal interval)."
           + (f" The residual correction learned from these answers too, so --corrected's band is cross-fitted: "
              f"each of {len(b['corrected_folds'])} folds of the answers' sets asked of a correction that learned "
              f"from the others alone." if b.get("corrected_folds") else ""))
    page.add(table_html(pl.DataFrame(rows)) if rows else "<p>Too few answers timed for a band.</p>")


def params_table(data: ReportData) -> pl.DataFrame:
    rows = []
    entries = dict(data.pset.entries)
    if not entries and "family" in data.predictions.columns:  # nothing fitted: the descriptor defaults
        for family, dtype in data.predictions.select("family", "dtype").unique().sort("family").iter_rows():
            entries[(family, dtype)] = data.pset.get(family, dtype)
    for (family, dtype), p in sorted(entries.items()):
        row = {"family": family, "dtype": dtype, "source": p.source}
        for name in PARAM_NAMES:
            value, sigma = getattr(p, name), p.uncertainty.get(name)
            row[name] = f"{value:.4g}" + (f" ± {sigma:.2g}" if sigma is not None else "")
        rows.append(row)
    return pl.DataFrame(rows)


def every_model(page: Page, data: ReportData) -> None:
    page.h2("Accuracy of every model (out of sample)")
    if data.accuracy is None:
        none(page, NOTHING_MEASURED)
        return
    t = accuracy_table(data.accuracy)
    page.p(f"cv: grouped cross-validation by shape on the development testlists; heldout: the "
           f"{data.heldout} testlist, never used in any fit; all: both pooled, every row of every "
           f"testlist predicted by a fit that did not see it. The best model per split is shaded. "
           f"Regret: how much slower the model's pick per shape is than the measured best.")
    page.add(table_html(t, highlight="best", max_rows=400))
    models = models_in(t["model"].to_list(), OOS_MODELS)
    page.chart(charts.accuracy_bars(t.filter(pl.col("model").is_in(models)), models),
               "Median absolute percentage error of each model on configurations its fit did not see; "
               "shorter is better, held-out (another testlist) against cross-validated.")
    ablations_section(page, data)


ABLATIONS_NOT_RUN = (
    "Not run here. The ablations refit ws-pipelined once per effect and fold with that effect "
    "switched off (about 10 minutes on 2 cores, twice the rest of the workflow), so the "
    "default run leaves them out. To show them on this page: snakemake --cores all --config "
    "ablations=True (or ablations: true in config/config.yaml). The tables alone: "
    "snakemake --cores all ablations, which writes results/{slug}/ablations.json and "
    "ablations.csv. The figures last recorded on the shipped data: benchmarks/MODEL_ACCURACY.md."
)


def ablation_table(abl: pl.DataFrame) -> pl.DataFrame:
    """One row per split and effect switched off, with the change of MAPE against every
    effect on (ws-pipelined+fit on the same split)."""
    t = abl.filter((pl.col("family") == "all") & ((pl.col("model") == FITTED_MODEL)
                                                  | pl.col("model").str.contains(ABLATION_MARK, literal=True)))
    base = t.filter(pl.col("model") == FITTED_MODEL).select("split", base=pl.col("mape_pct"))
    off = pl.col("model").str.split(ABLATION_MARK).list.last()
    return t.join(base, on="split", how="left").with_columns(
        effect_off=pl.when(pl.col("model") == FITTED_MODEL).then(pl.lit("none (every effect on)")).otherwise(off),
        mape_change_pct=pl.col("mape_pct") - pl.col("base"),
    ).select("split", "effect_off", "n", "mape_pct", "mape_change_pct", "median_ape_pct", "p95_ape_pct",
             "spearman_mean", "regret_mean_pct").sort("split", "mape_pct")


def ablations_section(page: Page, data: ReportData) -> None:
    page.h2("Ablations: ws-pipelined with one effect switched off (out of sample)")
    if data.ablations is None:
        none(page, ABLATIONS_NOT_RUN.format(slug=data.gpu.slug))
        return
    page.p("Each effect of ws-pipelined switched off in turn, its constants refitted on the same folds "
           "(no residual correction). mape_change_pct: MAPE minus that of every effect on, on the same split; "
           "a large positive change means the effect earns its keep.")
    page.add(table_html(ablation_table(data.ablations), max_rows=400))


def overview(data: ReportData) -> Page:
    """Where the data came from, the headline and its chart first; the details after."""
    page = Page(OVERVIEW, f"Overview: {data.gpu.name}")
    page.p(data.note, cls="note")
    data_source(page, data)
    headline_section(page, data)
    answer_band_section(page, data)
    if data.skipped:
        items = "".join(f"<li><b>{esc(s)}</b>: {esc(r)}</li>" for s, r in data.skipped.items())
        page.add(f"<h2>Stages skipped</h2><ul>{items}</ul>")
    page.h2("Model parameters (value ± one sigma)")
    page.add(table_html(params_table(data)))
    every_model(page, data)
    page.h2("Pages")
    page.add("<ul>" + "".join(f"<li><a href='{f}'>{esc(t)}</a></li>" for f, t in NAV[1:]) + "</ul>")
    return page
