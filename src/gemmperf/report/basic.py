"""A plain HTML page per GPU: where the data came from, parameters, and the best
predicted configuration per shape. Self-contained, works offline."""

from __future__ import annotations

import html
from pathlib import Path

import polars as pl

from ..hardware import GPU
from ..params import PARAM_NAMES, ParamSet

STYLE = """
body{font-family:system-ui,sans-serif;margin:2em;max-width:1200px;color:#222}
table{border-collapse:collapse;margin:1em 0;font-size:13px}
th,td{border:1px solid #ccc;padding:3px 8px;text-align:right}
th{background:#f3f3f3} td.l,th.l{text-align:left}
.note{background:#fff8e0;border-left:4px solid #e0b000;padding:.5em 1em}
"""


def table_html(df: pl.DataFrame, float_digits: int = 3, max_rows: int = 200) -> str:
    head = "".join(f"<th>{html.escape(c)}</th>" for c in df.columns)
    body = []
    for row in df.head(max_rows).iter_rows():
        cells = []
        for v in row:
            if isinstance(v, float):
                cells.append(f"<td>{v:.{float_digits}f}</td>")
            else:
                cells.append(f"<td class=l>{html.escape(str(v))}</td>")
        body.append("<tr>" + "".join(cells) + "</tr>")
    more = f"<p>{df.height - max_rows} more rows not shown.</p>" if df.height > max_rows else ""
    return f"<table><tr>{head}</tr>{''.join(body)}</table>{more}"


def page(title: str, body: str) -> str:
    return (
        f"<!doctype html><html><head><meta charset=utf-8><title>{html.escape(title)}</title>"
        f"<style>{STYLE}</style></head><body><h1>{html.escape(title)}</h1>{body}</body></html>\n"
    )


def params_table(pset: ParamSet) -> pl.DataFrame:
    rows = []
    for (family, dtype), p in sorted(pset.entries.items()):
        row = {"family": family, "dtype": dtype, "source": p.source}
        for name in PARAM_NAMES:
            value = getattr(p, name)
            sigma = p.uncertainty.get(name)
            row[name] = f"{value:.4g}" + (f" ± {sigma:.2g}" if sigma is not None else "")
        rows.append(row)
    return pl.DataFrame(rows)


def write_basic_report(
    out: Path,
    gpu: GPU,
    data_note: str,
    skipped: dict[str, str],
    pset: ParamSet,
    tilings: dict[str, pl.DataFrame],
) -> None:
    parts = [
        f"<p><b>{html.escape(gpu.name)}</b> ({gpu.slug}, {gpu.arch}, {gpu.sms} SMs, "
        f"{gpu.sm_clock_mhz:.0f} MHz, {gpu.dram_bytes_per_s / 1e12:.2f} TB/s; descriptor: {gpu.source})</p>",
        f"<p class=note>{html.escape(data_note)}</p>",
    ]
    if skipped:
        items = "".join(f"<li><b>{html.escape(s)}</b>: {html.escape(r)}</li>" for s, r in skipped.items())
        parts.append(f"<h2>Stages skipped</h2><ul>{items}</ul>")
    parts.append("<h2>Model parameters</h2>" + table_html(params_table(pset)))
    for name, df in tilings.items():
        parts.append(f"<h2>Best predicted configuration per shape: {html.escape(name)}</h2>")
        parts.append(table_html(df))
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(page(f"gemmperf: {gpu.name}", "".join(parts)))


def write_index(out: Path, gpus: dict[str, str]) -> None:
    """``gpus``: slug -> one-line description; links to each GPU's report."""
    items = "".join(
        f"<li><a href='{html.escape(slug)}/report/index.html'>{html.escape(slug)}</a>: {html.escape(desc)}</li>"
        for slug, desc in gpus.items()
    )
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(page("gemmperf reports", f"<ul>{items}</ul>"))
