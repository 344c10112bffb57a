"""Incremental reruns: after a full run Snakemake reruns exactly what a change touches.

Each test runs the real workflow (`snakemake -s <repo>/Snakefile -d <tmp>`) on a small
config: two short testlists whose measurements are the shipped H100 rows of their
shapes, copied into a temporary results/<gpu>/shipped/ folder. What would rerun is read
from a dry run (`-n --quiet rules`), never by running GPU jobs.

The "measured GPU" tests stand in for a GPU with two test hooks: GEMMPERF_FAKE_GPU (a
descriptor JSON that plan.local_probe() returns instead of probing) and a fake
`gemmperf` first on PATH that answers `gpu-slot`, `collect` and `microbench` from the
shipped rows (everything else goes to the real command line).
"""

from __future__ import annotations

import csv
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from gemmperf.models.ws_pipelined import EFFECTS

SNAKEMAKE = shutil.which("snakemake")
pytestmark = pytest.mark.skipif(SNAKEMAKE is None, reason="snakemake is not installed")

REPO = Path(__file__).resolve().parent.parent
SLUG = "h100-sxm5-80gb"
SHIPPED = REPO / "results" / SLUG / "shipped"
LISTS = {  # testlist -> (source testlist, shapes)
    "grid": ("paper-grid", [(256, 256, 256), (512, 1024, 384), (1024, 1024, 1024), (768, 128, 640),
                            (384, 896, 512), (1024, 256, 896)]),
    "held": ("llm", None),  # first 3 shapes of llm
}
JOB_LINE = re.compile(r"^\s*(\w+)\s+(\d+)\s*$")


def _rows(testlist: str, shapes, folder: Path = SHIPPED) -> tuple[list[str], list[dict], list[tuple]]:
    with (folder / "measurements" / f"{testlist}.csv").open(newline="") as fh:
        reader = csv.DictReader(fh)
        rows = list(reader)
    if shapes is None:
        shapes = list(dict.fromkeys((int(r["m"]), int(r["n"]), int(r["k"])) for r in rows))[:3]
    keep = [r for r in rows if (int(r["m"]), int(r["n"]), int(r["k"])) in set(shapes)]
    return reader.fieldnames, keep, shapes


def write_shipped(results: Path, slug: str, hardware: dict | None = None, source: Path = SHIPPED) -> None:
    """A small shipped folder: the rows of the test shapes of the shipped folder ``source``
    (the H100's by default, then optionally relabelled), its descriptor and microbenchmarks."""
    sd = results / slug / "shipped"
    (sd / "measurements").mkdir(parents=True)
    hw = json.loads((source / "hardware.json").read_text())
    hw.update(hardware or {}, slug=slug)
    (sd / "hardware.json").write_text(json.dumps(hw, indent=2))
    shutil.copyfile(source / "microbench.csv", sd / "microbench.csv")
    for name, (testlist, shapes) in LISTS.items():
        _, _, shapes = _rows(testlist, shapes)  # the test shapes are the H100 list's
        fields, rows, _ = _rows(testlist, shapes, source)
        with (sd / "measurements" / f"{name}.csv").open("w", newline="") as fh:
            w = csv.DictWriter(fh, fields)
            w.writeheader()
            w.writerows({**r, "gpu": slug} for r in rows)


FAKE_GEMMPERF = """#!{python}
# Test double of a GPU for the workflow: collect and microbench answer from the shipped
# rows; gpu-slot runs its command; everything else is the real gemmperf.
# (a main guard: gemmperf accuracy starts spawned workers, which import this file)
import csv, os, shutil, sys


def fake():
    args = sys.argv[1:]
    if args[:1] == ["gpu-slot"]:
        cmd = args[args.index("--") + 1:]
        os.execvp(cmd[0], cmd)
    opts = dict(zip(args[1::2], args[2::2])) if args[:1] in (["collect"], ["microbench"]) else None
    if opts is not None and args[0] == "microbench":
        shutil.copyfile({shipped!r} + "/microbench.csv", opts["--out"])
        sys.exit(0)
    if opts is not None:
        name = os.path.basename(opts["--testlist"])[:-4]
        i, n = map(int, opts["--shard"].split("/"))
        src = os.path.join(os.path.dirname(os.path.dirname(opts["--testlist"])), "fake-rows", name + ".csv")
        with open(src, newline="") as fh:
            reader = csv.DictReader(fh)
            rows = list(reader)
        shapes = list(dict.fromkeys((r["m"], r["n"], r["k"]) for r in rows))[i::n]
        with open(opts["--out"], "w", newline="") as fh:
            w = csv.DictWriter(fh, reader.fieldnames)
            w.writeheader()
            w.writerows(r for r in rows if (r["m"], r["n"], r["k"]) in shapes)
        sys.exit(0)
    from gemmperf.app.cli import main
    sys.exit(main(args))


if __name__ == "__main__":
    fake()
"""


