"""gemmperf gpu-slot: one GPU per job from the node's pool (no GPU needed)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from gemmperf.app import gpuslot
from gemmperf.errors import UserError

RECORD = (
    "import os, sys, time; t0 = time.time(); time.sleep(float(sys.argv[2])); "
    "open(sys.argv[1], 'a').write(f\"{os.environ['CUDA_VISIBLE_DEVICES']} {t0} {time.time()}\\n\")"
)


def slot_cmd(slots: Path, gpus: str, *cmd: str) -> list[str]:
    return [sys.executable, "-m", "gemmperf", "gpu-slot", "--gpus", gpus, "--slots", str(slots), "--", *cmd]


def test_pool_comes_from_gemmperf_gpus_then_cuda_visible_devices(monkeypatch):
    monkeypatch.setattr(gpuslot, "device_count", lambda: 3)
    assert gpuslot.gpu_pool({"GEMMPERF_GPUS": "2, 3", "CUDA_VISIBLE_DEVICES": "0"}) == ["2", "3"]
    assert gpuslot.gpu_pool({"CUDA_VISIBLE_DEVICES": "GPU-abc,GPU-def"}) == ["GPU-abc", "GPU-def"]
    assert gpuslot.gpu_pool({"CUDA_VISIBLE_DEVICES": ""}) == ["0", "1", "2"]
    assert gpuslot.gpu_pool({"CUDA_VISIBLE_DEVICES": "-1"}) == ["0", "1", "2"]
    monkeypatch.setattr(gpuslot, "device_count", lambda: 0)
    assert gpuslot.gpu_pool({}) == []
    with pytest.raises(UserError, match="no GPU in the pool"):
        gpuslot.claim([], "unused")


def test_claims_are_exclusive_until_released(tmp_path):
    a = gpuslot.try_claim(["0", "1"], tmp_path)
    b = gpuslot.try_claim(["0", "1"], tmp_path)
    assert (a.device, b.device) == ("0", "1")
    assert gpuslot.try_claim(["0", "1"], tmp_path) is None
    a.release()
    c = gpuslot.try_claim(["0", "1"], tmp_path)
    assert c.device == "0"
    with pytest.raises(UserError, match="no free GPU"):
        gpuslot.claim(["0", "1"], tmp_path, timeout_s=0.3, poll_s=0.05)


def test_a_dead_owner_slot_is_taken_over_a_young_one_is_not(tmp_path):
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    slot = gpuslot.try_claim(["0"], tmp_path, pid=dead.pid)
    assert slot is not None
    again = gpuslot.try_claim(["0"], tmp_path)  # owner gone: a killed job's slot
    assert again is not None and again.device == "0"
    young = again.path
    (young / "owner").unlink()  # a claimant between mkdir and writing its pid
    assert gpuslot.try_claim(["0"], tmp_path) is None
    old = time.time() - 2 * gpuslot.STALE_GRACE_S
    os.utime(young, (old, old))
    assert gpuslot.try_claim(["0"], tmp_path) is not None


def test_parallel_jobs_share_out_the_pool_one_per_gpu(tmp_path):
    """Six jobs started at once on a pool of two: two at a time, never two on one GPU."""
    log, slots = tmp_path / "log", tmp_path / "slots"
    procs = [subprocess.Popen(slot_cmd(slots, "0,1", sys.executable, "-c", RECORD, str(log), "0.4"))
             for _ in range(6)]
    assert [p.wait(timeout=60) for p in procs] == [0] * 6
    runs = [(dev, float(t0), float(t1)) for dev, t0, t1 in (line.split() for line in log.read_text().splitlines())]
    assert len(runs) == 6 and {d for d, _, _ in runs} == {"0", "1"}
    for i, (d1, s1, e1) in enumerate(runs):
        for d2, s2, e2 in runs[i + 1:]:
            if d1 == d2:
                assert e1 <= s2 or e2 <= s1, "two jobs overlapped on one GPU"
    events = sorted([(s, 1) for _, s, _ in runs] + [(e, -1) for _, _, e in runs], key=lambda x: (x[0], x[1]))
    running = peak = 0
    for _, step in events:
        running += step
        peak = max(peak, running)
    assert peak == 2
    assert not any((slots).rglob("owner")), "slots left claimed"


def test_exit_status_passes_through_and_sigterm_frees_the_slot(tmp_path):
    slots = tmp_path / "slots"
    assert subprocess.run(slot_cmd(slots, "7", sys.executable, "-c", "raise SystemExit(3)")).returncode == 3
    proc = subprocess.Popen(slot_cmd(slots, "7", sys.executable, "-c", "import time; time.sleep(60)"))
    for _ in range(100):
        if list(slots.rglob("owner")):
            break
        time.sleep(0.05)
    proc.send_signal(signal.SIGTERM)  # how Snakemake cancels a job
    assert proc.wait(timeout=20) != 0
    assert not list(slots.rglob("owner"))


def handles_sigterm(pid: int, timeout_s: float = 30.0) -> None:
    """Wait until process ``pid`` has its own SIGTERM handler (Linux: SigCgt of /proc/pid/status)."""
    status = Path(f"/proc/{pid}/status")
    if not status.exists():
        pytest.skip("no /proc to tell when the job's handler is in place")
    end = time.monotonic() + timeout_s
    while time.monotonic() < end:
        caught = next(line for line in status.read_text().splitlines() if line.startswith("SigCgt:"))
        if int(caught.split()[1], 16) >> (signal.SIGTERM - 1) & 1:
            return
        time.sleep(0.05)
    raise AssertionError(f"process {pid} never caught SIGTERM")


def test_a_job_cancelled_while_it_waits_for_a_slot_stops_waiting(tmp_path):
    """SIGTERM while every GPU is taken: the job ends at once (no slot, no command run);
    the slot someone else holds stays theirs. Its handlers are in place before it claims,
    which also closes the moment between claiming a slot and being able to free it."""
    slots, ran = tmp_path / "slots", tmp_path / "ran"
    held = gpuslot.try_claim(["7"], slots)  # this (live) process owns GPU 7
    proc = subprocess.Popen(slot_cmd(slots, "7", sys.executable, "-c", f"open({str(ran)!r}, 'w')"),
                            stderr=subprocess.PIPE, text=True)
    handles_sigterm(proc.pid)  # started, waiting for the slot
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=20) == 128 + signal.SIGTERM
    assert not ran.exists() and (held.path / "owner").exists()
    held.release()


def test_no_command_is_one_clear_error(tmp_path):
    run = subprocess.run(slot_cmd(tmp_path, "0"), capture_output=True, text=True)
    assert run.returncode == 2 and "no command" in run.stderr and "Traceback" not in run.stderr
