"""Self-contained HTML pages with altair charts: the vega, vega-lite and vega-embed
JavaScript is inlined once per page (from vl-convert's bundle), every chart's data is
inlined in its spec, and a Content-Security-Policy forbids any network fetch, so a page
works (and is tested) with no network at all.

Each page records how its charts rendered in ``<body data-...>`` attributes, for the
headless-browser test: ``data-charts`` (how many charts the page has), ``data-rendered``
(how many vegaEmbed calls resolved), ``data-errors`` (a JSON list of console errors,
uncaught exceptions, rejected promises and CSP violations); each chart's div gets
``data-status="ok"`` or ``"error"``.
"""

from __future__ import annotations

import functools
import html
import json
from dataclasses import dataclass

import altair as alt
import polars as pl

STYLE = """
body{font-family:system-ui,sans-serif;margin:0;color:#222}
main{margin:1em 2em;max-width:1400px}
nav{background:#1f3b57;padding:.5em 2em;position:sticky;top:0;z-index:5}
nav a{color:#dfe8f0;margin-right:1.2em;text-decoration:none;font-size:14px}
nav a.here{color:#fff;font-weight:bold;border-bottom:2px solid #f0b000}
h1{font-size:1.5em} h2{font-size:1.2em;margin-top:1.6em}
table{border-collapse:collapse;margin:.6em 0;font-size:12.5px}
th,td{border:1px solid #ccc;padding:2px 7px;text-align:right}
th{background:#f3f3f3} td.l,th.l{text-align:left}
tr.best td{background:#eef7ee}
.note{background:#fff8e0;border-left:4px solid #e0b000;padding:.5em 1em}
.none{background:#f4f4f4;border-left:4px solid #999;padding:.5em 1em}
figure{margin:1em 0 2em 0} figcaption{font-size:13px;color:#444;max-width:1100px;margin-top:.3em}
.chart{min-height:40px}
"""

# No network: only inline scripts and styles, data: images; eval is needed by vega's
# expression compiler.
CSP = (
    "default-src 'none'; script-src 'unsafe-inline' 'unsafe-eval'; "
    "style-src 'unsafe-inline'; img-src data: blob:; font-src data:; connect-src 'none'"
)

RECORDER = """
(function(){
  var errors = [];
  function mark(){ document.documentElement.dataset.errors = JSON.stringify(errors);
                   if (document.body) document.body.dataset.errors = JSON.stringify(errors); }
  window.__gemmperfError = function(msg){ errors.push(String(msg)); mark(); };
  window.addEventListener('error', function(e){ __gemmperfError('error: ' + (e.message || e)); });
  window.addEventListener('unhandledrejection', function(e){ __gemmperfError('unhandled rejection: ' + e.reason); });
  document.addEventListener('securitypolicyviolation', function(e){
    __gemmperfError('blocked (offline page): ' + e.blockedURI + ' by ' + e.violatedDirective); });
  var ce = console.error;
  console.error = function(){ __gemmperfError(Array.prototype.map.call(arguments, String).join(' '));
                              return ce.apply(console, arguments); };
  mark();
})();
"""

EMBED = """
(function(){
  var specs = %s;
  var total = Object.keys(specs).length, done = 0;
  document.body.dataset.charts = total;
  document.body.dataset.rendered = 0;
  Object.keys(specs).forEach(function(id){
    var el = document.getElementById(id);
    vegaEmbed(el, specs[id], {renderer: 'svg', actions: {export: true, source: false, compiled: false, editor: false}})
      .then(function(){ el.dataset.status = 'ok'; done += 1; document.body.dataset.rendered = done; })
      .catch(function(e){ el.dataset.status = 'error'; __gemmperfError('chart ' + id + ': ' + e); });
  });
})();
"""