class Workflow:
    def __init__(self, root: Path):
        self.root = root
        self.env = dict(os.environ)

    @property
    def config(self) -> dict:
        return yaml.safe_load((self.root / "test-config.yaml").read_text())

    @config.setter
    def config(self, cfg: dict) -> None:
        (self.root / "test-config.yaml").write_text(yaml.safe_dump(cfg))

    def run(self, *args: str, check: bool = True) -> subprocess.CompletedProcess:
        # args (targets, flags) before --configfile, whose list would swallow a target
        cmd = [SNAKEMAKE, "-s", str(REPO / "Snakefile"), "-d", str(self.root), "--cores", "2", *args,
               "--configfile", str(self.root / "test-config.yaml")]
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=900, env=self.env)
        if check:
            assert proc.returncode == 0, (proc.stdout + proc.stderr)[-4000:]
        return proc

    def pending(self, *args: str) -> dict[str, int]:
        """Rule -> job count that a dry run (of ``args``: targets, --config) would run now."""
        out = self.run(*args, "-n", "--quiet", "rules")
        text = out.stdout + out.stderr
        if "Nothing to be done" in text:
            return {}
        jobs = {}
        for line in text.splitlines():
            m = JOB_LINE.match(line)
            if m and m.group(1) not in ("total", "count", "job"):
                jobs[m.group(1)] = int(m.group(2))
        assert jobs, text[-3000:]
        return jobs


def copy_config(root: Path) -> None:
    """The repository's config/config.yaml, less its collect presets and sample counts,
    which name the repository's testlists (naming a testlist that does not exist is an
    error)."""
    cfg = yaml.safe_load((REPO / "config" / "config.yaml").read_text())
    cfg["collect"]["presets"] = cfg["collect"]["sample"]["counts"] = {}
    (root / "config").mkdir(parents=True)
    (root / "config" / "config.yaml").write_text(yaml.safe_dump(cfg))


def make_workflow(root: Path) -> Workflow:
    copy_config(root)
    lists = root / "lists"
    lists.mkdir()
    for name, (source, shapes) in LISTS.items():
        _, _, shapes = _rows(source, shapes)
        (lists / f"{name}.csv").write_text("m,n,k\n" + "".join(f"{m},{n},{k}\n" for m, n, k in shapes))
    w = Workflow(root)
    w.config = {
        "probe": False,
        "gpus": ["auto"],
        "testlists": list(LISTS),
        "heldout_testlist": "held",
        "testlist_dir": str(lists),
        "families": ["ws-hopper"],
        "models": ["sol", "ws-stage", "ws-persistent"],
        "collect": {"shards": 2, "presets": {"grid": "paper"}},
    }
    return w


def clone(base: Workflow, root: Path) -> Workflow:
    """A copy of a finished run (files, times and Snakemake's records) for one test."""
    shutil.copytree(base.root, root, symlinks=True, dirs_exist_ok=True)
    w = Workflow(root)
    w.env = {k: v.replace(str(base.root), str(root)) for k, v in base.env.items()}
    return w


@pytest.fixture(scope="module")
def shipped_base(tmp_path_factory) -> Workflow:
    """One full run on a small shipped set (about a minute), shared by the tests."""
    wf = make_workflow(tmp_path_factory.mktemp("shipped"))
    write_shipped(wf.root / "results", SLUG)
    wf.run()
    assert wf.pending() == {}
    return wf


