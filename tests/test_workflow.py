"""Run the Snakemake workflow end to end on a small config in a temporary folder."""

import shutil
import subprocess
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


# ------------------------------------------------------------------ a list of dtypes


def _plan_config(tmp_path, **changes) -> dict:
    (tmp_path / "lists").mkdir(exist_ok=True)
    for name in ("tiny", "skinny"):
        (tmp_path / "lists" / f"{name}.csv").write_text("m,n,k\n256,256,256\n")
    return {"probe": False, "gpus": ["auto"], "testlists": ["tiny", "skinny"], "heldout_testlist": "skinny",
            "testlist_dir": str(tmp_path / "lists"), "residual": True, **changes}


def test_each_dtype_is_a_run_and_a_dtype_without_data_runs_like_a_gpu_without_measurements(tmp_path):
    from gemmperf.app.plan import make_plan

    results = tmp_path / "results"
    sd = results / "h100-sxm5-80gb" / "shipped"
    (sd / "measurements").mkdir(parents=True)
    (sd / "measurements" / "tiny.csv").write_text("m,n,k\n")
    (sd / "microbench.csv").write_text("kind\n")
    (sd / "fp16" / "measurements").mkdir(parents=True)  # fp16 data of one testlist, no microbench
    (sd / "fp16" / "measurements" / "skinny.csv").write_text("m,n,k\n")
    plan = make_plan(_plan_config(tmp_path, dtypes=["bf16", "fp8", "fp16"]), results)
    runs = plan.runs
    assert list(runs) == ["h100-sxm5-80gb", "h100-sxm5-80gb/fp8", "h100-sxm5-80gb/fp16"]
    bf16, fp8, fp16 = runs.values()
    assert (bf16.gpu, bf16.dtype, bf16.source, bf16.testlists_measured, bf16.has_microbench, bf16.data) == (
        "h100-sxm5-80gb", "bf16", "shipped", ["tiny"], True, str(sd))
    # fp8: nothing shipped, handled as a GPU without measurements
    assert (fp8.dtype, fp8.source, fp8.testlists_measured, fp8.has_microbench) == ("fp8", "catalog", [], False)
    assert "no shipped fp8 measurements" in fp8.skipped["collect"]
    assert {"fit", "residual", "accuracy"} <= set(fp8.skipped)
    assert (fp16.source, fp16.testlists_measured, fp16.has_microbench, fp16.data) == (
        "shipped", ["skinny"], False, str(sd / "fp16"))
    assert "h100-sxm5-80gb/fp8: catalog" in plan.summary()
    # fp16's correction also learns from the GPU's bf16 rows (teacher rows); none without
    # ws-hopper or the correction, and a run without measurements has nothing to be taught
    taught = make_plan(_plan_config(tmp_path, dtypes=["bf16", "fp8", "fp16"], families=["ws-hopper"]), results)
    assert [r.teacher for r in taught.runs.values()] == [None, None, "h100-sxm5-80gb"]
    for off in ({"families": ["simt"]}, {"families": ["ws-hopper"], "residual": False}):
        runs = make_plan(_plan_config(tmp_path, dtypes=["bf16", "fp16"], **off), results).runs
        assert runs["h100-sxm5-80gb/fp16"].teacher is None, off
    # a GPU without any data: every dtype a catalog run; a measured GPU measures every dtype
    assert {r.source for r in make_plan(_plan_config(tmp_path, dtypes=["bf16", "fp8"]), tmp_path / "none").runs.values()} \
        == {"catalog"}
    from gemmperf.hardware import CATALOG

    measured = make_plan(_plan_config(tmp_path, dtypes=["fp8"], probe=True), tmp_path / "none",
                         local_gpu=CATALOG["h100-sxm5-80gb"]).runs
    assert list(measured) == ["h100-sxm5-80gb/fp8"] and measured["h100-sxm5-80gb/fp8"].source == "measure"


