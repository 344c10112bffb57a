"""A collect killed under Snakemake resumes from its journal: the real Snakefile and
measure.smk, a stand-in measure function instead of the GPU (GEMMPERF_MEASURE_STANDIN,
which logs every call), killed twice mid-sweep (SIGKILL of the collect job, then SIGINT
of Snakemake), then run to the end: nothing already in the journal is measured again and
every configuration ends up in the measurement table once."""

from __future__ import annotations

import csv
import fcntl
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from gemmperf.bench.journal import read_rows, task_key

REPO = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent
SNAKEMAKE = BIN / "snakemake"
pytestmark = pytest.mark.skipif(not SNAKEMAKE.is_file(), reason="snakemake is not installed next to this Python")
SLUG = "h100-sxm5-80gb"
TARGET = f"results/{SLUG}/measurements/tiny.csv"


@pytest.fixture
def wf(tmp_path):
    # the repository's config less its collect presets and sample counts, which name the
    # repository's testlists
    base = yaml.safe_load((REPO / "config" / "config.yaml").read_text())
    base["collect"]["presets"] = base["collect"]["sample"]["counts"] = {}
    (tmp_path / "config").mkdir()
    (tmp_path / "config" / "config.yaml").write_text(yaml.safe_dump(base))
    (tmp_path / "lists").mkdir()
    (tmp_path / "lists" / "tiny.csv").write_text("m,n,k\n256,256,256\n512,256,128\n128,384,256\n384,128,512\n")
    cfg = {"gpus": ["auto"], "testlists": ["tiny"], "heldout_testlist": "tiny", "testlist_dir": str(tmp_path / "lists"),
           "families": ["simt", "ws-ampere"], "collect": {"shards": 2, "presets": {"tiny": "paper"}}}
    (tmp_path / "test-config.yaml").write_text(yaml.safe_dump(cfg))
    (tmp_path / "gpu.json").write_text((REPO / "results" / SLUG / "shipped" / "hardware.json").read_text())
    env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}",
           "PYTHONPATH": os.pathsep.join([str(REPO / "src"), str(REPO / "tests")]),
           "GEMMPERF_FAKE_GPU": str(tmp_path / "gpu.json"), "GEMMPERF_GPUS": "0",
           "GEMMPERF_MEASURE_STANDIN": "test_sweep_fakes:standin", "GEMMPERF_TEST_CALLS": str(tmp_path / "calls"),
           "GEMMPERF_TEST_DELAY": "0.15", "GEMMPERF_PROGRESS": "0"}
    return tmp_path, env


def start(root: Path, env: dict) -> subprocess.Popen:
    cmd = [str(SNAKEMAKE), TARGET, "-s", str(REPO / "Snakefile"), "-d", str(root), "--cores", "1",
           "--configfile", str(root / "test-config.yaml")]
    return subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            start_new_session=True)


def journals(root: Path) -> list[Path]:
    return sorted((root / "results" / SLUG / "journal" / "tiny").glob("*.csv"))


def journal_keys(root: Path) -> list[tuple]:
    return [task_key(r) for j in journals(root) for r in read_rows(j)[0]]


def calls(root: Path) -> list[tuple]:
    path = root / "calls"
    return [tuple(line.split("|")) for line in path.read_text().splitlines()] if path.exists() else []


def wait_for(cond, proc: subprocess.Popen, what: str, timeout_s: float = 60.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not cond():
        if proc.poll() is not None:
            raise AssertionError(f"snakemake ended before {what}:\n{proc.stdout.read()[-3000:]}")
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)


def wait_unlocked(root: Path, timeout_s: float = 30.0) -> None:
    """Until no collect holds a journal's lock (a killed job's processes are gone)."""
    deadline = time.monotonic() + timeout_s
    for lock in (root / "results" / SLUG / "journal" / "tiny").glob("*.lock"):
        with lock.open("a") as fh:
            while True:
                try:
                    fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    fcntl.flock(fh, fcntl.LOCK_UN)
                    break
                except OSError:
                    assert time.monotonic() < deadline, f"{lock} still held"
                    time.sleep(0.05)
    time.sleep(0.3)  # an orphaned worker finishing its task logs its call


def holder(root: Path) -> int:
    locks = [p for p in (root / "results" / SLUG / "journal" / "tiny").glob("*.lock") if p.read_text().strip()]
    return int(max(locks, key=lambda p: p.stat().st_mtime).read_text())