@pytest.fixture
def shipped_wf(shipped_base, tmp_path) -> Workflow:
    return clone(shipped_base, tmp_path / "wf")


def test_full_run_then_dry_run_has_nothing_to_do(shipped_wf):
    assert (shipped_wf.root / "results" / SLUG / "accuracy.json").is_file()
    assert shipped_wf.pending() == {}
    # the ablations are opt-in: not run, and the report says where they are
    assert not (shipped_wf.root / "results" / SLUG / "ablations.json").exists()
    acc = json.loads((shipped_wf.root / "results" / SLUG / "accuracy.json").read_text())
    assert "ws-pipelined+fit+residual" in acc and not any("-no-" in model for model in acc)
    page = (shipped_wf.root / "results" / SLUG / "report" / "index.html").read_text()
    assert "Not run here" in page and "snakemake --cores all ablations" in page


def test_ablations_run_on_request_and_rerun_nothing_else(shipped_wf):
    # the switch adds the ablation job and reruns the report that shows it, nothing upstream
    assert shipped_wf.pending("--config", "ablations=True") == {"score_ablations": 1, "report": 1, "index": 1,
                                                                  "all": 1}
    # the named target runs the ablations alone
    assert shipped_wf.pending("ablations") == {"score_ablations": 1, "ablations": 1}
    shipped_wf.run("ablations")
    scores = json.loads((shipped_wf.root / "results" / SLUG / "ablations.json").read_text())
    assert {m for m in scores if m not in ("heldout", "all", "meta")} == {
        "ws-pipelined+fit", *(f"ws-pipelined+fit-no-{e}" for e in EFFECTS)}
    assert shipped_wf.pending("ablations") == {}
    # then the switch only redraws the report, which now shows the table
    assert shipped_wf.pending("--config", "ablations=True") == {"report": 1, "index": 1, "all": 1}
    shipped_wf.run("--config", "ablations=True")
    page = (shipped_wf.root / "results" / SLUG / "report" / "index.html").read_text()
    assert "Not run here" not in page and "mape_change_pct" in page and all(e in page for e in EFFECTS)
    assert shipped_wf.pending("--config", "ablations=True") == {}


# model_params apply to every stage that runs a model: fit, accuracy, headline, predict, optimize, report
DOWNSTREAM_OF_MODELS = {"fit", "predict", "accuracy", "headline", "report", "optimize", "index", "all"}


def _change_model_parameter(wf: Workflow) -> dict[str, int]:
    cfg = wf.config
    cfg["model_params"] = {"l2_hit_rate": 0.3}
    wf.config = cfg
    return wf.pending()


def test_model_parameter_reruns_only_the_model_stages(shipped_wf):
    jobs = _change_model_parameter(shipped_wf)
    assert jobs.get("predict") == len(LISTS) and jobs.get("report") == 1, jobs
    assert jobs.get("fit") == 1 and jobs.get("accuracy") == 1, jobs
    assert set(jobs) <= DOWNSTREAM_OF_MODELS, jobs  # never hardware or measurements


def test_model_parameter_reruns_optimize(shipped_wf):
    jobs = _change_model_parameter(shipped_wf)
    assert jobs.get("optimize") == len(LISTS), jobs


def test_second_gpu_runs_only_its_own_chain(shipped_wf):
    write_shipped(shipped_wf.root / "results", "h200-sxm-141gb",
                  {"name": "NVIDIA H200", "memory_bytes": 150754820096, "l2_bytes": 62914560})
    jobs = shipped_wf.pending()
    assert jobs["hardware"] == 1 and jobs["predict"] == len(LISTS) and jobs.get("index") == 1, jobs
    # every job writes the new GPU's files (or the index page that lists both GPUs)
    dry = shipped_wf.run("-n", "-p")
    outputs = re.findall(r"^\s*output: (.*)$", dry.stdout, re.M)
    assert outputs, dry.stdout[-3000:]
    for line in outputs:
        for path in line.split(", "):
            assert path.startswith("results/h200-sxm-141gb/") or path == "results/index.html", path


