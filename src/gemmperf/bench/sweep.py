"""Crash-safe sweeps: measure many configurations, one row each, appended as measured.

- Rows are appended to a CSV and flushed to disk one by one, so an interrupted sweep
  loses nothing; rerunning the same sweep skips every configuration already recorded.
- Measurement happens in a worker process. A fault that poisons the CUDA context (an
  illegal address, a hang) kills only the worker: the configuration is recorded with
  status ``launch_error`` or ``timeout`` and its reason, a fresh worker starts, and the
  sweep goes on.
- Workers are spawned (not forked) so that the parent may have touched CUDA.

Standard library only (the worker's measure function brings numpy and cuda-python); the
columns and statuses of a row are ``tables.ROW_COLUMNS`` and ``tables.STATUSES``.
"""

from __future__ import annotations

import csv
import multiprocessing as mp
import os
import sys
import time
from collections.abc import Callable, Iterable
from pathlib import Path

from ..tables import KEY_COLUMNS, ROW_COLUMNS, STATUSES


def task_key(row: dict) -> tuple[str, ...]:
    """The identity of a row or task as strings (CSV round trip safe)."""
    return tuple(_norm(row.get(c, "")) for c in KEY_COLUMNS)


def _norm(value) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    text = str(value)
    return text.lower() if text in ("True", "False") else text


def done_keys(path: Path) -> set[tuple[str, ...]]:
    """Keys of the rows already recorded (any status). A torn last line is ignored."""
    if not path.is_file():
        return set()
    keys = set()
    with path.open(newline="") as fh:
        for row in csv.DictReader(fh):
            if row.get("status") in STATUSES:
                keys.add(task_key(row))
    return keys


class RowWriter:
    """Appends rows to a CSV, writing the header once, flushing each row to disk."""

    def __init__(self, path: Path):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        _drop_torn_tail(self.path)
        new = not self.path.is_file() or self.path.stat().st_size == 0
        self.fh = self.path.open("a", newline="")
        self.writer = csv.DictWriter(self.fh, fieldnames=ROW_COLUMNS, extrasaction="ignore")
        if new:
            self.writer.writeheader()
            self._sync()

    def write(self, row: dict) -> None:
        self.writer.writerow({c: _norm(row.get(c, "")) for c in ROW_COLUMNS})
        self._sync()

    def _sync(self) -> None:
        self.fh.flush()
        os.fsync(self.fh.fileno())

    def close(self) -> None:
        self.fh.close()


def _drop_torn_tail(path: Path) -> None:
    """A crash mid-write can leave a last line without its newline: cut it off."""
    if not path.is_file() or path.stat().st_size == 0:
        return
    data = path.read_bytes()
    if not data.endswith(b"\n"):
        path.write_bytes(data[: data.rfind(b"\n") + 1])


# ------------------------------------------------------------------ worker


def _worker_main(conn, factory: Callable[[], Callable[[dict], dict]]) -> None:
    measure = factory()
    while True:
        task = conn.recv()
        if task is None:
            return
        try:
            result = measure(task)
        except Exception as err:  # a bad configuration must not end the sweep
            result = {"status": "launch_error", "reason": f"{type(err).__name__}: {err}"[:500]}
        conn.send(result)


class Worker:
    def __init__(self, factory, start_method: str = "spawn"):
        ctx = mp.get_context(start_method)
        self.conn, child = ctx.Pipe()
        self.proc = ctx.Process(target=_worker_main, args=(child, factory), daemon=True)
        self.proc.start()
        child.close()

    def run(self, task: dict, timeout_s: float) -> dict:
        """Measure one task; a dead or hung worker yields a launch_error/timeout row."""
        self.conn.send(task)
        if self.conn.poll(timeout_s):
            try:
                return self.conn.recv()
            except EOFError:  # the worker died mid-task
                self.proc.join(5)
                return {
                    "status": "launch_error",
                    "reason": f"worker died (exit code {self.proc.exitcode}), e.g. an illegal address; worker restarted",
                }
        self.kill()
        return {"status": "timeout", "reason": f"no result within {timeout_s:.0f} s; worker restarted"}

    def alive(self) -> bool:
        return self.proc.is_alive()

    def kill(self) -> None:
        if self.proc.is_alive():
            self.proc.kill()
        self.proc.join(5)

    def close(self) -> None:
        if self.proc.is_alive():
            try:
                self.conn.send(None)
                self.proc.join(10)
            except (BrokenPipeError, OSError):
                pass
        self.kill()


# ------------------------------------------------------------------ sweep


class Progress:
    """One status line: done / total, rate, time left."""

    def __init__(self, total: int, stream=sys.stderr, every_s: float = 1.0):
        self.total, self.done, self.stream, self.every_s = total, 0, stream, every_s
        self.start = self.last = time.monotonic()
        self.tty = hasattr(stream, "isatty") and stream.isatty()
        self.counts: dict[str, int] = {}

    def step(self, status: str) -> None:
        self.done += 1
        self.counts[status] = self.counts.get(status, 0) + 1
        now = time.monotonic()
        if now - self.last >= self.every_s or self.done == self.total:
            self.last = now
            self.stream.write(("\r" if self.tty else "") + self.line() + ("" if self.tty else "\n"))
            self.stream.flush()

    def line(self) -> str:
        elapsed = max(time.monotonic() - self.start, 1e-9)
        rate = self.done / elapsed
        left = (self.total - self.done) / rate if rate > 0 else float("inf")
        width = 30
        filled = int(width * self.done / max(self.total, 1))
        counts = " ".join(f"{k}={v}" for k, v in sorted(self.counts.items()))
        return (
            f"[{'#' * filled}{'.' * (width - filled)}] {self.done}/{self.total} "
            f"{rate:.1f} cfg/s, {left:.0f} s left  {counts}"
        )

    def close(self) -> None:
        if self.tty:
            self.stream.write("\n")


def run_sweep(
    tasks: Iterable[dict],
    out: str | Path,
    factory: Callable[[], Callable[[dict], dict]],
    *,
    timeout_s: float = 120.0,
    context: dict | None = None,
    progress: bool = True,
    start_method: str = "spawn",
) -> dict[str, int]:
    """Measure every task not already in ``out``; return counts by status.

    ``factory`` runs in the worker process and returns ``measure(task) -> dict`` (the
    row's measured fields); with the default "spawn" start it must be picklable. ``context`` fields (GPU identity, ...) go in every row.
    """
    out = Path(out)
    # one math-library thread per worker: idle BLAS threads spin and slow down other
    # sweeps sharing the node (one per GPU); the host reference is tiny anyway
    for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ.setdefault(var, "1")
    seen = done_keys(out)
    pending = [t for t in tasks if task_key(t) not in seen]
    writer = RowWriter(out)
    bar = Progress(len(pending), stream=sys.stderr if progress else open(os.devnull, "w"))
    worker = Worker(factory, start_method) if pending else None
    try:
        for task in pending:
            if not worker.alive():
                worker = Worker(factory, start_method)
            result = worker.run(task, timeout_s)
            row = {**(context or {}), **task, **result, "timestamp": time.strftime("%Y-%m-%dT%H:%M:%S")}
            writer.write(row)
            bar.step(row.get("status", "?"))
    finally:
        if worker is not None:
            worker.close()
        writer.close()
        bar.close()
    return dict(bar.counts)