def test_the_dtypes_default_and_the_older_single_dtype(tmp_path):
    from gemmperf.app.plan import config_dtypes
    from gemmperf.errors import UserError

    assert config_dtypes({}) == ["bf16"]
    assert config_dtypes({"dtype": "fp16"}) == ["fp16"]
    assert config_dtypes({"dtypes": ["fp8", "bf16"]}) == ["fp8", "bf16"]
    with pytest.raises(UserError, match="give only dtypes"):
        config_dtypes({"dtype": "fp16", "dtypes": ["bf16"]})


def test_a_dtype_list_wires_one_chain_per_dtype(small_workflow, repo_root):
    cfg = yaml.safe_load((small_workflow / "test-config.yaml").read_text())
    cfg["dtypes"] = ["bf16", "fp8"]
    (small_workflow / "test-config.yaml").write_text(yaml.safe_dump(cfg))
    dry = snakemake(repo_root, small_workflow, "-n", "-p")
    assert dry.returncode == 0, dry.stderr[-2000:]
    out = dry.stdout
    # fp8's files under results/<gpu>/fp8/, each command told its dtype
    commands = [line.split()[3] for line in out.splitlines() if line.startswith("Shell command: gemmperf")]
    assert sorted(commands) == sorted(["hardware", "index"] + 2 * ["fit", "report"] + 4 * ["predict", "optimize"])
    for line in out.splitlines():
        if line.startswith("Shell command: gemmperf") and line.split()[3] in ("fit", "predict", "optimize"):
            assert ("--dtype fp8" in line) == ("/fp8/" in line) and "--dtype" in line, line
    for rel in ("params.json", "predictions/tiny.parquet", "tilings/skinny.csv", "report/index.html"):
        assert f"results/h100-sxm5-80gb/fp8/{rel}" in out, rel
    assert "gemmperf index --gpus h100-sxm5-80gb,h100-sxm5-80gb/fp8" in out


@pytest.mark.parametrize("dtypes, message", [
    (["bf16", "fp4"], "config dtypes[1] = 'fp4': must be a tensor-core input dtype: bf16, fp16 or fp8"),
    (["bf16", "bf16"], "config dtypes"),
    ([], "config dtypes"),
])
def test_a_bad_dtype_list_is_one_line(small_workflow, repo_root, dtypes, message):
    cfg = yaml.safe_load((small_workflow / "test-config.yaml").read_text())
    cfg["dtypes"] = dtypes
    (small_workflow / "test-config.yaml").write_text(yaml.safe_dump(cfg))
    run = snakemake(repo_root, small_workflow, "-n")
    assert run.returncode == 2, run.stdout[-2000:]
    lines = [ln for ln in run.stderr.splitlines() if ln.startswith("gemmperf workflow:")]
    assert len(lines) == 1 and lines[0].startswith(f"gemmperf workflow: {message}"), run.stderr[-2000:]


def test_the_headline_split_needs_ws_hopper_and_two_development_testlists(tmp_path):
    from gemmperf.app.plan import make_plan

    results = tmp_path / "results"
    sd = results / "h100-sxm5-80gb" / "shipped"
    (sd / "measurements").mkdir(parents=True)
    (sd / "microbench.csv").write_text("kind\n")
    for name in ("tiny", "skinny", "wide"):
        (sd / "measurements" / f"{name}.csv").write_text("m,n,k\n")

    def run(**changes):
        config = _plan_config(tmp_path, **{"families": ["ws-hopper", "simt"], **changes})
        return make_plan(config, results).runs["h100-sxm5-80gb"]

    # tiny and wide are development lists (skinny is held out): scored
    assert "headline" not in run(testlists=["tiny", "skinny", "wide"]).skipped
    # one development list is not enough to leave one out
    why = run(testlists=["tiny", "skinny"]).skipped["headline"]
    assert "two or more development testlists" in why and "tiny" in why
    assert "headline" not in run(testlists=["tiny", "skinny"], heldout_testlist=None).skipped
    assert "ws-hopper" in run(testlists=["tiny", "skinny", "wide"], families=["simt"]).skipped["headline"]
    # nothing measured: skipped for the accuracy's reason
    nothing = make_plan(_plan_config(tmp_path, families=["ws-hopper"]), tmp_path / "none").runs["h100-sxm5-80gb"]
    assert nothing.skipped["headline"] == nothing.skipped["accuracy"]