def test_the_shipped_h200_reruns_only_its_chain_and_the_index(shipped_wf):
    """The real H200 files (its rows of the test shapes, its descriptor and microbenchmarks,
    results/h200-sxm-141gb/shipped/) added to a finished H100 run: only the H200's chain and
    the index run, the H100's files stay as they were, and the index compares the two."""
    h200 = "h200-sxm-141gb"
    write_shipped(shipped_wf.root / "results", h200, source=REPO / "results" / h200 / "shipped")
    jobs = shipped_wf.pending()
    assert jobs["hardware"] == 1 and jobs["predict"] == len(LISTS) and jobs.get("index") == 1, jobs
    h100 = shipped_wf.root / "results" / SLUG
    before = {p: p.stat().st_mtime_ns for p in h100.rglob("*") if p.is_file()}
    shipped_wf.run()
    assert {p: p.stat().st_mtime_ns for p in h100.rglob("*") if p.is_file()} == before
    assert shipped_wf.pending() == {}
    page = (shipped_wf.root / "results" / "index.html").read_text()
    assert "GPUs side by side" in page and h200 in page
    ratio = re.search(rf"<td class=l>{h200}</td><td class=l>{SLUG}</td><td class=l>all</td>"
                      r"<td>(\d+)</td><td>([0-9.]+)</td>", page)
    assert ratio, page[page.index("GPUs side by side"):][:2000]
    # the same configurations measured on both GPUs: the H200 ran them 0.8-1.1x the H100's time
    assert int(ratio.group(1)) > 0 and 0.8 < float(ratio.group(2)) < 1.1
    # the target `transfer`: each GPU's fit and correction carried onto the other, scored there
    assert shipped_wf.pending("transfer") == {"transfer_pair": 2, "transfer": 1}
    shipped_wf.run("transfer")
    for src, dst in ((SLUG, h200), (h200, SLUG)):
        scores = json.loads((shipped_wf.root / "results" / "transfer" / src / f"to-{dst}.json").read_text())
        mape = {r["model"]: r["mape_pct"] for r in scores["summary"] if r["class"] == "all"}
        moved, corrected = f"transfer {src} -> {dst}", f"transfer {src} -> {dst} + {src} correction"
        assert {moved, corrected, f"{src} measured, reused", "catalog defaults"} <= set(mape), mape
        # the source's residual correction, carried (on this small set its trees hardly split:
        # what it buys on the shipped data is benchmarks/transfer.py's figure)
        assert 0 < mape[corrected] < 100
        assert scores["meta"]["against"] == "microbenchmarks" and scores["meta"]["rows"] > 0
    assert {p: p.stat().st_mtime_ns for p in h100.rglob("*") if p.is_file()} == before


def test_a_second_dtype_runs_only_its_own_chain_like_a_gpu_without_measurements(shipped_wf):
    # nothing of fp8 is shipped: its chain runs on descriptor defaults (no accuracy), the
    # bf16 chain is left alone, the index lists both
    bf16 = shipped_wf.root / "results" / SLUG
    before = {p: p.stat().st_mtime_ns for p in bf16.rglob("*") if p.is_file() and "fp8" not in p.parts}
    cfg = shipped_wf.config
    cfg["dtypes"] = ["bf16", "fp8"]
    shipped_wf.config = cfg
    assert shipped_wf.pending() == {"fit_params": 1, "predict": len(LISTS), "optimize": len(LISTS), "report": 1,
                                    "index": 1, "all": 1}
    run = shipped_wf.run()
    assert f"{SLUG}/fp8: catalog" in run.stdout + run.stderr
    fp8 = bf16 / "fp8"
    assert not (fp8 / "accuracy.json").exists() and (fp8 / "report" / "index.html").is_file()
    tilings = (fp8 / "tilings" / "grid.csv").read_text().splitlines()
    dtype = tilings[0].split(",").index("dtype")
    assert {line.split(",")[dtype] for line in tilings[1:]} == {"fp8"}
    page = (fp8 / "report" / "index.html").read_text()
    assert "No fp8 measurements" in page and "nothing here was measured" in page
    assert f"{SLUG}/fp8/report/index.html" in (shipped_wf.root / "results" / "index.html").read_text()
    changed = [p for p, t in before.items() if p.stat().st_mtime_ns != t]
    assert not changed, changed
    assert shipped_wf.pending() == {}