@functools.cache
def vega_bundle() -> str:
    """vega + vega-lite + vega-embed as one script defining window.vegaEmbed."""
    import vl_convert
    from altair.utils._importers import vl_version_for_vl_convert

    return vl_convert.javascript_bundle(vl_version=vl_version_for_vl_convert())


def esc(x) -> str:
    return html.escape(str(x))


def fmt(v, digits: int = 3) -> str:
    if v is None:
        return ""
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, float):
        if v != v:
            return ""
        if v != 0 and (abs(v) >= 1e5 or abs(v) < 10 ** -digits):
            return f"{v:.{digits}g}"
        return f"{v:.{digits}f}"
    return str(v)


def table_html(df: pl.DataFrame, digits: int = 3, max_rows: int = 200, highlight: str | None = None) -> str:
    """An HTML table; ``highlight``: a boolean column marking rows to shade (not shown)."""
    cols = [c for c in df.columns if c != highlight]
    head = "".join(f"<th>{esc(c)}</th>" for c in cols)
    body = []
    for row in df.head(max_rows).iter_rows(named=True):
        cells = "".join(
            f"<td>{fmt(row[c], digits)}</td>" if isinstance(row[c], (int, float)) and not isinstance(row[c], bool)
            else f"<td class=l>{esc(fmt(row[c], digits))}</td>"
            for c in cols
        )
        cls = " class=best" if highlight and row.get(highlight) else ""
        body.append(f"<tr{cls}>{cells}</tr>")
    more = f"<p>{df.height - max_rows} more rows not shown.</p>" if df.height > max_rows else ""
    return f"<table><tr>{head}</tr>{''.join(body)}</table>{more}"


@dataclass
class Page:
    """One report page: a title, a file name, and HTML parts interleaved with charts."""

    name: str  # file name, e.g. "accuracy.html"
    title: str
    parts: list[str]
    specs: dict[str, dict]
    images: dict[str, dict]  # image name -> spec, for PNG export

    def __init__(self, name: str, title: str):
        self.name, self.title, self.parts, self.specs, self.images = name, title, [], {}, {}

    def add(self, fragment: str) -> None:
        self.parts.append(fragment)

    def h2(self, text: str) -> None:
        self.parts.append(f"<h2>{esc(text)}</h2>")

    def p(self, text: str, cls: str | None = None) -> None:
        self.parts.append(f"<p{' class=' + cls if cls else ''}>{esc(text)}</p>")

    def chart(self, chart: alt.TopLevelMixin, caption: str, image: str | None = None) -> str:
        """Add a chart with its one-line caption (how to read it); returns its div id.
        ``image``: also export it as ``<image>.png`` (see pages.write_gpu_report)."""
        cid = f"chart{len(self.specs) + 1}"
        with alt.data_transformers.disable_max_rows():  # the pages sample large tables themselves
            self.specs[cid] = chart.to_dict()
        if image:
            self.images[image] = self.specs[cid]
        self.parts.append(
            f"<figure><div class=chart id={cid}></div><figcaption>{esc(caption)}</figcaption></figure>"
        )
        return cid

    def render(self, nav: list[tuple[str, str]], heading: str) -> str:
        links = "".join(
            f"<a href='{esc(f)}'{' class=here' if f == self.name else ''}>{esc(t)}</a>" for f, t in nav
        )
        scripts = ""
        if self.specs:
            data = json.dumps(self.specs, separators=(",", ":")).replace("</", "<\\/")
            scripts = f"<script>{vega_bundle()}</script><script>{EMBED % data}</script>"
        return (
            "<!doctype html><html lang=en><head><meta charset=utf-8>"
            f"<meta http-equiv='Content-Security-Policy' content=\"{CSP}\">"
            f"<title>{esc(heading)}: {esc(self.title)}</title><style>{STYLE}</style>"
            f"<script>{RECORDER}</script></head><body>"
            f"<nav>{links}</nav><main><h1>{esc(self.title)}</h1>"
            f"{''.join(self.parts)}</main>{scripts}</body></html>\n"
        )
