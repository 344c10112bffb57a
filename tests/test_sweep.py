"""The sweep's resume and crash isolation, with a fake measure function (no GPU)."""

import csv
import os

import pytest

from gemmperf.bench.merge import merge_shards
from gemmperf.bench.sweep import done_keys, run_sweep, task_key
from gemmperf.problem import shard
from gemmperf.tables import ROW_COLUMNS


def tasks(n=12):
    return [dict(m=64 * (i + 1), n=64, k=64, family="simt", dtype="fp32", tile_m=64, tile_n=64, tile_k=16,
                 stages=2, cluster_m=1, cluster_n=1, persistent=False, raster="row", mode="full") for i in range(n)]


def fake_factory(crash_at=(), hang_at=(), fail_at=()):
    def factory():
        def measure(task):
            if task["m"] in crash_at:
                os._exit(3)  # what a poisoned CUDA context does to a process
            if task["m"] in hang_at:
                import time
                time.sleep(60)
            if task["m"] in fail_at:
                raise RuntimeError("too many resources requested")
            return {"status": "ok", "time_us": float(task["m"]), "reason": ""}
        return measure
    return factory


def read(path):
    with open(path, newline="") as fh:
        return list(csv.DictReader(fh))


def test_interrupted_sweep_resumes_to_the_same_rows(tmp_path):
    full = tmp_path / "full.csv"
    run_sweep(tasks(), full, fake_factory(), progress=False, start_method="fork")
    part = tmp_path / "part.csv"
    run_sweep(tasks()[:5], part, fake_factory(), progress=False, start_method="fork")  # "interrupted" after 5
    # a crash mid-write leaves a torn last line
    with open(part, "a") as fh:
        fh.write("640,64,64,simt,fp32,64")
    counts = run_sweep(tasks(), part, fake_factory(), progress=False, start_method="fork")
    assert counts == {"ok": 7}
    strip = lambda rows: sorted((tuple(r[c] for c in ROW_COLUMNS if c != "timestamp") for r in rows))
    assert strip(read(part)) == strip(read(full))
    assert run_sweep(tasks(), part, fake_factory(), progress=False, start_method="fork") == {}


def test_crash_hang_and_error_are_recorded_and_the_sweep_goes_on(tmp_path):
    out = tmp_path / "m.csv"
    counts = run_sweep(tasks(6), out, fake_factory(crash_at={128}, hang_at={256}, fail_at={320}),
                       timeout_s=3, progress=False, start_method="fork")
    rows = {int(r["m"]): r for r in read(out)}
    assert counts == {"ok": 3, "launch_error": 2, "timeout": 1}
    assert rows[128]["status"] == "launch_error" and "worker died" in rows[128]["reason"]
    assert rows[256]["status"] == "timeout"
    assert rows[320]["status"] == "launch_error" and "too many resources" in rows[320]["reason"]
    assert rows[384]["status"] == "ok"  # after the crash, a fresh worker measured on


def test_shards_merge_to_the_one_gpu_table(tmp_path):
    all_tasks = tasks(10)
    one = tmp_path / "one.csv"
    run_sweep(all_tasks, one, fake_factory(), progress=False, start_method="fork")
    parts = []
    for i in range(3):
        p = tmp_path / f"s{i}.csv"
        run_sweep(shard(all_tasks, i, 3), p, fake_factory(), progress=False, start_method="fork")
        parts.append(p)
    merged = tmp_path / "merged.csv"
    assert merge_shards(parts, merged) == 10
    assert done_keys(merged) == done_keys(one) == {task_key(t) for t in all_tasks}