def test_killed_snakemake_collect_resumes_without_measuring_twice(wf):
    root, env = wf
    # 1. a crash: SIGKILL of the collect job itself once it has written a few rows
    proc = start(root, env)
    wait_for(lambda: len(journal_keys(root)) >= 3, proc, "3 rows in the journal")
    os.kill(holder(root), signal.SIGKILL)
    proc.wait(60)
    assert proc.returncode != 0
    wait_unlocked(root)
    kept1, calls1 = set(journal_keys(root)), len(calls(root))

    # 2. an interruption: SIGINT to Snakemake (Ctrl-C) mid-sweep
    proc = start(root, env)
    wait_for(lambda: len(journal_keys(root)) >= len(kept1) + 3, proc, "3 more rows")
    os.killpg(proc.pid, signal.SIGINT)
    proc.wait(60)
    assert proc.returncode != 0
    wait_unlocked(root)
    kept2, calls2 = set(journal_keys(root)), len(calls(root))
    assert not kept1 & set(calls(root)[calls1:]), "the rerun measured rows the journal held"

    # 3. to the end
    proc = start(root, env)
    out, _ = proc.communicate(timeout=120)
    assert proc.returncode == 0, out[-3000:]
    assert not kept2 & set(calls(root)[calls2:]), "the rerun measured rows the journal held"
    with (root / TARGET).open(newline="") as fh:
        final = list(csv.DictReader(fh))
    keys = [task_key(r) for r in final]
    assert len(keys) == len(set(keys)) == 32 and {r["status"] for r in final} == {"ok"}
    assert kept2 <= set(keys)  # nothing measured before the kills was lost
    every = calls(root)
    assert set(every) == set(keys)
    # only a task in flight at a kill (at most one per kill) was measured twice
    assert len(every) - len(set(every)) <= 2, sorted(k for k in every if every.count(k) > 1)


def test_a_second_dtype_is_collected_into_its_own_folder_and_journal(wf):
    root, env = wf
    cfg = yaml.safe_load((root / "test-config.yaml").read_text())
    cfg.update(dtypes=["bf16", "fp8"], families=["ws-hopper", "ws-ampere"])
    (root / "test-config.yaml").write_text(yaml.safe_dump(cfg))
    target = f"results/{SLUG}/fp8/measurements/tiny.csv"
    run = subprocess.run([str(SNAKEMAKE), target, "-s", str(REPO / "Snakefile"), "-d", str(root), "--cores", "1",
                          "--configfile", str(root / "test-config.yaml")], env={**env, "GEMMPERF_TEST_DELAY": "0"},
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, (run.stdout + run.stderr)[-3000:]
    with (root / target).open(newline="") as fh:
        final = list(csv.DictReader(fh))
    # ws-hopper's paper tilings in fp8 (tile K 128) on the 4 shapes; ws-ampere has no fp8 kernel
    assert len(final) == 16 and {(r["family"], r["dtype"], r["tile_k"]) for r in final} == {("ws-hopper", "fp8", "128")}
    assert sorted(p.name for p in (root / "results" / SLUG / "fp8" / "journal" / "tiny").glob("*.csv"))
    assert not (root / "results" / SLUG / "journal").exists()  # bf16 was not asked for
    logs = "".join(p.read_text() for p in (root / "logs" / SLUG / "fp8" / "collect").glob("*.log"))
    assert "collect: skipping ws-ampere: ws-ampere takes bf16 or fp16, not fp8" in logs


def test_the_collect_rule_passes_the_configs_preset_and_sample(wf):
    """collect.preset for every testlist, collect.presets per testlist, and preset sample's
    count (collect.sample.counts per testlist) and seed reach `gemmperf collect`."""
    root, env = wf
    cfg = yaml.safe_load((root / "test-config.yaml").read_text())

    def collect_command(collect: dict) -> str:
        cfg["collect"] = {"shards": 1, **collect}
        (root / "test-config.yaml").write_text(yaml.safe_dump(cfg))
        run = subprocess.run([str(SNAKEMAKE), TARGET, "-s", str(REPO / "Snakefile"), "-d", str(root), "-n", "-p",
                              "--configfile", str(root / "test-config.yaml")],
                             env=env, capture_output=True, text=True)
        assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]
        return next(line for line in run.stdout.splitlines() if "gemmperf collect" in line)

    line = collect_command({"preset": "sample", "presets": {}, "sample": {"count": 16, "seed": 5, "counts": {"tiny": 3}}})
    assert "--preset sample --sample-count 3 --sample-seed 5" in line, line
    line = collect_command({"preset": "sample", "presets": {}, "sample": {"count": 7, "seed": 1723, "counts": {}}})
    assert "--preset sample --sample-count 7 --sample-seed 1723" in line, line
    line = collect_command({"preset": "sample", "presets": {"tiny": "paper"}})
    assert "--preset paper " in line, line
