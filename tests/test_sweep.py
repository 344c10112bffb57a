"""The sweep's journal, resume, crash isolation, lock, retry and torn rows, with a fake
measure function (no GPU). Every sweep here uses the spawn start method, as production."""

import csv
import errno
import multiprocessing as mp
import os

import pytest

from gemmperf.bench import journal as journal_mod
from gemmperf.bench.journal import Journal, best_rows, done_keys, read_rows, task_key
from gemmperf.bench.merge import merge_shards
from gemmperf.bench.sweep import WorkerStartError, run_sweep
from gemmperf.errors import UserError
from gemmperf.problem import shard
from gemmperf.tables import ROW_COLUMNS
from test_sweep_fakes import Fake, failing_factory, sweep_into, tasks


def read(path):
    with open(path, newline="") as fh:
        return list(csv.DictReader(fh))


def sweep(tasks_, path, factory=None, **kw):
    return run_sweep(tasks_, path, factory or Fake(), progress=False, **kw)


def test_interrupted_sweep_resumes_to_the_same_rows(tmp_path):
    full = tmp_path / "full.csv"
    sweep(tasks(), full)
    part = tmp_path / "part.csv"
    sweep(tasks()[:5], part)  # "interrupted" after 5
    with open(part, "a") as fh:  # a crash mid-write leaves a torn last line
        fh.write("640,64,64,simt,fp32,64")
    assert sweep(tasks(), part) == {"ok": 7}
    strip = lambda rows: sorted((tuple(r[c] for c in ROW_COLUMNS if c != "timestamp") for r in rows))
    assert strip(read(part)) == strip(read(full))
    assert sweep(tasks(), part) == {}


def test_crash_hang_and_error_are_recorded_and_the_sweep_goes_on(tmp_path):
    out = tmp_path / "m.csv"
    counts = sweep(tasks(6), out, Fake(crash_at={128}, hang_at={256}, fail_at={320}), timeout_s=3)
    rows = {int(r["m"]): r for r in read(out)}
    assert counts == {"ok": 3, "launch_error": 2, "timeout": 1}
    assert rows[128]["status"] == "launch_error" and "worker died" in rows[128]["reason"]
    assert rows[256]["status"] == "timeout"
    assert rows[320]["status"] == "launch_error" and "too many resources" in rows[320]["reason"]
    assert rows[384]["status"] == "ok"  # after the crash, a fresh worker measured on


def test_shards_merge_to_the_one_gpu_table(tmp_path):
    all_tasks = tasks(10)
    one = tmp_path / "one.csv"
    sweep(all_tasks, one)
    parts = []
    for i in range(3):
        p = tmp_path / f"s{i}.csv"
        sweep(shard(all_tasks, i, 3), p)
        parts.append(p)
    merged = tmp_path / "merged.csv"
    assert merge_shards(parts, merged) == 10
    assert done_keys(merged) == done_keys(one) == {task_key(t) for t in all_tasks}


def test_a_row_torn_after_its_status_is_measured_again(tmp_path):
    out = tmp_path / "m.csv"
    sweep(tasks(4), out)
    lines = out.read_text().splitlines(keepends=True)
    status_at = ROW_COLUMNS.index("status")
    torn = ",".join(lines[2].split(",")[: status_at + 1]) + "\n"  # cut right after "ok"
    out.write_text(lines[0] + lines[1] + torn + "".join(lines[3:]))  # later rows stay whole
    assert len(read_rows(out)[0]) == 3 and read_rows(out)[1] == 1
    assert task_key(tasks(4)[1]) not in done_keys(out)
    assert sweep(tasks(4), out) == {"ok": 1}
    assert {task_key(r) for r in read_rows(out)[0]} == {task_key(t) for t in tasks(4)}


def test_ok_without_a_valid_time_is_not_a_row(tmp_path):
    out = tmp_path / "m.csv"
    sweep(tasks(3), out)
    text = out.read_text().replace(",64.0,", ",-1,", 1)  # the first row's time_us (m = 64)
    out.write_text(text)
    assert task_key(tasks(3)[0]) not in done_keys(out)


def test_a_multi_line_reason_stays_on_one_line_and_its_log_goes_to_a_side_file(tmp_path):
    out = tmp_path / "m.csv"
    log = "NVRTC failed for simt\n" + "\n".join(f"kernel.cu({i}): error: bad {i}" for i in range(200))
    assert sweep(tasks(4), out, Fake(fail_at={128}, reason=log)) == {"ok": 3, "launch_error": 1}
    lines = out.read_text().splitlines()
    assert len(lines) == 5  # header + one physical line per row
    rows = {int(r["m"]): r for r in read(out)}
    assert len(rows) == 4 and rows[192]["status"] == "ok"
    reason = rows[128]["reason"]
    assert "\n" not in reason and len(reason) < 400 and "full log: " in reason
    side = reason.split("full log: ")[1].rstrip(")")
    assert side.startswith(str(tmp_path / "m.logs")) and "128" in os.path.basename(side)
    assert open(side).read() == "RuntimeError: " + log