def test_shipped_fp8_runs_its_chain_taught_by_the_gpus_bf16_rows(shipped_wf):
    # fp8 rows of the test shapes shipped: the fp8 chain fits its constants on them and its
    # correction also on the GPU's bf16 rows and answers (teacher rows), the bf16 chain is
    # left alone, and a change to the fp8 rows reruns the fp8 chain alone
    fp8_dir = shipped_wf.root / "results" / SLUG / "shipped" / "fp8" / "measurements"
    fp8_dir.mkdir(parents=True)
    for name, (testlist, shapes) in LISTS.items():
        fields, rows, shapes = _rows(testlist, shapes)
        if (SHIPPED / "fp8" / "measurements" / f"{testlist}.csv").is_file():
            fields, rows, _ = _rows(testlist, shapes, SHIPPED / "fp8")
        else:  # no fp8 paper-grid is shipped: its bf16 rows as fp8 ones (fp8's tile K is twice bf16's)
            rows = [{**r, "dtype": "fp8", "tile_k": str(2 * int(r["tile_k"]))} for r in rows]
        assert rows, testlist
        with (fp8_dir / f"{name}.csv").open("w", newline="") as fh:
            w = csv.DictWriter(fh, fields)
            w.writeheader()
            w.writerows(rows)
    bf16 = shipped_wf.root / "results" / SLUG
    before = {p: p.stat().st_mtime_ns for p in bf16.rglob("*") if p.is_file() and "fp8" not in p.parts}
    cfg = shipped_wf.config
    cfg["dtypes"] = ["bf16", "fp8"]
    shipped_wf.config = cfg
    dry = shipped_wf.run("-n", "-p")
    fits = [line for line in dry.stdout.splitlines() if line.startswith("Shell command: gemmperf fit")]
    assert len(fits) == 1 and "--dtype fp8" in fits[0], fits
    taught = fits[0].split("--teacher-measurements")[1].split("--")[0].split()
    assert sorted(taught) == sorted(f"results/{SLUG}/shipped/measurements/{name}.csv" for name in LISTS), taught
    shipped_wf.run()
    record = json.loads((bf16 / "fp8" / "params.json").read_text())
    assert {e["dtype"] for e in record["entries"]} == {"fp8"} and record["fit"]["teacher_rows"] > 0
    assert (bf16 / "fp8" / "accuracy.json").is_file()
    changed = [p for p, t in before.items() if p.stat().st_mtime_ns != t]
    assert not changed, changed
    assert shipped_wf.pending() == {}
    # the fp8 rows change: the bf16 chain does not rerun
    more = fp8_dir / "grid.csv"
    more.write_text(more.read_text())
    assert "fit" in shipped_wf.pending()
    outputs = re.findall(r"^\s*output: (.*)$", shipped_wf.run("-n", "-p").stdout, re.M)
    assert outputs and all(f"{SLUG}/fp8/" in path or path == "results/index.html"
                           for line in outputs for path in line.split(", ")), outputs


# ------------------------------------------------------------ a measured (fake) GPU


