"""One GPU's report: seven linked, self-contained pages under results/<gpu>/report/,
PNG images of the key charts, and a summary.json for the cross-GPU index."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl

from ..models import ws_persistent, ws_stage
from ..problem import FAMILIES
from ..tables import ABLATION_MARK, CONFIG_KEY
from . import charts
from .common import (ACCURACY, ERRORS, KERNELS, MEASURED_KEY, NAV, NOTHING_MEASURED, OOS_MODELS, OVERVIEW,
                     PRED_MODELS, ROOFLINE, SCATTER_PER_MODEL, TILINGS, TIMELINE, models_in, none)
from .data import ReportData
from .html import Page, esc, fmt, table_html
from .overview import accuracy_table, overview

__all__ = ["NAV", "OVERVIEW", "ACCURACY", "ERRORS", "ROOFLINE", "TIMELINE", "TILINGS", "KERNELS", "IMAGES",
           "build_pages", "write_gpu_report", "summary", "readme_block"]
IMAGES = ["predicted_vs_measured", "ratio", "roofline", "timeline"]


# ------------------------------------------------------------------------- predicted/measured


def measured_predictions(data: ReportData) -> pl.DataFrame:
    d = data.predictions.filter(pl.col("time_us").is_not_null())
    if "split" not in d.columns:
        d = d.with_columns(split=pl.lit("fitted on"))
    return d.with_columns(breakdown=charts.breakdown_expr(d.columns))


def accuracy_page(data: ReportData) -> Page:
    page = Page(ACCURACY, "Predicted against measured")
    if not data.measured:
        none(page, NOTHING_MEASURED)
        return page
    d = measured_predictions(data)
    models = models_in(d["model"].unique().to_list(), PRED_MODELS)
    pts, dropped = charts.sample(d, SCATTER_PER_MODEL, "model")
    cols = ["model", "shape", "config", "testlist", "split", "time_us", "predicted_us", "ratio", "limiter", "breakdown", "ape_pct"]
    pts = pts.select(cols).with_columns(pl.col("time_us", "predicted_us", "ratio").round(4))
    shown = (f" {pts.height} of {d.height} points shown: a random sample of {SCATTER_PER_MODEL} per model "
             f"(seed 0) that always keeps each model's 30 worst." if dropped else "")
    page.p(f"The workflow's predictions on every measured configuration: parameters fitted on the "
           f"development testlists, the {data.heldout} testlist held out (its rows are marked in the tooltips; "
           f"the residual correction was trained on the others).")
    page.chart(charts.predicted_vs_measured(pts, models),
               "Each dot is one measured configuration; on the dashed diagonal the prediction is exact, above it "
               "the model is pessimistic (predicts slower). Click a legend entry to isolate a model; hover for the "
               "configuration and the model's breakdown; scroll to zoom." + shown, image="predicted_vs_measured")
    unseen_section(page, data)
    if data.out_of_sample is not None:
        oos = data.out_of_sample.filter(~pl.col("model").str.contains(ABLATION_MARK, literal=True))
        omodels = models_in(oos["model"].unique().to_list(), OOS_MODELS)
        page.h2("Sorted ratio curves (out of sample)")
        page.chart(charts.ratio_curves(oos, omodels),
                   "As in the gemm-model README: every configuration's predicted/measured ratio, sorted; a flat "
                   "curve at 1.0 is a perfect model, the left end is the most optimistic case and the right end the "
                   "most pessimistic. Out-of-sample predictions only (grouped CV folds and the held-out testlist).",
                   image="ratio")
    return page


# headline.csv's splits, as the accuracy page names them
UNSEEN_SPLITS = {"testlist": "leave one testlist out", "nk": "grouped by weight matrix (n, k)"}
PICKS_SHOWN = 30
NVMMH_REGRET = "nvMatmulHeuristics regret %"


def unseen_section(page: Page, data: ReportData) -> None:
    """Issue 17's headline: each development testlist predicted by a fit that saw none of
    it, and 5 folds grouped by (n, k), per model and shape class (ws-hopper rows)."""
    page.h2("On shapes the fit never saw")
    if data.headline is None or data.headline.height == 0:
        page.p("Not scored here: " + data.skipped.get("headline", "no headline table (gemmperf accuracy --splits)")
               + ".")
        return
    # fixed text with markup: added as HTML (page.p escapes)
    page.add("<p>Every figure out of sample, ws-hopper rows. <b>Leave one testlist out</b> (the headline): "
             "each development testlist is predicted by constants and a correction fitted on the others only; "
             "<b>grouped by weight matrix</b>: 5 folds, no (n, k) of a test row in its fit. Spearman is the mean "
             "per-shape rank correlation of predicted and measured times; regret is the measured time of the "
             "model's pick over the measured best, tied picks counted at their mean. A row may be in several "
             "classes. nvMatmulHeuristics (the nvmmh extra) is scored on the rows it estimates.</p>")
    d = data.headline.with_columns(pl.col("split").replace(UNSEEN_SPLITS))
    cols = {"split": "split", "model": "model", "class": "class", "n": "rows", "shapes": "shapes",
            "mape_pct": "MAPE %", "p95_ape_pct": "p95 APE %", "geomean_ratio": "geomean pred/meas",
            "spearman_mean": "Spearman", "regret_mean_pct": "regret %"}
    page.add(table_html(d.select([pl.col(c).alias(n) for c, n in cols.items() if c in d.columns]), digits=3))
    picks_section(page, data)


def picks_section(page: Page, data: ReportData) -> None:
    """Leave one testlist out: each model's pick per shape next to the measured best, the
    worst shapes of the corrected model first."""
    if data.headline_picks is None or data.headline_picks.height == 0:
        return
    d = data.headline_picks.filter(pl.col("split") == "testlist") if "split" in data.headline_picks.columns \
        else data.headline_picks
    regrets = [c for c in d.columns if c.endswith(" regret %")]
    if d.height == 0 or not regrets:
        return
    page.h2("Picks per shape (leave one testlist out)")
    counts = "; ".join(f"{c.removesuffix(' regret %')}: {int((d[c] < 1.0).sum())}" for c in regrets)
    page.p(f"Shapes where a model's pick is within 1% of the measured best, of {d.height}: {counts}. "
           f"The {min(PICKS_SHOWN, d.height)} shapes where the best model's pick costs most, each model's pick as its "
           "measured time (tied picks at their mean) and regret.")
    ours = [c for c in regrets if c != NVMMH_REGRET] or regrets  # the last of ours is the best model
    show = d.sort(ours[-1], descending=True, nulls_last=True).head(PICKS_SHOWN)
    page.add(table_html(show.drop([c for c in ("split", "dtype") if c in show.columns]), digits=2))


# ------------------------------------------------------------------------------ errors


def readme_block(r: dict) -> str:
    """One configuration printed as the gemm-model README prints its cases."""
    lines = [
        f"MNK {r['m']} {r['n']} {r['k']}   ({r['testlist']}, {r['split']}, {r['family']} {r['dtype']})",
        f"CTA ({r['tile_m']} {r['tile_n']})  TK {r['tile_k']}  stages {r['stages']}",
        f"CLUSTER ({r['cluster_m']} {r['cluster_n']})  persistent {r['persistent']}  raster {r['raster']}",
        f"RATIO: {r['ratio']}",
        f"    predicted: {r['predicted_us']}",
        f"    actual: {r['time_us']}",
    ]
    if r.get("setup_us") is not None:  # ws-persistent: the README's exact layout
        lines += [
            "PROLOGUE", f"    Overhead: {r['setup_us']}", f"    DMA: {r['first_dma_us']}",
            "MAINLOOP", f"    Limiter: {str(r['limiter']).upper()}",
            f"        DMA: {r['wave_dma_us']}", f"        MATH: {r['wave_math_us']}",
            f"        EPILOG: {r['wave_epilogue_us']}",
            "    Last Wave", f"        DMA: {r['last_wave_dma_us']}", f"        MATH: {r['last_wave_math_us']}",
            f"        EPILOG: {r['last_wave_epilogue_us']}",
        ]
    else:
        lines.append(f"LIMITER: {str(r['limiter']).upper()}")
        lines.append("BREAKDOWN")
        for c in charts.PHASE_COLS:
            if r.get(c) is not None:
                lines.append(f"    {c}: {fmt(r[c], 4) if isinstance(r[c], float) else r[c]}")
    return "\n".join(lines)


def errors_page(data: ReportData) -> Page:
    page = Page(ERRORS, "Where the errors are")
    if not data.measured:
        none(page, NOTHING_MEASURED)
        return page
    d = measured_predictions(data)
    models = models_in(d["model"].unique().to_list(), PRED_MODELS)
    page.p("The workflow's predictions against the measurements, split into the testlists the parameters "
           f"were fitted on and the held-out {data.heldout} testlist. Bars: median absolute percentage error; "
           "ticks: 90th percentile (symlog axis).")
    for field, title, what in (
        ("limiter", "predicted limiter", "the phase each model says limits the kernel"),
        ("shape_class", "shape class", "square, skinny, odd sizes (not multiples of 64), small (M*N*K <= 512^3); "
                                       "a shape takes the first class that applies, in the order small, skinny, odd, square"),
        ("family", "kernel family", "the kernel family measured"),
    ):
        page.h2(f"Error by {title}")
        page.chart(charts.error_by(d, field, title, models),
                   f"One bar per model and {title} ({what}); a long bar means the model is far off there.")
    page.h2("The ten worst configurations of each model")
    page.p("Worst by |log(predicted/measured)|, printed as the gemm-model README prints its cases "
           "(times in us; for ws-persistent the README's own layout).")
    for model in models:
        worst = (d.filter(pl.col("model") == model)
                 .with_columns(bad=pl.col("ratio").log().abs()).sort("bad", descending=True).head(10))
        blocks = "\n\n".join(readme_block(r) for r in worst.iter_rows(named=True))
        page.add(f"<details{' open' if model == models[-1] else ''}><summary><b>{esc(model)}</b></summary>"
                 f"<pre>{esc(blocks)}</pre></details>")
    return page


# ----------------------------------------------------------------------------- roofline


def microbench_ceilings(data: ReportData) -> list[dict]:
    g = data.gpu
    peak_bf16 = g.peak_flops("bf16") / 1e12 if g.supports("bf16") else g.peak_flops("fp32") / 1e12
    out = [
        {"name": f"bf16 tensor-core peak, spec ({peak_bf16:.0f})", "kind": "flat", "value": peak_bf16, "cap": peak_bf16, "measured": "spec"},
        {"name": f"fp32 FMA peak, spec ({g.peak_flops('fp32') / 1e12:.0f})", "kind": "flat",
         "value": g.peak_flops("fp32") / 1e12, "cap": peak_bf16, "measured": "spec"},
    ]
    mb = data.microbench
    measured_dram = False
    if mb is not None and "kind" in mb.columns:
        for kind, label in (("dram", "DRAM copy, measured"), ("l2", "L2 copy, measured")):
            r = mb.filter(pl.col("kind") == kind)
            if r.height:
                tbps = float((r["bytes"] / r["time_us"]).max()) / 1e6
                out.append({"name": f"{label} ({tbps:.2f} TB/s)", "kind": "bw", "value": tbps, "cap": peak_bf16, "measured": "measured"})
                measured_dram |= kind == "dram"
        math = mb.filter((pl.col("kind") == "math") & pl.col("flops").is_not_null())
        for (family,), r in math.group_by("family", maintain_order=True):
            tf = float((r["flops"] / r["time_us"]).max()) / 1e6
            out.append({"name": f"{family} math-only, measured ({tf:.0f})", "kind": "flat", "value": tf, "cap": tf, "measured": "measured"})
    if not measured_dram:
        bw = g.dram_bytes_per_s / 1e12
        out.append({"name": f"DRAM, spec ({bw:.2f} TB/s)", "kind": "bw", "value": bw, "cap": peak_bf16, "measured": "spec"})
    return out


def roofline_points(data: ReportData) -> pl.DataFrame | None:
    pts = []
    if data.measured:
        d = data.predictions.filter(pl.col("time_us").is_not_null()).unique(subset=list(CONFIG_KEY), keep="first")
        best = d.sort("time_us").group_by("shape", "family", maintain_order=True).first()
        pts.append(best.select(pl.col("family").alias("kernel"), "shape", "config", "intensity", "tflops", "time_us"))
    ks = data.kernel_speed
    if ks:
        for row in ks.get("rows", []):
            m, n, k = (int(x) for x in row["shape"].split("x"))
            inten = 2.0 * m * n * k / ((m * k + k * n + m * n) * 2)
            if row.get("cublas_tflops"):
                pts.append(pl.DataFrame({"kernel": ["cuBLAS (kernel-speed run)"], "shape": [row["shape"]], "config": ["cuBLAS bf16"],
                                         "intensity": [inten], "tflops": [row["cublas_tflops"]],
                                         "time_us": [row["flops"] / row["cublas_tflops"] / 1e6]}))
    return pl.concat(pts, how="diagonal_relaxed") if pts else None


def roofline_page(data: ReportData) -> Page:
    page = Page(ROOFLINE, "Roofline")
    if not data.measured:
        none(page, NOTHING_MEASURED + " The ceilings below are the descriptor's figures only.")
    pts = roofline_points(data)
    page.chart(charts.roofline(pts, microbench_ceilings(data)),
               "As in the PA2 report: each dot is the fastest measured configuration of one shape and kernel family, "
               "at its arithmetic intensity (2MNK over the bytes of A, B and C read or written once); a kernel "
               "under the sloped line is DRAM-bound, under a flat line math-bound; solid lines were measured here "
               "(microbenchmarks), dashed ones are the data sheet's.", image="roofline")
    return page


# ----------------------------------------------------------------------------- timeline


def timeline_choices(data: ReportData, limit: int = 6) -> pl.DataFrame:
    d = data.predictions.filter(pl.col("model") == ws_stage.NAME)
    if d.is_empty():
        return d
    d = d.filter(pl.col("k_stages").is_between(4, 32) & (pl.col("waves") <= 3))
    if "time_us" in d.columns:
        d = d.sort(pl.col("time_us").is_null(), "k_stages", descending=[False, True])
    picks = d.unique(subset=["family", "limiter", "waves"], keep="first", maintain_order=True)
    order = {family: i for i, family in enumerate(FAMILIES)}
    return picks.sort(pl.col("family").replace_strict(order, default=9), "waves").head(limit)


def label_of(r: dict) -> str:
    meas = f", measured {r['time_us']:.1f} us" if r.get("time_us") is not None else ""
    return (f"{r['m']}x{r['n']}x{r['k']} {r['family']} {r['tile_m']}x{r['tile_n']}x{r['tile_k']} "
            f"B={r['stages']}{meas}")


def timeline_page(data: ReportData) -> Page:
    page = Page(TIMELINE, "Timeline")
    picks = timeline_choices(data)
    if picks.is_empty():
        none(page, "No ws-stage predictions to draw.")
        return page
    bars, labels = [], []
    for r in picks.iter_rows(named=True):
        lab = label_of(r)
        labels.append(lab)
        bars += [{**b, "label": lab} for b in ws_stage.timeline(r, data.pset, max_waves=2)]
    page.p("The ws-stage simulator's events (paper section 2.2) for a few configurations: one per kernel "
           "family, limiter and wave count, 4-32 K stages, at most two waves drawn. Pick one in the menu under the chart.")
    page.chart(charts.gantt(pl.DataFrame(bars), labels),
               "The paper's picture: each bar is one stage's TMA/cp.async load of an A or B tile (DMA warps) or its "
               "MMA (MATH warp), then the wave's epilogue; gaps in the MATH row are the math warp waiting for data "
               "(load-bound), gaps in the DMA rows are the ring of B buffers being full (math-bound).",
               image="timeline")
    persistent_phases(page, data, picks, labels)
    return page


def persistent_phases(page: Page, data: ReportData, picks: pl.DataFrame, labels: list[str]) -> None:
    """ws-persistent's phases and wave parts for the timeline's configurations, as the model gives them."""
    keys = ["m", "n", "k", "family", "dtype", "tile_m", "tile_n", "tile_k", "stages"]  # what picks ws-stage rows
    per = (data.predictions.filter(pl.col("model") == ws_persistent.NAME)
           .unique(subset=keys, keep="first", maintain_order=True)
           .join(picks.select(keys).with_columns(label=pl.Series(labels)), on=keys, maintain_order="right"))
    if per.is_empty():
        return
    phases, waves = [], []
    for r in per.iter_rows(named=True):
        phases += [{"label": r["label"], **p} for p in ws_persistent.phases(r)]
        waves += [{"label": r["label"], **w} for w in ws_persistent.wave_parts(r)]
    page.h2("The persistent model's phases (ws-persistent, same configurations)")
    page.chart(charts.persistent_phases(pl.DataFrame(phases), labels),
               "gemm-model's persistent kernel: setup, the first loads, then each wave costs the largest of its DMA, "
               "MATH and EPILOGUE times, and the last wave's epilogue is exposed; the bar ends at the predicted time.")
    page.chart(charts.wave_limiters(pl.DataFrame(waves), labels),
               "Inside one full wave: the DMA, MATH and EPILOGUE times that overlap; the longest is the limiter "
               "and sets the wave's time.")


# ------------------------------------------------------------------------------ tilings


def tilings_page(data: ReportData) -> Page:
    page = Page(TILINGS, "Tilings")
    page.p("The Z3-optimal configuration per shape and kernel family (minimum predicted time, then minimum "
           "MATH waiting time), with the runner-up, the solve time and, where the shape was measured, the "
           "measured time of the choice against the best measured configuration (regret).")
    nvmm_any = False
    for name, t in data.tilings.items():
        page.h2(name)
        if t.is_empty():
            none(page, "No tilings.")
            continue
        t = t.with_columns(shape=pl.format("{}x{}x{}", "m", "n", "k"))
        nvmm = [c for c in t.columns if "nvmm" in c.lower() or "heuristic" in c.lower()]
        nvmm_any |= bool(nvmm)
        if {"regret", "best_measured_us", "measured_us"} <= set(t.columns):
            r = t.filter(pl.col("regret").is_not_null())
            if r.height:
                r = r.with_columns(
                    regret_pct=pl.col("regret") * 100,
                    chosen=pl.format("{}x{}x{} s{}", "tile_m", "tile_n", "tile_k", "stages"),
                    best=pl.format("{}x{}x{} s{}", "best_tile_m", "best_tile_n", "best_tile_k", "best_stages")
                    if "best_tile_m" in t.columns else pl.lit(""),
                )
                zero = (r["regret_pct"] <= 1e-9).mean()
                page.chart(charts.regret_chart(r.select("shape", "family", "chosen", "best", "measured_us",
                                                        "best_measured_us", "regret_pct")),
                           f"One bar per measured shape: how much slower the Z3 choice ran than the best measured "
                           f"configuration of the same family (0 = it picked the best; {zero:.0%} of shapes here).")
        show = [c for c in ["shape", "dtype", "family", "model", "tile_m", "tile_n", "tile_k", "stages", "cluster_m",
                            "cluster_n", "persistent", "raster", "predicted_us", "limiter", "runner_up_tile",
                            "runner_up_stages", "runner_up_us", "solve_s", "measured_us", "best_measured_us",
                            "regret", "n_measured", "best_tile_m", "best_tile_n", "best_tile_k", "best_stages", *nvmm]
                if c in t.columns]
        page.add(table_html(t.select(show), max_rows=120))
    if not nvmm_any:
        none(page, "nvMatmulHeuristics: not available here (the tilings tables carry no nvMatmulHeuristics "
                    "columns), so there is no comparison with it.")
    return page


# ------------------------------------------------------------------------------ kernels


def kernels_page(data: ReportData) -> Page:
    page = Page(KERNELS, "Kernels")
    ks = data.kernel_speed
    if ks:
        rows = []
        for row in ks.get("rows", []):
            cub = row.get("cublas_tflops")
            if cub:
                rows.append({"shape": row["shape"], "kernel": "cuBLAS", "config": "cuBLAS", "tflops": cub, "pct_cublas": 100.0})
            for fam, v in row.items():
                if isinstance(v, dict) and "tflops" in v and v.get("ok", True):
                    rows.append({"shape": row["shape"], "kernel": fam, "config": v.get("config", ""),
                                 "tflops": v["tflops"], "pct_cublas": 100 * v["tflops"] / cub if cub else None})
        df = pl.DataFrame(rows)
        gpu = ks.get("gpu", {})
        page.p(f"benchmarks/kernel_speed.py on {gpu.get('nvidia_smi', 'this GPU')}: each family's best configuration "
               "against cuBLAS, timed on the same GPU.")
        page.chart(charts.kernel_bars(df),
                   "Bars: TFLOP/s of cuBLAS and of each family's best configuration per shape; the tooltip gives "
                   "the configuration and its share of cuBLAS.")
        page.add(table_html(df))
    else:
        none(page, "No kernel-speed run against cuBLAS for this GPU (benchmarks/results/kernel_speed_<gpu>.json).")
    if data.measured:
        d = data.predictions.filter(pl.col("time_us").is_not_null()).unique(subset=MEASURED_KEY)
        best = d.sort("tflops", descending=True).group_by("testlist", "family", maintain_order=True).first()
        peak = {dt: data.gpu.peak_flops(dt) / 1e12 for dt in best["dtype"].unique().to_list() if data.gpu.supports(dt)}
        best = best.with_columns(pct_peak=pl.col("tflops") / pl.col("dtype").replace_strict(peak, default=None) * 100)
        page.h2("Best measured TFLOP/s per family and testlist (the workflow's sweeps)")
        page.chart(charts.best_by_family(best.select("testlist", "family", "shape", "config", "tflops", "pct_peak")),
                   "The fastest configuration each family reached on any shape of the testlist; the tooltip gives "
                   "the shape, the configuration and the share of the data-sheet peak.")
    else:
        none(page, NOTHING_MEASURED)
    return page


# ------------------------------------------------------------------------------- write


def build_pages(data: ReportData) -> list[Page]:
    return [overview(data), accuracy_page(data), errors_page(data), roofline_page(data),
            timeline_page(data), tilings_page(data), kernels_page(data)]


def summary(data: ReportData) -> dict:
    s = {"slug": data.gpu.slug, "name": data.gpu.name, "source": data.source, "note": data.note,
         "measured_configurations": 0, "pages": NAV}
    if data.measured:
        s["measured_configurations"] = data.predictions.filter(pl.col("time_us").is_not_null()).unique(
            subset=MEASURED_KEY).height
    if data.accuracy is not None:
        t = accuracy_table(data.accuracy).filter(pl.col("best"))
        s["best"] = {r["split"]: {"model": r["model"], "median_ape_pct": r["median_ape_pct"]} for r in t.iter_rows(named=True)}
    return s


def write_gpu_report(data: ReportData, out_dir: Path, images: Path | None = None) -> list[Path]:
    """Write every page (and, when ``images`` is given, PNGs of the key charts) to ``out_dir``."""
    import vl_convert

    out_dir.mkdir(parents=True, exist_ok=True)
    heading = f"gemmperf {data.gpu.slug}"
    written = []
    pngs = {}
    for page in build_pages(data):
        path = out_dir / page.name
        path.write_text(page.render(NAV, heading))
        written.append(path)
        pngs.update(page.images)
    if images is not None:
        images.mkdir(parents=True, exist_ok=True)
        for name in IMAGES:
            path = images / f"{name}.png"
            if name in pngs:
                path.write_bytes(vl_convert.vegalite_to_png(pngs[name], scale=1.5))
            else:  # the chart does not exist (nothing measured): a placeholder saying so
                path.write_bytes(vl_convert.vegalite_to_png(_placeholder(name), scale=1.0))
            written.append(path)
    (out_dir / "summary.json").write_text(json.dumps(summary(data), indent=1))
    return written


def _placeholder(name: str) -> dict:
    return {"$schema": "https://vega.github.io/schema/vega-lite/v6.json", "width": 400, "height": 60,
            "data": {"values": [{"t": f"{name}: nothing measured for this GPU"}]},
            "mark": {"type": "text", "fontSize": 14}, "encoding": {"text": {"field": "t"}}}
