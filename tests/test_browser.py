"""Open the generated report in headless Chromium (Debian's chromium package) with the
network disabled: every page loads, every chart renders an SVG with content, and no
console error, uncaught exception or blocked network request happens. Screenshots go
to the test's tmp folder (GEMMPERF_SCREENSHOTS=DIR keeps them elsewhere)."""

import os
from pathlib import Path

import pytest

from gemmperf.report.pages import NAV, write_gpu_report

from browser import find_chromium, inspect_page
from test_report import catalog_data

CHROMIUM = find_chromium()
ROOT = Path(__file__).resolve().parent.parent
INDEX = ROOT / "results" / "index.html"
pytestmark = pytest.mark.skipif(
    CHROMIUM is None, reason="chromium is not installed (Debian: apt-get install -y chromium)")


def gpu_reports() -> list[Path]:
    return sorted(p.parent for p in (ROOT / "results").glob("*/report/summary.json"))


@pytest.fixture
def shots(tmp_path) -> Path:
    return Path(os.environ["GEMMPERF_SCREENSHOTS"]) if os.environ.get("GEMMPERF_SCREENSHOTS") else tmp_path


def assert_rendered(page: Path, shot: Path) -> None:
    html = page.read_text()
    declared = html.count("<div class=chart id=")
    state = inspect_page(page, CHROMIUM, screenshot=shot)
    assert state.errors == [], f"{page}: {state.errors}"
    assert shot.is_file() and shot.stat().st_size > 5000, f"{page}: no screenshot"
    if declared == 0:
        return
    assert state.charts_declared == declared, f"{page}: the page's script did not run"
    assert state.rendered == declared, f"{page}: {state.rendered} of {declared} charts rendered"
    assert len(state.charts) == declared
    for chart in state.charts.values():
        assert chart.status == "ok", f"{page} {chart.id}: {chart.status}"
        assert chart.svgs + chart.canvases >= 1, f"{page} {chart.id}: no svg or canvas"
        assert chart.marks >= 10, f"{page} {chart.id}: an empty chart ({chart.marks} drawn elements)"


@pytest.mark.skipif(not INDEX.is_file(), reason="run `snakemake --cores all` first: no results/index.html")
def test_generated_index_and_every_page_render_offline(shots):
    assert gpu_reports(), "results/index.html exists but no GPU report"
    assert_rendered(INDEX, shots / "index.png")
    index = INDEX.read_text()
    for report in gpu_reports():
        slug = report.parent.name
        for f, _ in NAV:
            assert f"{slug}/report/{f}" in index, f"the index does not link {slug}/{f}"
            assert_rendered(report / f, shots / slug / f.replace(".html", ".png"))


def test_nothing_measured_report_renders_offline(tmp_path, shots):
    out = tmp_path / "report"
    write_gpu_report(catalog_data(), out)
    for f, _ in NAV:
        assert_rendered(out / f, shots / "catalog" / f.replace(".html", ".png"))


def test_the_check_catches_a_broken_chart_and_a_network_request(tmp_path):
    """The harness can fail: a bad spec and a remote script are both reported."""
    from gemmperf.report.html import Page

    import altair as alt

    page = Page("bad.html", "bad")
    page.chart(alt.Chart(alt.Data(values=[{"x": 1}])).mark_point().encode(x="x:Q"), "a fine chart, for contrast")
    page.specs["chart2"] = {"$schema": "https://vega.github.io/schema/vega-lite/v6.json", "mark": "nonsense"}
    page.add("<div class=chart id=chart2></div><script src='https://example.com/x.js'></script>")
    path = tmp_path / "bad.html"
    path.write_text(page.render([], "t"))
    state = inspect_page(path, CHROMIUM)
    assert state.charts["chart1"].status == "ok"
    assert state.charts["chart2"].status == "error"
    assert any("chart2" in e for e in state.errors)
    assert any("example.com" in e for e in state.errors)
