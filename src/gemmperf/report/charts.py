"""The report's altair charts. Each function takes polars frames and returns a chart;
the pages add the captions."""

from __future__ import annotations

import altair as alt
import polars as pl

from ..problem import FAMILIES

WARP_COLORS = {"DMA-A": "#4c78a8", "DMA-B": "#72b7b2", "MATH": "#e45756", "EPILOGUE": "#b279a2"}

PHASE_COLS = [
    "init_us", "setup_us", "first_dma_us", "mainloop_us", "wave_us", "epilogue_us", "last_epilogue_us",
    "math_us", "dram_us", "load_us", "stage_load_a_us", "stage_load_b_us", "stage_math_us",
    "wave_dma_us", "wave_math_us", "wave_epilogue_us", "stage_load_us", "stage_smem_us",
    "stage_period_us", "fill_us", "overhead_us", "total_math_wait_us", "l2_hit_rate_est",
    "padding_waste", "correction", "tiles", "waves", "k_stages",
]


def breakdown_expr(columns: list[str]) -> pl.Expr:
    """One string per row: 'name=value' for every phase column that has a value."""
    parts = [
        pl.when(pl.col(c).is_not_null()).then(pl.format(c.removesuffix("_us") + "={}", pl.col(c).cast(pl.Float64).round(2)))
        for c in PHASE_COLS if c in columns
    ]
    return pl.concat_str(parts, separator=", ", ignore_nulls=True) if parts else pl.lit("")


def sample(df: pl.DataFrame, per_group: int, by: str, keep_worst: int = 30) -> tuple[pl.DataFrame, int]:
    """At most ``per_group`` rows of each ``by`` group (random, seed 0), always keeping the
    ``keep_worst`` largest errors of each; returns the sample and how many rows were dropped."""
    parts = []
    for _, g in df.group_by(by, maintain_order=True):
        if g.height <= per_group:
            parts.append(g)
            continue
        worst = g.sort("ape_pct", descending=True, nulls_last=True).head(keep_worst)
        rest = g.sort("ape_pct", descending=True, nulls_last=True).slice(keep_worst).sample(per_group - keep_worst, seed=0)
        parts.append(pl.concat([worst, rest]))
    out = pl.concat(parts) if parts else df
    return out, df.height - out.height


def model_scale(models: list[str]) -> alt.Scale:
    return alt.Scale(domain=models, scheme="tableau10")


def predicted_vs_measured(df: pl.DataFrame, models: list[str]) -> alt.Chart:
    lo = float(min(df["time_us"].min(), df["predicted_us"].min()))
    hi = float(max(df["time_us"].max(), df["predicted_us"].max()))
    diag = pl.DataFrame({"x": [lo, hi], "y": [lo, hi]})
    sel = alt.selection_point(fields=["model"], bind="legend")
    pts = alt.Chart(df).mark_circle(size=18, opacity=0.55).encode(
        x=alt.X("time_us:Q", scale=alt.Scale(type="log"), title="measured time (us)"),
        y=alt.Y("predicted_us:Q", scale=alt.Scale(type="log"), title="predicted time (us)"),
        color=alt.Color("model:N", scale=model_scale(models), sort=models),
        opacity=alt.condition(sel, alt.value(0.6), alt.value(0.03)),
        tooltip=["model", "shape", "config", "testlist", "split", alt.Tooltip("time_us", format=".2f"),
                 alt.Tooltip("predicted_us", format=".2f"), alt.Tooltip("ratio", format=".3f"), "limiter",
                 "breakdown"],
    ).add_params(sel)
    line = alt.Chart(diag).mark_line(color="#333", strokeDash=[4, 3]).encode(x="x:Q", y="y:Q")
    return (line + pts).properties(width=620, height=520).interactive()


def ratio_curves(df: pl.DataFrame, models: list[str], points: int = 200) -> alt.Chart:
    """Sorted predicted/measured ratio per model, one panel per dtype (quantiles)."""
    rows = []
    for (model, dtype), g in df.group_by("model", "dtype", maintain_order=True):
        r = g["ratio"].drop_nulls().sort()
        n = r.len()
        if n == 0:
            continue
        q = min(points, n)
        idx = sorted({round(i * (n - 1) / max(q - 1, 1)) for i in range(q)})
        rows.append(pl.DataFrame({"model": model, "dtype": dtype, "rank": [(i + 0.5) / n for i in idx],
                                  "ratio": [r[i] for i in idx], "n": n}))
    data = pl.concat(rows)
    one = alt.Chart(pl.DataFrame({"y": [1.0]})).mark_rule(color="#333", strokeDash=[4, 3]).encode(y="y:Q")
    curve = alt.Chart().mark_line(interpolate="step-after").encode(
        x=alt.X("rank:Q", title="fraction of configurations (sorted by ratio)", scale=alt.Scale(domain=[0, 1])),
        y=alt.Y("ratio:Q", scale=alt.Scale(type="log"), title="predicted / measured"),
        color=alt.Color("model:N", scale=model_scale(models), sort=models),
        tooltip=["model", "dtype", "n", alt.Tooltip("rank", format=".2f"), alt.Tooltip("ratio", format=".3f")],
    )
    return alt.layer(curve, one, data=data).properties(width=420, height=300).facet(
        column=alt.Column("dtype:N", title="input dtype")
    )


