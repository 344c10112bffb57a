"""The cross-GPU index (results/index.html) and the entry point that writes one GPU's
pages. The pages themselves are in ``pages``; the HTML shell is in ``html``."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl

from .html import Page, esc, table_html
from .pages import NAV, OVERVIEW

INDEX = "index.html"  # results/index.html, the page linking every GPU's report


def write_index(out: Path, summaries: dict[str, Path | dict]) -> None:
    """``summaries``: slug -> a GPU report's summary.json (or its dict); links to its pages."""
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
    out.parent.mkdir(parents=True, exist_ok=True)
    nav = [(f"{slug}/report/{OVERVIEW}", slug) for slug in summaries]
    out.write_text(page.render(nav, "gemmperf"))