def test_disk_full_leaves_no_torn_row_and_stops_with_one_line(tmp_path, monkeypatch):
    out = tmp_path / "m.csv"
    sweep(tasks(2), out)
    before = out.read_bytes()
    real_write, inode = os.write, out.stat().st_ino

    def half_then_full(fd, data):  # the disk fills up half-way through the journal's row
        if os.fstat(fd).st_ino != inode:
            return real_write(fd, data)
        real_write(fd, bytes(data[: len(data) // 2]))
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(journal_mod.os, "write", half_then_full)
    with pytest.raises(UserError) as err:
        sweep(tasks(4), out)
    assert "No space left on device" in str(err.value) and "\n" not in str(err.value)
    assert out.read_bytes() == before


def test_two_sweeps_on_one_journal_write_each_row_once(tmp_path):
    out = tmp_path / "m.csv"
    ctx = mp.get_context("spawn")
    procs = [ctx.Process(target=sweep_into, args=(str(out), 20, 0.02, str(tmp_path / f"r{i}"))) for i in range(2)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(120)
    results = sorted((tmp_path / f"r{i}").read_text() for i in range(2))
    rows = read(out)
    assert len(rows) == 20 and len({task_key(r) for r in rows}) == 20
    # either the second waited out the first (nothing left to do) or it was refused
    refused = [r for r in results if r != "ok"]
    for message in refused:
        assert f"{out}.lock: another sweep (pid " in message and "\n" not in message


def test_a_held_lock_names_its_file_and_pid(tmp_path):
    out = tmp_path / "m.csv"
    with Journal(out):
        with pytest.raises(UserError, match=rf"m\.csv\.lock: another sweep \(pid {os.getpid()}\) is writing"):
            sweep(tasks(2), out)
    assert sweep(tasks(2), out) == {"ok": 2}  # released


def test_retry_failed_measures_failures_again_and_keeps_them_as_history(tmp_path):
    out = tmp_path / "m.csv"
    first = sweep(tasks(5), out, Fake(crash_at={64}, hang_at={128}, fail_at={192}), timeout_s=3)
    assert first == {"ok": 2, "launch_error": 2, "timeout": 1}
    calls = tmp_path / "calls"
    assert sweep(tasks(5), out, Fake(calls=calls)) == {}  # without --retry-failed: nothing
    assert sweep(tasks(5), out, Fake(calls=calls), retry_failed=True) == {"ok": 3}
    assert sorted(calls.read_text().split()) == ["128", "192", "64"]
    rows, _ = read_rows(out)
    assert len(rows) == 8  # the three failed rows stay as history
    assert {r["status"] for r in best_rows(rows).values()} == {"ok"}


def test_compile_errors_are_not_retried(tmp_path):
    out = tmp_path / "m.csv"
    sweep(tasks(2), out)
    text = out.read_text().replace(",ok,", ",compile_error,", 1)
    out.write_text(text)
    assert sweep(tasks(2), out, retry_failed=True) == {}


def test_a_row_of_another_context_is_measured_again(tmp_path):
    out = tmp_path / "m.csv"
    sweep(tasks(2), out, context={"gpu": "h100-sxm5-80gb", "warm_l2": False})
    assert sweep(tasks(2), out, context={"gpu": "h100-sxm5-80gb", "warm_l2": False}) == {}
    assert sweep(tasks(2), out, context={"gpu": "h100-sxm5-80gb", "warm_l2": True}) == {"ok": 2}


def test_a_worker_that_cannot_start_stops_the_sweep_with_one_line(tmp_path):
    out = tmp_path / "m.csv"
    with pytest.raises(WorkerStartError) as err:
        sweep(tasks(3), out, failing_factory)
    assert isinstance(err.value, UserError)
    assert str(err.value) == "the measuring worker could not start: RuntimeError: cuInit failed: CUDA_ERROR_NO_DEVICE"
    assert read_rows(out) == ([], 0)


def test_progress_bar_and_summary(tmp_path, monkeypatch, capsys):
    pytest.importorskip("tqdm")
    monkeypatch.setenv("GEMMPERF_PROGRESS", "1")
    out = tmp_path / "m.csv"
    run_sweep(tasks(3), out, Fake(), progress=True)
    err = capsys.readouterr().err
    assert "measuring m.csv" in err and "ok=3" in err
    assert err.rstrip().splitlines()[-1].startswith(f"{out}: measured 3 now (ok 3)")


def test_a_torn_quoted_reason_damages_only_its_own_line(tmp_path):
    out = tmp_path / "m.csv"
    sweep(tasks(2), out)
    with open(out, "a") as fh:  # an old-style multi-line reason, torn inside its quotes
        fh.write(",".join(["640", "64", "64", "simt"] + [""] * 10) + ',"NVRTC failed\nkernel.cu(3): error\n')
    assert sweep(tasks(4), out) == {"ok": 2}  # rows written after the torn one are read
    rows, torn = read_rows(out)
    assert {task_key(r) for r in rows} == {task_key(t) for t in tasks(4)} and torn == 2
