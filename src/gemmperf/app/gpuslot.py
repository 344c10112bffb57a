"""One GPU per job on a node with several: ``gemmperf gpu-slot -- CMD ...``.

Snakemake caps how many GPU jobs run at once (``resources: gpu=1`` per job, the
profile's ``resources: gpu: N`` for the node) but does not say *which* GPU a job may
use. This helper does: it claims one free device of the node's pool, runs CMD with
``CUDA_VISIBLE_DEVICES`` set to it, and frees the device when CMD ends.

The pool, first match wins:
  1. ``GEMMPERF_GPUS`` (comma-separated device ids, e.g. ``0,1``),
  2. ``CUDA_VISIBLE_DEVICES`` when set (SLURM sets it to the job's allocated GPUs),
  3. every device the CUDA driver (or ``nvidia-smi -L``) sees.

A claim is an atomic ``mkdir`` of ``<slots>/<host>/<device>`` (default slots folder
``.snakemake/gpu-slots``, or ``GEMMPERF_GPU_SLOTS``) holding the owner's pid; a slot
whose owner is gone (killed job) is taken over. Standard library only.
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

from ..errors import UserError

DEFAULT_SLOTS = ".snakemake/gpu-slots"
STALE_GRACE_S = 10.0  # a slot folder without an owner file is young, not stale, this long


def gpu_pool(env: dict | None = None) -> list[str]:
    """Device ids this node's jobs may share out, one job each."""
    env = os.environ if env is None else env
    for var in ("GEMMPERF_GPUS", "CUDA_VISIBLE_DEVICES"):
        value = env.get(var)
        if value is not None and value.strip():
            ids = [x.strip() for x in value.split(",") if x.strip()]
            if ids and ids != ["-1"]:
                return ids
    return [str(i) for i in range(device_count())]


