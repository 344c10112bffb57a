"""`gemmperf collect` and `microbench` as a user meets them without a GPU: the clean
one-line "no GPU" message, and a whole collect through the stand-in measure function
(journal, output written from it, --retry-failed, a worker that cannot start)."""

from __future__ import annotations

import csv
import os
import subprocess
import sys
from pathlib import Path

import pytest

from gemmperf.bench.journal import read_rows
from gemmperf.hardware import NoGPU, probe

REPO = Path(__file__).resolve().parent.parent
GPU = "h100-sxm5-80gb"


def has_gpu() -> bool:
    try:
        probe()
        return True
    except NoGPU:
        return False


def gemmperf(*args, env=None, cwd=None):
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO / "src"), str(REPO / "tests")]),
           "GEMMPERF_PROGRESS": "0", **(env or {})}
    return subprocess.run([sys.executable, "-m", "gemmperf", *args], capture_output=True, text=True, env=env,
                          cwd=cwd, timeout=120)


@pytest.fixture
def testlist(tmp_path):
    path = tmp_path / "t.csv"
    path.write_text("m,n,k\n256,256,256\n512,128,256\n")
    return path


@pytest.mark.skipif(has_gpu(), reason="this machine has a GPU; the test needs a machine without a CUDA driver")
@pytest.mark.parametrize("command", ["collect", "microbench"])
def test_no_cuda_driver_is_one_clean_line(command, testlist, tmp_path):
    args = ["--gpu", GPU, "--out", str(tmp_path / "o.csv")]
    if command == "collect":
        args += ["--testlist", str(testlist)]
    run = gemmperf(command, *args)
    assert run.returncode == 2, run.stderr
    assert run.stderr.count("\n") == 1 and "Traceback" not in run.stderr
    assert run.stderr.startswith(f"gemmperf {command}: no GPU: ")
    assert not (tmp_path / "o.csv").exists() and not (tmp_path / "o.journal.csv").exists()


def collect(testlist, out, *extra, calls, env=None):
    return gemmperf("collect", "--gpu", GPU, "--testlist", str(testlist), "--out", str(out), "--families", "simt",
                    "--preset", "paper", *extra,
                    env={"GEMMPERF_MEASURE_STANDIN": "test_sweep_fakes:standin", "GEMMPERF_TEST_CALLS": str(calls),
                         **(env or {})})


def rows(path):
    with open(path, newline="") as fh:
        return list(csv.DictReader(fh))


def test_collect_writes_its_output_from_the_journal_and_resumes(testlist, tmp_path):
    out, calls = tmp_path / "m.csv", tmp_path / "calls"
    run = collect(testlist, out, "--limit", "3", calls=calls)
    assert run.returncode == 0, run.stderr
    journal = tmp_path / "m.journal.csv"
    assert len(rows(out)) == 3 and len(read_rows(journal)[0]) == 3
    run = collect(testlist, out, calls=calls)
    assert run.returncode == 0, run.stderr
    assert len(rows(out)) == 8 and {r["status"] for r in rows(out)} == {"ok"}
    assert len(calls.read_text().splitlines()) == 8  # the first three were not measured again
    assert "8 of 8 configurations in this shard measured; 5 measured now" in run.stdout


def test_an_earlier_output_starts_the_journal(testlist, tmp_path):
    out, calls = tmp_path / "m.csv", tmp_path / "calls"
    assert collect(testlist, out, "--limit", "3", calls=calls).returncode == 0
    (tmp_path / "m.journal.csv").unlink()  # as an earlier collect left it: rows in m.csv only
    assert collect(testlist, out, calls=calls).returncode == 0
    assert len(calls.read_text().splitlines()) == 8 and len(rows(out)) == 8


