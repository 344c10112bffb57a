"""The cross-GPU index (results/index.html) and the entry point that writes one GPU's
pages. The pages themselves are in ``pages``; the HTML shell is in ``html``."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl

from .html import Page, esc, table_html
from .pages import NAV, OVERVIEW

INDEX = "index.html"  # results/index.html, the page linking every GPU's report


def write_index(out: Path, summaries: dict[str, Path | dict], compare: tuple | None = None) -> None:
    """``summaries``: slug -> a GPU report's summary.json (or its dict); links to its pages.
    ``compare``: (``compare.time_ratios``, ``compare.best_tilings``) tables, shown where
    not empty."""
    rows, links = [], []
    for slug, s in summaries.items():
        if not isinstance(s, dict):
            s = json.loads(Path(s).read_text())
        best = s.get("best", {})
        rows.append({
            "GPU": f"{s['name']} ({slug})",
            "data": {"measure": "measured here", "shipped": "shipped measurements",
                     "catalog": "catalog only: nothing measured"}.get(s["source"], s["source"]),
            "measured configurations": s.get("measured_configurations", 0),
            "best model, held out": (f"{best['heldout']['model']} ({best['heldout']['median_ape_pct']:.1f}% median error)"
                                     if "heldout" in best else "none"),
            "best model, cross-validated": (f"{best['cv']['model']} ({best['cv']['median_ape_pct']:.1f}% median error)"
                                            if "cv" in best else "none"),
        })
        pages = " | ".join(f"<a href='{esc(slug)}/report/{f}'>{esc(t)}</a>" for f, t in NAV)
        links.append(f"<li><b>{esc(s['name'])}</b> ({esc(slug)}): {pages}<br><small>{esc(s['note'])}</small></li>")
    page = Page(INDEX, "gemmperf reports")
    page.p("One report per GPU; every page works offline (the chart library is inside each page).")
    page.add(table_html(pl.DataFrame(rows)) if rows else "<p class=none>No GPUs.</p>")
    page.add(f"<ul>{''.join(links)}</ul>")
    if compare is not None:
        side_by_side(page, *compare)
    out.parent.mkdir(parents=True, exist_ok=True)
    nav = [(f"{slug}/report/{OVERVIEW}", slug) for slug in summaries]
    out.write_text(page.render(nav, "gemmperf"))


SHOWN_PICKS = 60  # shapes whose picks differ, listed on the index


def side_by_side(page: Page, ratios: pl.DataFrame, picks: pl.DataFrame) -> None:
    """The GPUs compared: measured time ratio per class, best tiling per shape."""
    if ratios.height == 0 and picks.height == 0:
        return
    page.h2("GPUs side by side")
    if ratios.height:
        page.p("Measured time of the same configurations (same shape, tiling, schedule, epilogue, split) on each "
               "GPU against the first, per shape class: geometric mean, 5th and 95th percentile of the ratio.")
        page.add(table_html(ratios.with_columns(pl.col("geomean ratio", "p5", "p95").round(3))))
    if picks.height:
        same = int(picks.get_column("same pick").sum())
        text = (f"ws-hopper's best tiling per shape on each GPU, as the optimizer picks it (the workflow searches "
                f"the measured configurations where a shape was measured): the same on {same} of {picks.height} "
                f"shapes")
        if "same measured best" in picks.columns:
            best = int(picks.get_column("same measured best").fill_null(False).sum())
            text += f"; the measured best is the same on {best}"
        page.p(text + f". The shapes where the picks differ (first {SHOWN_PICKS}):")
        differ = picks.filter(~pl.col("same pick")).head(SHOWN_PICKS)
        page.add(table_html(differ.with_columns(pl.col(pl.Float64).round(2))))