def error_by(df: pl.DataFrame, field: str, title: str, models: list[str]) -> alt.Chart:
    """Median absolute error (bar) and p90 (tick) per category and model, per split."""
    agg = df.group_by("model", field, "split").agg(
        n=pl.len(), median_ape_pct=pl.col("ape_pct").median(), p90_ape_pct=pl.col("ape_pct").quantile(0.9),
    )
    base = alt.Chart(agg).encode(
        y=alt.Y(f"{field}:N", title=title),
        yOffset=alt.YOffset("model:N", sort=models),
        color=alt.Color("model:N", scale=model_scale(models), sort=models),
        tooltip=["model", field, "split", "n", alt.Tooltip("median_ape_pct", format=".1f"),
                 alt.Tooltip("p90_ape_pct", format=".1f")],
    )
    bars = base.mark_bar().encode(x=alt.X("median_ape_pct:Q", title="median |error| % (bar), p90 (tick)",
                                          scale=alt.Scale(type="symlog")))
    ticks = base.mark_tick(color="#222", thickness=1.5).encode(x="p90_ape_pct:Q")
    return alt.layer(bars, ticks).properties(width=360).facet(column=alt.Column("split:N", title=None))


def roofline(points: pl.DataFrame | None, ceilings: list[dict]) -> alt.Chart:
    """Measured kernels by arithmetic intensity and TFLOP/s under the ceilings.

    ``ceilings``: dicts name, kind ("bw" in TB/s or "flat" in TFLOP/s), value, cap (TFLOP/s
    where a bandwidth line stops), dash (bool)."""
    xs = [10 ** (i / 20) for i in range(-6, 81)]  # 0.5 .. 1e4 FLOP/B
    lines = []
    for c in ceilings:
        for x in xs:
            y = min(x * c["value"], c["cap"]) if c["kind"] == "bw" else c["value"]
            lines.append({"ceiling": c["name"], "intensity": x, "tflops": y, "measured": c["measured"]})
    ldf = pl.DataFrame(lines)
    layers = [alt.Chart(ldf).mark_line(strokeWidth=1.8).encode(
        x=alt.X("intensity:Q", scale=alt.Scale(type="log"), title="arithmetic intensity (FLOP / DRAM byte, ideal reuse)"),
        y=alt.Y("tflops:Q", scale=alt.Scale(type="log"), title="achieved TFLOP/s"),
        detail="ceiling:N",
        strokeDash=alt.StrokeDash("measured:N", title="ceiling source",
                                  scale=alt.Scale(domain=["measured", "spec"], range=[[1, 0], [5, 4]])),
        color=alt.value("#555"),
        tooltip=["ceiling", "measured"],
    )]
    kinds = {c["name"]: c["kind"] for c in ceilings}
    flat = ldf.group_by("ceiling", maintain_order=True).last().filter(
        pl.col("ceiling").replace_strict(kinds) == "flat")
    slope = ldf.group_by("ceiling", maintain_order=True).first().filter(
        pl.col("ceiling").replace_strict(kinds) == "bw")
    layers.append(alt.Chart(flat).mark_text(align="right", dx=-4, dy=-6, fontSize=10, color="#333").encode(
        x="intensity:Q", y="tflops:Q", text="ceiling:N"))
    layers.append(alt.Chart(slope).mark_text(align="left", dx=4, dy=-8, angle=0, fontSize=10, color="#333").encode(
        x="intensity:Q", y="tflops:Q", text="ceiling:N"))
    if points is not None and points.height:
        layers.append(alt.Chart(points).mark_circle(size=30, opacity=0.7).encode(
            x="intensity:Q", y="tflops:Q",
            color=alt.Color("kernel:N", title="kernel"),
            shape=alt.Shape("kernel:N"),
            tooltip=["kernel", "shape", "config", alt.Tooltip("intensity", format=".1f"),
                     alt.Tooltip("tflops", format=".1f"), alt.Tooltip("time_us", format=".2f")],
        ))
    return alt.layer(*layers).properties(width=720, height=460).interactive()


