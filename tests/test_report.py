"""The HTML report: offline pages (no network reference), the nothing-measured case,
captions on every chart, and the page set, built straight from the library."""

import itertools
import json
import re
from pathlib import Path

import polars as pl
import pytest

from gemmperf.hardware import CATALOG
from gemmperf.models import ws_persistent
from gemmperf.params import ParamSet
from gemmperf.predictions import candidate_table, predict_all
from gemmperf.problem import Shape
from gemmperf.report.basic import write_index
from gemmperf.report.data import ReportData, with_derived
from gemmperf.report.pages import ACCURACY, IMAGES, NAV, TILINGS, TIMELINE, build_pages, readme_block, write_gpu_report
from gemmperf.tables import CORRECTED_MODEL

REMOTE = re.compile(r"""<(script|link|img|iframe)[^>]*\b(src|href)\s*=\s*["']?(https?:)?//""", re.I)
SHIPPED = Path(__file__).resolve().parent.parent / "results" / "h100-sxm5-80gb"


def catalog_data() -> ReportData:
    """A GPU with nothing measured: catalog descriptor, default parameters, predictions only."""
    gpu = CATALOG["h100-sxm5-80gb"]
    pset = ParamSet(gpu)
    shapes = [Shape(256, 256, 256, "bf16"), Shape(1, 4096, 4096, "bf16")]
    table = candidate_table(shapes, gpu, ["ws-hopper", "simt"], "bf16")
    preds = with_derived(predict_all(table, pset, ["sol", "ws-stage", "ws-persistent"]).with_columns(testlist=pl.lit("tiny")))
    note = "No measurements: the GPU descriptor comes from the catalog; nothing here was measured."
    return ReportData(gpu=gpu, pset=pset, source="catalog", note=note, skipped={"collect": "no GPU"},
                      heldout="tiny", predictions=preds, tilings={"tiny": pl.DataFrame()}, testlists=["tiny"])


def check_offline(path: Path) -> str:
    text = path.read_text()
    assert not REMOTE.search(text), f"{path.name} loads something from the network"
    assert "Content-Security-Policy" in text and "default-src 'none'" in text
    return text