@pytest.fixture(scope="module")
def measured_base(tmp_path_factory) -> Workflow:
    """A full run on a fake local H100 (measure source, collect answered from the shipped rows)."""
    root = tmp_path_factory.mktemp("measured")
    wf = make_workflow(root)
    fake_rows = root / "fake-rows"
    fake_rows.mkdir()
    for name, (source, shapes) in LISTS.items():
        fields, rows, _ = _rows(source, shapes)
        with (fake_rows / f"{name}.csv").open("w", newline="") as fh:
            w = csv.DictWriter(fh, fields)
            w.writeheader()
            w.writerows(rows)
    bin_dir = root / "bin"
    bin_dir.mkdir()
    fake = bin_dir / "gemmperf"
    fake.write_text(FAKE_GEMMPERF.format(python=sys.executable, shipped=str(SHIPPED)))
    fake.chmod(0o755)
    descriptor = json.loads((SHIPPED / "hardware.json").read_text())
    descriptor["sm_clock_current_mhz"] = 1755.0  # what a probe sees now: wanders
    (root / "gpu.json").write_text(json.dumps(descriptor))
    # the library as a copy, so a test may edit its code
    shutil.copytree(REPO / "src", root / "src", ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
    wf.env.update(PATH=f"{bin_dir}{os.pathsep}{wf.env['PATH']}", GEMMPERF_FAKE_GPU=str(root / "gpu.json"),
                  PYTHONPATH=str(root / "src"))
    cfg = wf.config
    cfg["probe"] = True
    wf.config = cfg
    run = wf.run()
    assert f"{SLUG}: measure" in run.stdout + run.stderr
    shards = sorted(p.name for p in (root / "results" / SLUG / "measurements" / "shards").iterdir())
    assert shards == ["grid.0-of-2.csv", "grid.1-of-2.csv", "held.0-of-2.csv", "held.1-of-2.csv"]
    assert wf.pending() == {}
    return wf


@pytest.fixture
def measured_wf(measured_base, tmp_path) -> Workflow:
    return clone(measured_base, tmp_path / "wf")


def _edit_descriptor(wf: Workflow, **changes) -> None:
    path = wf.root / "gpu.json"
    d = json.loads(path.read_text())
    d.update(changes)
    path.write_text(json.dumps(d))


MEASURED_CHAIN = {"hardware", "microbench", "collect_shard", "merge_shards", "fit", "accuracy", "predict",
                  "optimize", "report", "index", "all"}


@pytest.mark.parametrize("change", [{"driver": "13.1"}, {"sms": 114}, {"sm_clock_mhz": 1755.0},
                                    {"memory_bytes": 2 * 85017493504}, {"l2_bytes": 62914560}])
def test_changed_descriptor_reruns_its_measurements(measured_wf, change):
    _edit_descriptor(measured_wf, **change)
    jobs = measured_wf.pending()
    assert jobs.get("hardware") == 1 and jobs.get("collect_shard") == 4 and jobs.get("microbench") == 1, jobs
    assert set(jobs) <= MEASURED_CHAIN


def test_clock_wander_reruns_nothing(measured_wf):
    _edit_descriptor(measured_wf, sm_clock_current_mhz=1980.0, mem_clock_current_mhz=2619.0)
    assert measured_wf.pending() == {}


def test_library_change_reruns_the_stages_that_use_it(measured_wf):
    src = measured_wf.root / "src" / "gemmperf"
    with (src / "kernels" / "builder.py").open("a") as fh:
        fh.write("\n# a change to the kernel builder\n")
    jobs = measured_wf.pending()
    assert jobs.get("collect_shard") == 4 and jobs.get("microbench") == 1, jobs
    assert "hardware" not in jobs, jobs
    (src / "kernels" / "builder.py").write_text((REPO / "src/gemmperf/kernels/builder.py").read_text())
    assert measured_wf.pending() == {}
    with (src / "bench" / "merge.py").open("a") as fh:
        fh.write("\n# a change to the merge\n")
    jobs = measured_wf.pending()
    assert jobs.get("merge_shards") == len(LISTS) and "collect_shard" not in jobs, jobs


def test_a_second_dtype_on_a_measured_gpu_measures_it_beside_the_first(measured_wf):
    cfg = measured_wf.config
    cfg["dtypes"] = ["bf16", "fp8"]
    measured_wf.config = cfg
    jobs = measured_wf.pending()
    assert jobs == {"microbench": 1, "collect_shard": 4, "merge_shards": len(LISTS), "fit": 1, "accuracy": 1,
                    "predict": len(LISTS), "optimize": len(LISTS), "report": 1, "index": 1, "all": 1}, jobs
    dry = measured_wf.run("-n", "-p")
    collects = [line for line in dry.stdout.splitlines() if "gemmperf collect" in line]
    assert len(collects) == 4 and all("--dtype fp8" in line and f"results/{SLUG}/fp8/journal/" in line
                                      for line in collects), collects
