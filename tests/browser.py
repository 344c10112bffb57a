"""Test tooling for tests/test_browser.py: open report pages in headless Chromium with
the network disabled, and read back what rendered. No extra Python dependency: Chromium
runs twice per page, once with ``--dump-dom`` (the DOM after the page's scripts ran; each
page records its charts' status and every console error in ``data-`` attributes, see
``gemmperf/report/html.py``) and once with ``--screenshot``.

Network off: a proxy on a closed port (127.0.0.1:9), every host name resolving to
nothing, background networking, sync and component updates disabled; the page itself
forbids any fetch with its Content-Security-Policy (violations are recorded as errors).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import tempfile
from dataclasses import dataclass, field
from html.parser import HTMLParser
from pathlib import Path

OFFLINE_FLAGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
    "--disable-default-apps", "--disable-extensions", "--no-first-run", "--no-default-browser-check",
    "--metrics-recording-only", "--mute-audio", "--hide-scrollbars",
    "--proxy-server=127.0.0.1:9", "--proxy-bypass-list=<-loopback>", "--host-resolver-rules=MAP * ~NOTFOUND",
    "--allow-file-access-from-files",
]


def find_chromium() -> str | None:
    for name in ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable"):
        path = shutil.which(name)
        if path:
            return path
    return None


@dataclass
class ChartState:
    id: str
    status: str | None = None
    svgs: int = 0
    canvases: int = 0
    marks: int = 0  # svg drawing elements (path, rect, circle, line, text, ...)


@dataclass
class PageState:
    charts_declared: int | None = None
    rendered: int | None = None
    errors: list[str] = field(default_factory=list)
    charts: dict[str, ChartState] = field(default_factory=dict)


class _DomReader(HTMLParser):
    DRAW = {"path", "rect", "circle", "line", "text", "polygon", "polyline", "ellipse", "image"}

    def __init__(self):
        super().__init__()
        self.state = PageState()
        self.stack: list[tuple[str, str | None]] = []  # (tag, chart id opened here)
        self.current: ChartState | None = None

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag in ("body", "html"):
            if "data-charts" in a:
                self.state.charts_declared = int(a["data-charts"])
            if "data-rendered" in a:
                self.state.rendered = int(a["data-rendered"])
            if a.get("data-errors"):
                self.state.errors = sorted(set(self.state.errors) | set(json.loads(a["data-errors"])))
        opened = None
        if tag == "div" and "chart" in (a.get("class") or "").split() and self.current is None:
            self.current = ChartState(a.get("id", "?"), a.get("data-status"))
            self.state.charts[self.current.id] = self.current
            opened = self.current.id
        elif self.current is not None:
            if tag == "svg":
                self.current.svgs += 1
            elif tag == "canvas":
                self.current.canvases += 1
            elif tag in self.DRAW:
                self.current.marks += 1
        if tag not in ("br", "img", "meta", "link", "input", "hr", "col"):
            self.stack.append((tag, opened))

    def handle_endtag(self, tag):
        while self.stack:
            t, opened = self.stack.pop()
            if opened is not None:
                self.current = None
            if t == tag:
                break


def _run(chromium: str, args: list[str], timeout: float) -> subprocess.CompletedProcess:
    with tempfile.TemporaryDirectory(prefix="gemmperf-chromium-") as profile:
        return subprocess.run([chromium, *OFFLINE_FLAGS, f"--user-data-dir={profile}", *args],
                              capture_output=True, text=True, timeout=timeout)


def inspect_page(page: Path, chromium: str | None = None, budget_ms: int = 20000,
                 screenshot: Path | None = None, size: tuple[int, int] = (1400, 2200),
                 timeout: float = 120) -> PageState:
    """Load ``page`` (file://) offline, let its scripts run for up to ``budget_ms`` of
    virtual time, and return what rendered; optionally save a screenshot."""
    chromium = chromium or find_chromium()
    if chromium is None:
        raise FileNotFoundError("no chromium on PATH")
    url = Path(page).resolve().as_uri()
    budget = f"--virtual-time-budget={budget_ms}"
    dom = _run(chromium, ["--dump-dom", budget, url], timeout)
    reader = _DomReader()
    reader.feed(dom.stdout)
    state = reader.state
    if not dom.stdout.strip():
        state.errors.append(f"chromium printed no DOM (exit {dom.returncode}): {dom.stderr[-500:]}")
    if screenshot is not None:
        screenshot.parent.mkdir(parents=True, exist_ok=True)
        _run(chromium, [f"--screenshot={screenshot}", f"--window-size={size[0]},{size[1]}", budget, url], timeout)
    return state