def device_count() -> int:
    """Devices the driver sees (0 without a GPU)."""
    try:
        from cuda.bindings import driver as cu

        (err,) = cu.cuInit(0)
        if int(err) == 0:
            err, count = cu.cuDeviceGetCount()
            if int(err) == 0:
                return int(count)
    except Exception:
        pass
    try:
        out = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True, timeout=30)
        return sum(1 for line in out.stdout.splitlines() if line.startswith("GPU "))
    except (OSError, subprocess.SubprocessError):
        return 0


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _stale(slot: Path) -> bool:
    owner = slot / "owner"
    try:
        pid = int(owner.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        try:  # just created by a claimant that has not written its pid yet
            return time.time() - slot.stat().st_mtime > STALE_GRACE_S
        except OSError:
            return False
    return not _alive(pid)


class Slot:
    """A claimed device; ``release()`` (or leaving the ``with`` block) frees it."""

    def __init__(self, device: str, path: Path):
        self.device, self.path = device, path

    def release(self) -> None:
        shutil.rmtree(self.path, ignore_errors=True)

    def __enter__(self) -> Slot:
        return self

    def __exit__(self, *exc) -> None:
        self.release()


def try_claim(pool: list[str], slots: str | Path, pid: int | None = None) -> Slot | None:
    """Claim the first free device of ``pool``, or None when all are taken."""
    base = Path(slots) / socket.gethostname()
    base.mkdir(parents=True, exist_ok=True)
    for device in pool:
        path = base / device
        for _ in range(2):  # a second try after clearing a stale slot
            try:
                path.mkdir()
            except FileExistsError:
                if _stale(path):
                    shutil.rmtree(path, ignore_errors=True)
                    continue
                break
            (path / "owner").write_text(f"{pid or os.getpid()} {time.strftime('%Y-%m-%dT%H:%M:%S')}\n")
            return Slot(device, path)
    return None


def claim(pool: list[str], slots: str | Path, timeout_s: float = 0.0, poll_s: float = 0.2,
          stop=lambda: False) -> Slot | None:
    """Wait until a device of ``pool`` is free and claim it (timeout 0: wait forever);
    None as soon as ``stop()`` is true (the job was cancelled while it waited)."""
    if not pool:
        raise UserError("gpu-slot: no GPU in the pool (set GEMMPERF_GPUS or CUDA_VISIBLE_DEVICES)")
    start = time.monotonic()
    while not stop():
        slot = try_claim(pool, slots)
        if slot is not None:
            return slot
        if timeout_s and time.monotonic() - start > timeout_s:
            raise UserError(f"gpu-slot: no free GPU of {','.join(pool)} after {timeout_s:.0f} s ({slots})")
        time.sleep(poll_s)


def run_on_slot(cmd: list[str], pool: list[str], slots: str | Path, timeout_s: float = 0.0) -> int:
    """Run ``cmd`` on one claimed device; returns its exit status. The signal handlers are
    in place before the slot is claimed, so a job cancelled at any moment frees its slot."""
    slot, child, cancelled = None, None, []

    def forward(signum, _frame):  # Snakemake cancels jobs with SIGTERM
        cancelled.append(signum)
        if child is not None and child.poll() is None:
            child.send_signal(signum)

    old = {s: signal.signal(s, forward) for s in (signal.SIGTERM, signal.SIGINT)}
    try:
        slot = claim(pool, slots, timeout_s, stop=lambda: bool(cancelled))
        if slot is None:
            return 128 + cancelled[0]
        env = {**os.environ, "CUDA_VISIBLE_DEVICES": slot.device}
        print(f"gpu-slot: {' '.join(cmd[:4])} ... on GPU {slot.device} "
              f"(pool {','.join(pool)}, host {socket.gethostname()})", file=sys.stderr, flush=True)
        if cancelled:
            return 128 + cancelled[0]
        try:
            child = subprocess.Popen(cmd, env=env)
        except OSError as err:
            raise UserError(f"gpu-slot: cannot run {cmd[0]!r}: {err}") from None
        if cancelled and child.poll() is None:  # a signal between the check and Popen
            child.send_signal(cancelled[0])
        code = child.wait()
        return 128 - code if code < 0 else code
    finally:
        for s, h in old.items():
            signal.signal(s, h)
        if slot is not None:
            slot.release()


def add_parsers(sub) -> None:
    p = sub.add_parser(
        "gpu-slot",
        help="run a command on one free GPU of this node (sets CUDA_VISIBLE_DEVICES)",
        description=__doc__.split("\n\n")[1],
        epilog="examples:\n"
        "  gemmperf gpu-slot -- gemmperf microbench --out results/h100-sxm5-80gb/microbench.csv\n"
        "  GEMMPERF_GPUS=0,1 gemmperf gpu-slot --timeout 600 -- gemmperf collect --testlist testlists/llm.csv \\\n"
        "      --out llm.0-of-2.csv --shard 0/2",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--gpus", help="device ids to share out (default: GEMMPERF_GPUS, "
                   "CUDA_VISIBLE_DEVICES, else every device seen)")
    p.add_argument("--slots", default=os.environ.get("GEMMPERF_GPU_SLOTS", DEFAULT_SLOTS),
                   help=f"folder of the claims (default {DEFAULT_SLOTS})")
    p.add_argument("--timeout", type=float, default=0.0, help="seconds to wait for a free GPU (0: forever)")
    p.add_argument("cmd", nargs=argparse.REMAINDER, help="the command, after --")
    p.set_defaults(func=cmd_gpu_slot)


def cmd_gpu_slot(a) -> int:
    cmd = a.cmd[1:] if a.cmd and a.cmd[0] == "--" else a.cmd
    if not cmd:
        raise UserError("no command: gemmperf gpu-slot -- CMD ...")
    pool = [x.strip() for x in a.gpus.split(",") if x.strip()] if a.gpus else gpu_pool()
    return run_on_slot(cmd, pool, a.slots, a.timeout)
