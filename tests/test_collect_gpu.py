"""A real sweep on the GPU, killed mid-way and resumed from its journal, ends with the
same rows as an uninterrupted one (skips without a GPU)."""

import csv
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from gemmperf.hardware import NoGPU, probe
from gemmperf.kernels import get_family

try:
    GPU = probe()
    NO_GPU = ""
except NoGPU as err:
    GPU, NO_GPU = None, str(err)

pytestmark = pytest.mark.skipif(GPU is None, reason=NO_GPU or "no GPU")
SRC = str(Path(__file__).resolve().parent.parent / "src")


def collect(testlist, out, *extra):
    env = {**os.environ, "PYTHONPATH": SRC + os.pathsep + os.environ.get("PYTHONPATH", "")}
    cmd = [sys.executable, "-m", "gemmperf", "collect", "--testlist", str(testlist), "--out", str(out),
           "--families", "ws-hopper,simt" if get_family("ws-hopper").runs_on(GPU) else "simt", "--preset", "small",
           "--max-seconds", "0.5", *extra]
    return cmd, env


def rows(path):
    with open(path, newline="") as fh:
        return list(csv.DictReader(fh))


def key(r):
    return tuple(r[c] for c in ("m", "n", "k", "family", "tile_m", "tile_n", "stages", "cluster_m", "cluster_n",
                                "persistent", "raster", "epilogue", "schedule", "group_m", "persistent_ctas", "split_k",
                                "stream_k"))


def test_killed_sweep_resumes_to_the_same_rows(tmp_path):
    testlist = tmp_path / "t.csv"
    testlist.write_text("m,n,k\n256,256,256\n1000,1000,1000\n17,33,65\n")
    full = tmp_path / "full.csv"
    cmd, env = collect(testlist, full)
    subprocess.run(cmd, env=env, check=True, timeout=600)

    part = tmp_path / "part.csv"
    journal = tmp_path / "part.journal.csv"  # collect's default journal of part.csv
    cmd, env = collect(testlist, part)
    proc = subprocess.Popen(cmd, env=env, start_new_session=True)
    deadline = time.time() + 300
    while time.time() < deadline and (not journal.exists() or len(journal.read_text().splitlines()) < 3):
        time.sleep(0.05)
    os.killpg(proc.pid, signal.SIGKILL)  # a crash: no cleanup at all
    proc.wait()
    assert not part.exists()  # the output is written from the journal at the end only
    before = {key(r): r["timestamp"] for r in rows(journal)}
    assert 0 < len(before) < len(rows(full))
    subprocess.run(cmd, env=env, check=True, timeout=600)

    a, b = rows(full), rows(part)
    assert len(b) == len({key(r) for r in b})
    assert len(rows(journal)) == len(b), "a configuration was measured twice"
    assert all(r["timestamp"] == before[key(r)] for r in b if key(r) in before)
    assert sorted(map(key, a)) == sorted(map(key, b))
    assert all(r["status"] == "ok" for r in b)
