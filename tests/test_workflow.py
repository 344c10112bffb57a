"""Run the Snakemake workflow end to end on a small config in a temporary folder."""

import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from test_incremental import copy_config

SNAKEMAKE = shutil.which("snakemake")
pytestmark = pytest.mark.skipif(SNAKEMAKE is None, reason="snakemake is not installed")


def snakemake(repo: Path, work: Path, *args: str) -> subprocess.CompletedProcess:
    cmd = [SNAKEMAKE, "-s", str(repo / "Snakefile"), "-d", str(work), "--cores", "2",
           "--configfile", str(work / "test-config.yaml"), *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=600)


@pytest.fixture
def small_workflow(tmp_path, repo_root):
    copy_config(tmp_path)
    (tmp_path / "lists").mkdir()
    (tmp_path / "lists" / "tiny.csv").write_text("m,n,k\n256,256,256\n1000,1000,1000\n")
    (tmp_path / "lists" / "skinny.csv").write_text("m,n,k\n1,4096,4096\n")
    cfg = {
        "probe": False,
        "gpus": ["auto"],
        "testlists": ["tiny", "skinny"],
        "heldout_testlist": "skinny",
        "testlist_dir": str(tmp_path / "lists"),
        "families": ["ws-hopper", "simt"],
        "models": ["sol", "ws-stage", "ws-persistent"],
    }
    (tmp_path / "test-config.yaml").write_text(yaml.safe_dump(cfg))
    return tmp_path


def test_workflow_runs_to_the_end_then_has_nothing_to_do(small_workflow, repo_root):
    run = snakemake(repo_root, small_workflow)
    assert run.returncode == 0, run.stderr[-3000:]
    assert "skipped collect" in run.stdout + run.stderr
    gpu = small_workflow / "results" / "h100-sxm5-80gb"
    for rel in ("hardware.json", "params.json", "predictions/tiny.parquet", "tilings/skinny.csv", "report/index.html"):
        assert (gpu / rel).is_file(), rel
    assert (small_workflow / "results" / "index.html").is_file()
    page = (gpu / "report" / "index.html").read_text()
    assert "nothing here was measured" in page and "skipped" in page.lower()
    for rule in ("hardware", "fit", "predict", "report"):
        assert (small_workflow / "logs").rglob("*.log")
    dry = snakemake(repo_root, small_workflow, "-n")
    assert dry.returncode == 0, dry.stderr[-2000:]
    assert "Nothing to be done" in dry.stdout + dry.stderr

    # snakemake's own report packs the pages, one category per GPU
    report = small_workflow / "report.zip"
    run = snakemake(repo_root, small_workflow, "--report", str(report))
    assert run.returncode == 0, run.stderr[-3000:]
    import zipfile

    with zipfile.ZipFile(report) as zf:
        names = zf.namelist()
        main = next(n for n in names if n.endswith("report.html"))
        assert "h100-sxm5-80gb" in zf.read(main).decode(errors="replace")  # the GPU's category
    for page in ("index", "accuracy", "errors", "roofline", "timeline", "tilings", "kernels"):
        assert any(n.endswith(f"/{page}.html") for n in names), (page, names[:20])


def test_changed_model_parameter_reruns_the_model_stages_not_hardware(small_workflow, repo_root):
    # model_params apply to every stage that runs a model (fit included), never to hardware
    assert snakemake(repo_root, small_workflow).returncode == 0
    cfg = yaml.safe_load((small_workflow / "test-config.yaml").read_text())
    cfg["model_params"] = {"l2_hit_rate": 0.3}
    (small_workflow / "test-config.yaml").write_text(yaml.safe_dump(cfg))
    dry = snakemake(repo_root, small_workflow, "-n", "--quiet", "rules")
    out = dry.stdout + dry.stderr
    assert dry.returncode == 0, out[-2000:]
    assert "predict" in out and "report" in out and "optimize" in out and "fit" in out
    assert "hardware" not in out


def test_bad_config_value_is_one_clear_error(small_workflow, repo_root):
    cfg = yaml.safe_load((small_workflow / "test-config.yaml").read_text())
    cfg["families"] = ["cublas"]
    (small_workflow / "test-config.yaml").write_text(yaml.safe_dump(cfg))
    run = snakemake(repo_root, small_workflow, "-n")
    assert run.returncode != 0
    assert "cublas" in run.stdout + run.stderr