def test_retry_failed_from_the_command_line(testlist, tmp_path):
    out, calls, journal = tmp_path / "m.csv", tmp_path / "calls", tmp_path / "j" / "m.csv"
    assert collect(testlist, out, "--journal", str(journal), calls=calls).returncode == 0
    lines = journal.read_text().splitlines()
    lines[1] = lines[1].replace(",ok,", ",timeout,")  # a row that failed
    journal.write_text("\n".join(lines) + "\n")
    assert collect(testlist, out, "--journal", str(journal), calls=calls).returncode == 0
    assert len(calls.read_text().splitlines()) == 8
    assert collect(testlist, out, "--journal", str(journal), "--retry-failed", calls=calls).returncode == 0
    assert len(calls.read_text().splitlines()) == 9
    assert len(read_rows(journal)[0]) == 9  # the timeout stays as history
    assert {r["status"] for r in rows(out)} == {"ok"} and len(rows(out)) == 8


def test_a_worker_that_cannot_start_is_one_line(testlist, tmp_path):
    run = collect(testlist, tmp_path / "m.csv", calls=tmp_path / "calls",
                  env={"GEMMPERF_MEASURE_STANDIN": "no_such_module:standin"})
    assert run.returncode == 2
    assert run.stderr == ("gemmperf collect: the measuring worker could not start: "
                          "ModuleNotFoundError: No module named 'no_such_module'\n")


def test_the_sweep_compile_shows_progress_and_reports_failures(monkeypatch, capsys):
    pytest.importorskip("cuda.core")
    pytest.importorskip("tqdm")
    from gemmperf.hardware import CATALOG
    from gemmperf.kernels import get_family
    from gemmperf.kernels.builder import build_all

    monkeypatch.setenv("GEMMPERF_PROGRESS", "1")
    simt = get_family("simt").default_sweep(CATALOG["a100-sxm4-80gb"])[0]
    hopper_only = simt.replace(family="ws-hopper", dtype="bf16")
    failed = build_all([simt, hopper_only], "sm_80", jobs=2)
    assert list(failed) == [hopper_only.key()] and "needs sm_90a" in failed[hopper_only.key()]
    err = capsys.readouterr().err
    assert "compiling kernels for sm_80" in err and "/2 [" in err


def test_presets_measure_their_picks_and_the_new_dimensions_in_a_few_variants():
    from gemmperf.bench.collect import sweep_configs
    from gemmperf.hardware import CATALOG
    from gemmperf.kernels import get_family

    h100 = CATALOG["h100-sxm5-80gb"]
    small = sweep_configs("ws-hopper", h100, "bf16", "small")
    base = [c for c in small if (c.cluster_m, c.epilogue) == (1, "direct")]
    assert len(base) == 4 and all(c.schedule == "cooperative" and c.group_m == 8 for c in small)
    # each pick also with the TMA epilogue, and with it on 2x1 clusters, where legal
    assert {(c.cluster_m, c.cluster_n, c.epilogue) for c in small} == {(1, 1, "direct"), (1, 1, "tma"), (2, 1, "tma")}
    assert len(small) == 12 and len(set(small)) == 12
    medium = sweep_configs("ws-hopper", h100, "bf16", "medium")
    assert 40 < len(medium) < 120 and len(set(medium)) == len(medium)
    paper = sweep_configs("ws-hopper", h100, "bf16", "paper")
    assert len(paper) == 4 and all((c.cluster_m, c.epilogue) == (1, "direct") for c in paper)
    # families without the new dimensions measure what they always did
    assert len(sweep_configs("ws-ampere", CATALOG["a100-sxm4-80gb"], "bf16", "small")) == 1
    assert sweep_configs("ws-hopper", h100, "bf16", "default") == get_family("ws-hopper").default_sweep(h100)