def gantt(bars: pl.DataFrame, labels: list[str]) -> alt.Chart:
    pick = alt.param(name="config_pick", value=labels[0],
                     bind=alt.binding_select(options=labels, name="configuration "))
    return alt.Chart(bars).mark_bar(height=14, stroke="white", strokeWidth=0.3).encode(
        x=alt.X("start_us:Q", title="time (us) from kernel start"),
        x2="end_us:Q",
        y=alt.Y("warp:N", sort=list(WARP_COLORS), title=None),
        color=alt.Color("warp:N", scale=alt.Scale(domain=list(WARP_COLORS), range=list(WARP_COLORS.values()))),
        tooltip=["label", "warp", "wave", "stage", alt.Tooltip("start_us", format=".3f"),
                 alt.Tooltip("end_us", format=".3f")],
    ).add_params(pick).transform_filter(alt.datum.label == pick).properties(width=900, height=140)


def persistent_phases(phases: pl.DataFrame, labels: list[str]) -> alt.Chart:
    return alt.Chart(phases).mark_bar(height=22).encode(
        x=alt.X("start_us:Q", title="time (us)"),
        x2="end_us:Q",
        y=alt.Y("label:N", sort=labels, title=None, axis=alt.Axis(labelLimit=420)),
        color=alt.Color("phase:N", sort=["setup", "first DMA", "full waves", "partial wave", "last epilogue"],
                        scale=alt.Scale(scheme="set2")),
        tooltip=["label", "phase", "detail", alt.Tooltip("start_us", format=".3f"), alt.Tooltip("end_us", format=".3f")],
    ).properties(width=900, height=alt.Step(30))


def wave_limiters(waves: pl.DataFrame, labels: list[str]) -> alt.Chart:
    return alt.Chart(waves).mark_bar().encode(
        y=alt.Y("label:N", sort=labels, title=None, axis=alt.Axis(labelLimit=420)),
        yOffset=alt.YOffset("part:N", sort=["DMA", "MATH", "EPILOGUE"]),
        x=alt.X("us:Q", title="one full wave's time per part (us); the longest is the limiter"),
        color=alt.Color("part:N", sort=["DMA", "MATH", "EPILOGUE"],
                        scale=alt.Scale(domain=["DMA", "MATH", "EPILOGUE"], range=["#4c78a8", "#e45756", "#b279a2"])),
        tooltip=["label", "part", alt.Tooltip("us", format=".3f")],
    ).properties(width=700)


def regret_chart(df: pl.DataFrame) -> alt.Chart:
    return alt.Chart(df).mark_bar().encode(
        x=alt.X("shape:N", sort=alt.EncodingSortField("regret_pct", order="descending"),
                axis=alt.Axis(labels=df.height <= 60, title="shape (sorted by regret)")),
        y=alt.Y("regret_pct:Q", title="regret: chosen measured / best measured - 1 (%)"),
        color=alt.Color("family:N"),
        tooltip=["shape", "family", "chosen", "best", alt.Tooltip("measured_us", format=".2f"),
                 alt.Tooltip("best_measured_us", format=".2f"), alt.Tooltip("regret_pct", format=".1f")],
    ).properties(width=800, height=220)


def kernel_bars(df: pl.DataFrame) -> alt.Chart:
    return alt.Chart(df).mark_bar().encode(
        x=alt.X("kernel:N", sort=["cuBLAS", *FAMILIES], title=None),
        y=alt.Y("tflops:Q", title="TFLOP/s"),
        color=alt.Color("kernel:N", sort=["cuBLAS", *FAMILIES]),
        column=alt.Column("shape:N", title="shape (M x N x K)"),
        tooltip=["shape", "kernel", "config", alt.Tooltip("tflops", format=".1f"), alt.Tooltip("pct_cublas", format=".0f")],
    ).properties(width=220, height=280)


def best_by_family(df: pl.DataFrame) -> alt.Chart:
    return alt.Chart(df).mark_bar().encode(
        y=alt.Y("testlist:N", title=None),
        yOffset="family:N",
        x=alt.X("tflops:Q", title="best measured TFLOP/s over the testlist's shapes"),
        color="family:N",
        tooltip=["testlist", "family", "shape", "config", alt.Tooltip("tflops", format=".1f"),
                 alt.Tooltip("pct_peak", format=".0f")],
    ).properties(width=600)


def accuracy_bars(df: pl.DataFrame, models: list[str]) -> alt.Chart:
    return alt.Chart(df).mark_bar().encode(
        y=alt.Y("model:N", sort=models, title=None),
        x=alt.X("median_ape_pct:Q", title="median |error| % (out of sample)"),
        color=alt.Color("split:N"),
        yOffset="split:N",
        tooltip=["model", "split", "n", alt.Tooltip("median_ape_pct", format=".1f"),
                 alt.Tooltip("mape_pct", format=".1f"), alt.Tooltip("within_10pct", format=".0%")],
    ).properties(width=520)