def test_nothing_measured_still_builds_every_page_and_says_so(tmp_path):
    out = tmp_path / "report"
    written = write_gpu_report(catalog_data(), out, out / "img")
    names = {p.name for p in written}
    assert {f for f, _ in NAV} <= names and {f"{i}.png" for i in IMAGES} <= names
    for f, _ in NAV:
        text = check_offline(out / f)
        assert "Nothing was measured" in text or f in (TIMELINE, TILINGS), f
    overview = (out / "index.html").read_text()
    assert "nothing here was measured" in overview and "Stages skipped" in overview
    # the timeline works on predictions alone (the simulator needs no measurement)
    assert "chart1" in (out / TIMELINE).read_text()
    for i in IMAGES:
        assert (out / "img" / f"{i}.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    summary = json.loads((out / "summary.json").read_text())
    assert summary["source"] == "catalog" and summary["measured_configurations"] == 0 and "best" not in summary


def accuracy_rows(models: list[str]) -> pl.DataFrame:
    """An accuracy.csv by hand: the models in order of increasing error, on every split."""
    return pl.DataFrame([
        {"split": split, "model": m, "family": "all", "n": 10, "shapes": 2, "median_ape_pct": 5.0 + i,
         "mape_pct": 6.0 + i, "p90_ape_pct": 9.0 + i, "p95_ape_pct": 10.0 + i, "max_ape_pct": 20.0,
         "within_10pct": 0.8, "geomean_ratio": 1.0, "spearman_mean": 0.9, "regret_mean_pct": 1.0}
        for split in ("cv", "heldout", "all") for i, m in enumerate(models)])


def test_report_says_where_the_ablations_are_when_they_were_not_run():
    from dataclasses import replace

    data = replace(catalog_data(), accuracy=accuracy_rows(["ws-pipelined+fit+residual", "ws-pipelined+fit", "sol"]))
    page = build_pages(data)[0].render(NAV, "gemmperf")
    assert "Ablations" in page and "Not run here" in page
    assert "snakemake --cores all ablations" in page and "results/h100-sxm5-80gb/ablations.json" in page
    assert "--config ablations=True" in page and "<table" in page  # the accuracy table is still there


def test_report_shows_the_ablation_table_and_keeps_it_out_of_the_accuracy_table(tmp_path):
    from gemmperf.report.data import split_ablations
    from gemmperf.report.pages import summary

    models = ["ws-pipelined+fit-no-smem_limit", "ws-pipelined+fit+residual", "ws-pipelined+fit",
              "ws-pipelined+fit-no-padding", "sol"]
    # an accuracy.csv written with ablations: they move to their own table
    acc, abl = split_ablations(accuracy_rows(models), None)
    assert not acc["model"].str.contains("-no-").any()
    assert set(abl["model"]) == {"ws-pipelined+fit", "ws-pipelined+fit-no-smem_limit", "ws-pipelined+fit-no-padding"}
    # an ablations.csv given: the accuracy table loses its ablation rows, the given table is kept
    given = accuracy_rows(["ws-pipelined+fit", "ws-pipelined+fit-no-pipelining"])
    assert split_ablations(accuracy_rows(models), given)[1] is given
    from dataclasses import replace

    data = replace(catalog_data(), accuracy=acc, ablations=abl)
    page = build_pages(data)[0].render(NAV, "gemmperf")
    assert "Not run here" not in page and "mape_change_pct" in page
    assert "smem_limit" in page and "padding" in page and "none (every effect on)" in page
    # the best model of each split is never an ablation (here one is the most accurate)
    assert {v["model"] for v in summary(data)["best"].values()} == {"ws-pipelined+fit+residual"}


def test_every_chart_has_a_caption_and_the_js_is_inlined_once(tmp_path):
    for page in build_pages(catalog_data()):
        html = page.render(NAV, "t")
        charts = re.findall(r"<div class=chart id=(chart\d+)></div><figcaption>([^<]+)</figcaption>", html)
        assert len(charts) == len(page.specs), page.name
        assert all(len(c) > 40 for _, c in charts), page.name
        if page.specs:
            assert html.count("window.vegaEmbed=") == 1, page.name


def test_index_links_every_gpu_page(tmp_path):
    s = {"slug": "x", "name": "GPU X", "source": "catalog", "note": "nothing measured", "measured_configurations": 0}
    write_index(tmp_path / "index.html", {"x": s})
    text = check_offline(tmp_path / "index.html")
    for f, _ in NAV:
        assert f"x/report/{f}" in text


def test_readme_block_prints_the_persistent_breakdown_like_the_readme():
    r = dict(m=4096, n=4096, k=16384, testlist="t", split="held out", family="ws-hopper", dtype="bf16", tile_m=128,
             tile_n=64, tile_k=64, stages=4, cluster_m=2, cluster_n=1, persistent=True, raster="row", ratio=1.67,
             predicted_us=376.16, time_us=225.28, setup_us=6.15, first_dma_us=0.104, limiter="dma",
             wave_dma_us=26.64, wave_math_us=6.30, wave_epilogue_us=1.36, last_wave_dma_us=22.32,
             last_wave_math_us=6.30, last_wave_epilogue_us=1.27)
    text = readme_block(r)
    for line in ("MNK 4096 4096 16384", "CTA (128 64)", "CLUSTER (2 1)", "RATIO: 1.67", "PROLOGUE",
                 "    Overhead: 6.15", "MAINLOOP", "    Limiter: DMA", "    Last Wave"):
        assert line in text


def test_persistent_phases_run_from_zero_to_the_predicted_time():
    rows = catalog_data().predictions.filter(pl.col("model") == ws_persistent.NAME)
    assert rows.height
    for r in rows.iter_rows(named=True):
        phases = ws_persistent.phases(r)
        assert phases[0]["start_us"] == 0.0
        assert all(a["end_us"] == b["start_us"] for a, b in zip(phases, phases[1:]))
        assert phases[-1]["end_us"] == pytest.approx(r["predicted_us"], rel=1e-12)
        parts = ws_persistent.wave_parts(r)
        assert [p["part"] for p in parts] == ["DMA", "MATH", "EPILOGUE"]
        assert max(p["us"] for p in parts) >= r["wave_math_us"]


@pytest.mark.skipif(not (SHIPPED / "report" / "summary.json").is_file(),
                    reason="run `snakemake --cores all` first: no generated report for the shipped H100 data")
def test_generated_h100_report_is_offline_and_complete():
    report = SHIPPED / "report"
    for f, _ in NAV:
        text = check_offline(report / f)
        assert len(text) < 8_000_000, f"{f} is {len(text)} bytes"
    acc = (report / "accuracy.html").read_text()
    assert CORRECTED_MODEL in acc and "predicted / measured" in acc
    summary = json.loads((report / "summary.json").read_text())
    assert summary["source"] in ("shipped", "measure") and summary["measured_configurations"] > 0
    assert {"cv", "loto"} <= set(summary["best"])  # nothing held out since issue 17: LOTO is the headline


def measured_data() -> ReportData:
    """catalog_data() as if measured: every prediction has a time, accuracy.csv and the
    out-of-sample predictions of the best model exist."""
    from dataclasses import replace

    data = catalog_data()
    preds = data.predictions.with_columns(time_us=pl.col("predicted_us") * 1.1, device=pl.lit("NVIDIA H100"),
                                          driver=pl.lit("580.1"), timestamp=pl.lit("2026-11-22T03:39:52"))
    oos = with_derived(data.predictions.filter(pl.col("model") == "sol").with_columns(
        model=pl.lit("ws-pipelined+fit+residual"), split=pl.lit("cv"), time_us=pl.col("predicted_us") * 1.2))
    acc = accuracy_rows(["ws-pipelined+fit+residual", "ws-pipelined+fit", "sol"])
    meas = pl.DataFrame({"m": [256, 256, 1], "n": [256, 256, 4096], "k": [256, 256, 4096],
                         "status": ["ok", "timeout", "ok"], "time_us": [3.0, None, 9.0]})
    return replace(data, source="shipped", predictions=with_derived(preds), accuracy=acc, out_of_sample=oos,
                   measurements={"tiny": meas})


def headings(html: str) -> list[str]:
    """The section headings of a page's content, in order (not the inlined scripts')."""
    return re.findall(r"<h2>([^<]+)</h2>", html[html.index("<main>"):html.index("</main>")])


def test_the_overview_leads_with_the_data_the_headline_and_its_chart():
    page = build_pages(measured_data())[0]
    html = page.render(NAV, "gemmperf")
    order = [h.split(":")[0] for h in headings(html)]
    assert order == ["Where the data came from", "Headline", "Predicted against measured", "Stages skipped",
                     "Model parameters (value ± one sigma)", "Accuracy of every model (out of sample)",
                     "Ablations", "Pages"], order
    # where the data came from: GPU, device, driver, dates, rows per testlist, parameters
    source = html[html.index("Where the data came from"):html.index("Headline")]
    for fact in ("H100", "NVIDIA H100", "driver: 580.1", "measured from 2026-11-22", "verified",
                 "model parameters: descriptor defaults"):
        assert fact in source, fact
    counts = re.sub(r"<[^>]+>", " ", source)
    assert re.search(r"rows measured\s+verified\s+shapes.*tiny\s+3\s+2\s+2", counts, re.S), counts
    # the headline names the best model, its figures and the split they come from
    head = html[html.index("Headline"):html.index("Predicted against measured")]
    assert "ws-pipelined+fit+residual" in head and "median error 5.0%" in head
    assert "Split: cv, grouped cross-validation" in head and "held-out tiny testlist" in head
    # the first chart of the page is the best model's predicted against measured
    first = html.index("<div class=chart id=chart1>")
    assert html.index("Predicted against measured") < first < html.index("Accuracy of every model")


def test_the_overview_gives_the_answer_band_after_the_headline():
    """With answer_band.json (gemmperf answer-band) the overview says how long the
    optimizer's answers ran against their prediction, after the headline's chart."""
    from dataclasses import replace

    band = {"shapes": 80, "runs": ["a/dev.csv", "a/heldout.csv"],
            "answer": {"n": 79, "median": 1.0339, "low": 0.8236, "high": 1.5181, "level": 0.9}, "corrected": None}
    html = build_pages(replace(measured_data(), answer_band=band))[0].render(NAV, "gemmperf")
    order = [h.split(":")[0] for h in headings(html)]
    assert order[2:5] == ["Predicted against measured", "How long the optimizer&#x27;s answer runs", "Stages skipped"]
    section = re.sub(r"<[^>]+>", " ", html[html.index("How long the optimizer"):html.index("Stages skipped")])
    assert "80 shapes no testlist holds" in section and "a/dev.csv, a/heldout.csv" in section
    assert re.search(r"the answer \(fitted model\)\s+79\s+1\.034\s+0\.824-1\.518x", section), section
    assert "--corrected's pick" not in section  # no band of it: no row
    assert "cross-fitted" not in section  # a correction that never saw the answers
    assert "How long" not in build_pages(measured_data())[0].render(NAV, "gemmperf")
    taught = {**band, "corrected_folds": [["dev"], ["heldout"]],
              "corrected": {"n": 78, "median": 1.01, "low": 0.9, "high": 1.2, "level": 0.9}}
    html = build_pages(replace(measured_data(), answer_band=taught))[0].render(NAV, "gemmperf")
    section = re.sub(r"<[^>]+>", " ", html[html.index("How long the optimizer"):html.index("Stages skipped")])
    assert "cross-fitted: each of 2 folds of the answers&#x27; sets" in section or \
        "cross-fitted: each of 2 folds of the answers' sets" in section, section


def test_the_headline_prefers_leave_one_testlist_out_when_it_was_computed():
    from dataclasses import replace

    from gemmperf.report.overview import headline

    data = measured_data()
    assert headline(data)[0] == "cv"
    loto = accuracy_rows(["sol", "ws-pipelined+fit+residual"]).filter(pl.col("split") == "cv").with_columns(
        split=pl.lit("loto"))
    split, row = headline(replace(data, accuracy=pl.concat([data.accuracy, loto])))
    assert (split, row["model"]) == ("loto", "sol")
    assert headline(catalog_data()) is None


def test_the_accuracy_page_shows_the_headline_protocol_and_the_overview_leads_with_it():
    from dataclasses import replace

    from gemmperf.report.data import with_loto
    from gemmperf.report.overview import headline

    data = measured_data()
    rows = []
    for split, (model, mape) in itertools.product(("testlist", "nk"), (("ws-pipelined+fit+residual", 13.1),
                                                                        ("nvMatmulHeuristics", 500.0))):
        for cls in ("all", "odd N (N % 8 != 0)"):
            rows.append({"split": split, "model": model, "class": cls, "n": 10, "shapes": 2, "mape_pct": mape,
                         "median_ape_pct": mape / 2, "p90_ape_pct": 30.0, "p95_ape_pct": 40.7, "max_ape_pct": 90.0,
                         "within_10pct": 0.5, "geomean_ratio": 1.01, "spearman_mean": 0.925,
                         "regret_mean_pct": 3.9})
    head = pl.DataFrame(rows)
    data = replace(data, headline=head, accuracy=with_loto(data.accuracy, head))
    split, best = headline(data)
    assert (split, best["model"], best["mape_pct"]) == ("loto", "ws-pipelined+fit+residual", 13.1)
    acc = next(p for p in build_pages(data) if p.name == ACCURACY).render(NAV, "gemmperf")
    section = acc[acc.index("On shapes the fit never saw"):]
    assert "<b>Leave one testlist out</b>" in section  # markup, not escaped
    for text in ("leave one testlist out", "grouped by weight matrix (n, k)", "odd N (N % 8 != 0)",
                 "nvMatmulHeuristics", "13.100", "tied picks counted at their mean"):
        assert text in section, text
    # the picks per shape, worst of the corrected model first
    picks = pl.DataFrame({"split": ["testlist"] * 3, "testlist": ["a", "a", "b"], "m": [1, 2, 3], "n": [8] * 3,
                          "k": [8] * 3, "dtype": ["bf16"] * 3, "configurations": [16] * 3,
                          "measured best us": [1.0, 2.0, 3.0],
                          "ws-pipelined+fit+residual regret %": [0.5, 37.25, 4.0],
                          "nvMatmulHeuristics regret %": [9.0, 0.0, 55.0]})
    acc = next(p for p in build_pages(replace(data, headline_picks=picks)) if p.name == ACCURACY).render(NAV, "g")
    section = acc[acc.index("Picks per shape"):]
    assert "ws-pipelined+fit+residual: 1; nvMatmulHeuristics: 1" in section
    assert section.index("37.25") < section.index("4.00") < section.index("0.50")
    # without the table the page says why
    bare = replace(measured_data(), skipped={"headline": "leave-one-testlist-out needs two testlists"})
    acc = next(p for p in build_pages(bare) if p.name == ACCURACY).render(NAV, "gemmperf")
    assert "Not scored here: leave-one-testlist-out needs two testlists." in acc