def test_presets_measure_split_k_and_stream_k_where_a_shape_has_fewer_tiles_than_sms():
    from gemmperf.bench.collect import tasks_for
    from gemmperf.bench.journal import task_key
    from gemmperf.hardware import CATALOG
    from gemmperf.kernels import get_family
    from gemmperf.problem import Shape

    h100 = CATALOG["h100-sxm5-80gb"]
    skinny, square = Shape(64, 7168, 2048), Shape(4096, 4096, 4096)
    for preset in ("default", "medium", "small"):
        tasks = tasks_for([skinny, square], h100, ["ws-hopper"], "bf16", preset)
        assert len({task_key(t) for t in tasks}) == len(tasks)  # the journal tells them apart
        shared = [t for t in tasks if t["split_k"] > 1 or t["stream_k"]]
        assert shared and all((t["m"], t["n"], t["k"]) == (64, 7168, 2048) for t in shared), preset
        for t in shared:
            tiles = -(-64 // t["tile_m"]) * -(-7168 // t["tile_n"])
            assert tiles < h100.sms and t["epilogue"] == "tma" and t["schedule"] == "cooperative"
            if t["split_k"] > 1:
                assert tiles * t["split_k"] <= 2 * h100.sms and t["split_k"] <= 2048 // t["tile_k"]
                assert not t["persistent"] and t["raster"] == "row"
            else:
                assert t["persistent"] and t["raster"] == "grouped"
        # every tile of shared_k_configs makes fewer than 132 tiles here: each legal stream-K
        # configuration is measured (64x256's is not legal: it spills)
        assert {(t["tile_m"], t["tile_n"]) for t in shared if t["stream_k"]} == {
            (c.tile_m, c.tile_n) for c in get_family("ws-hopper").shared_k_configs(h100) if c.stream_k}
        # 64x128 makes 56 tiles: splits 2 (112 CTAs) to 4 (224 <= 264), never 6 (336)
        assert sorted(t["split_k"] for t in shared if (t["tile_m"], t["tile_n"], t["stream_k"]) == (64, 128, False)) \
            == [2, 3, 4]
    assert not [t for t in tasks_for([skinny], h100, ["ws-hopper"], "bf16", "paper") if t["split_k"] > 1
                or t["stream_k"]]
    # one k-block per tile: nothing to share
    one_k = tasks_for([Shape(64, 7168, 64)], h100, ["ws-hopper"], "bf16", "small")
    assert not [t for t in one_k if t["split_k"] > 1 or t["stream_k"]]


def test_fp8_is_measured_by_the_families_that_take_it_and_the_others_are_skipped():
    from gemmperf.bench.collect import dtype_skips, tasks_for
    from gemmperf.errors import UserError
    from gemmperf.hardware import CATALOG
    from gemmperf.problem import Shape

    h100 = CATALOG["h100-sxm5-80gb"]
    every = ["ws-hopper", "ws-ampere", "simt"]
    assert dtype_skips(h100, every, "fp8") == {"ws-ampere": "ws-ampere takes bf16 or fp16, not fp8"}
    assert dtype_skips(h100, every, "bf16") == {}
    for preset in ("paper", "small", "medium", "default"):
        tasks = tasks_for([Shape(512, 512, 512)], h100, every, "fp8", preset)
        hopper = [t for t in tasks if t["family"] == "ws-hopper"]
        assert hopper and {(t["dtype"], t["tile_k"]) for t in hopper} == {("fp8", 128)}, preset
        assert {t["family"] for t in tasks} <= {"ws-hopper", "simt"}
    with pytest.raises(UserError, match="--dtype fp8: no kernel of ws-ampere takes it"):
        tasks_for([Shape(512, 512, 512)], h100, ["ws-ampere"], "fp8", "small")


def test_collect_fp8_skips_the_families_without_fp8_in_one_line(testlist, tmp_path):
    out, calls = tmp_path / "m.csv", tmp_path / "calls"
    run = gemmperf("collect", "--gpu", GPU, "--testlist", str(testlist), "--out", str(out), "--families",
                   "ws-hopper,ws-ampere", "--dtype", "fp8", "--preset", "paper",
                   env={"GEMMPERF_MEASURE_STANDIN": "test_sweep_fakes:standin", "GEMMPERF_TEST_CALLS": str(calls)})
    assert run.returncode == 0, run.stderr
    assert "collect: skipping ws-ampere: ws-ampere takes bf16 or fp16, not fp8\n" in run.stderr
    measured = rows(out)
    assert measured and {(r["family"], r["dtype"], r["tile_k"]) for r in measured} == {("ws-hopper", "fp8", "128")}
    run = gemmperf("collect", "--gpu", GPU, "--testlist", str(testlist), "--out", str(out), "--families",
                   "ws-ampere", "--dtype", "fp8")
    assert run.returncode == 2 and run.stderr.count("\n") == 1, run.stderr
    assert "--dtype fp8: no kernel of ws-ampere takes it (ws-ampere takes bf16 or fp16, not fp8)" in run.stderr
