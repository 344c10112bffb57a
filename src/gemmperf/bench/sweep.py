"""Crash-safe sweeps: measure many configurations, one row each, appended as measured.

- Rows go to the sweep's journal (``bench.journal``) one by one, flushed to disk, so an
  interrupted sweep loses nothing; rerunning the same sweep skips every configuration
  the journal already holds (``retry_failed``: except launch errors and timeouts).
- Measurement happens in a worker process. A fault that poisons the CUDA context (an
  illegal address, a hang) kills only the worker: the configuration is recorded with
  status ``launch_error`` or ``timeout`` and its reason, a fresh worker starts, and the
  sweep goes on. A worker that cannot start (no CUDA driver, a bad stand-in) stops the
  sweep with one line (``WorkerStartError``).
- Workers are spawned (not forked) so that the parent may have touched CUDA; the
  factory must therefore be a picklable top-level callable (or a ``partial`` of one).

Standard library only (the worker's measure function brings numpy and cuda-python); the
columns and statuses of a row are ``tables.ROW_COLUMNS`` and ``tables.STATUSES``.
"""

from __future__ import annotations

import math
import multiprocessing as mp
import os
import signal
import sys
import time
from collections.abc import Callable, Iterable
from pathlib import Path

from ..errors import UserError
from ..progress import bar
from ..tables import STATUSES
from .journal import Journal, done_keys, task_key

START_TIMEOUT_S = 300.0  # a worker's start-up (imports, CUDA context) must end within this


class WorkerStartError(UserError):
    """The measuring worker could not start: the sweep cannot go on."""


# ------------------------------------------------------------------ worker


def _one_line(err: BaseException) -> str:
    text = f"{type(err).__name__}: {err}".strip()
    return (text.splitlines() or [text])[0][:300]


def _worker_main(conn, factory: Callable[[], Callable[[dict], dict]]) -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's: it stops the worker
    try:
        measure = factory()
    except BaseException as err:  # reported to the parent as one line, never a traceback
        conn.send(("failed", _one_line(err)))
        return
    conn.send(("ready", None))
    while True:
        try:
            task = conn.recv()
        except (EOFError, OSError):  # the parent is gone
            return
        if task is None:
            return
        try:
            result = measure(task)
        except Exception as err:  # a bad configuration must not end the sweep
            result = {"status": "launch_error", "reason": f"{type(err).__name__}: {err}"}
        try:
            conn.send(result)
        except (BrokenPipeError, OSError):
            return


class Worker:
    def __init__(self, factory, start_method: str = "spawn", start_timeout_s: float = START_TIMEOUT_S):
        ctx = mp.get_context(start_method)
        self.conn, child = ctx.Pipe()
        self.proc = ctx.Process(target=_worker_main, args=(child, factory), daemon=True)
        self.proc.start()
        child.close()
        self._started(start_timeout_s)

    def _started(self, timeout_s: float) -> None:
        """Wait for the worker's ready message; a failed start-up stops the sweep."""
        why = f"no answer within {timeout_s:.0f} s"
        if self.conn.poll(timeout_s):
            try:
                state, message = self.conn.recv()
                if state == "ready":
                    return
                why = message
            except (EOFError, OSError):
                self.proc.join(5)
                why = f"it exited with code {self.proc.exitcode}"
        self.kill()
        raise WorkerStartError(f"the measuring worker could not start: {why}")

    def run(self, task: dict, timeout_s: float) -> dict:
        """Measure one task; a dead or hung worker yields a launch_error/timeout row."""
        try:
            self.conn.send(task)
        except (BrokenPipeError, OSError):
            return self._died()
        if self.conn.poll(timeout_s):
            try:
                return self.conn.recv()
            except (EOFError, OSError):  # the worker died mid-task
                return self._died()
        self.kill()
        return {"status": "timeout", "reason": f"no result within {timeout_s:.0f} s; worker restarted"}

    def _died(self) -> dict:
        self.proc.join(5)
        return {
            "status": "launch_error",
            "reason": f"worker died (exit code {self.proc.exitcode}), e.g. an illegal address; worker restarted",
        }

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


def pending_tasks(tasks: Iterable[dict], journal: str | Path, *, retry_failed: bool = False,
                  context: dict | None = None, limit: int = 0) -> list[dict]:
    """The tasks the journal does not hold yet (each key once, in order; ``limit``: at most)."""
    done = done_keys(journal, retry_failed, context)
    pending, seen = [], set()
    for task in tasks:
        key = task_key(task)
        if key not in done and key not in seen:
            seen.add(key)
            pending.append(task)
    return pending[:limit] if limit else pending


def run_sweep(
    tasks: Iterable[dict],
    journal: str | Path,
    factory: Callable[[], Callable[[dict], dict]],
    *,
    timeout_s: float = 120.0,
    context: dict | None = None,
    progress: bool = True,
    start_method: str = "spawn",
    retry_failed: bool = False,
    limit: int = 0,
    prepare: Callable[[list[dict]], None] | None = None,
) -> dict[str, int]:
    """Measure every task the journal does not hold yet; return counts by status.

    ``factory`` runs in the worker process and returns ``measure(task) -> dict`` (the
    row's measured fields); it must be picklable. ``context`` fields (GPU identity, ...)
    go in every row, and a journal row measured under another context is measured
    again. ``prepare(pending)`` runs before the first worker starts (the kernels'
    compile). The journal is locked for the whole sweep.
    """
    # one math-library thread per worker: idle BLAS threads spin and slow down other
    # sweeps sharing the node (one per GPU); the host reference is tiny anyway
    for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ.setdefault(var, "1")
    tasks = list(tasks)
    counts: dict[str, int] = {}
    start = time.monotonic()
    with Journal(journal) as out:
        pending = pending_tasks(tasks, journal, retry_failed=retry_failed, context=context, limit=limit)
        if pending and prepare is not None:
            prepare(pending)
        _measure_all(pending, out, factory, counts, timeout_s=timeout_s, context=context,
                     progress=progress, start_method=start_method)
    if progress:
        told = ", ".join(f"{k} {v}" for k, v in sorted(counts.items())) or "nothing to do"
        print(f"{journal}: measured {len(pending)} now ({told}) in {time.monotonic() - start:.0f} s; "
              f"{len(tasks) - len(pending)} of {len(tasks)} were already measured", file=sys.stderr, flush=True)
    return counts


def checked(result: dict) -> dict:
    """A measure function's result, or a launch_error saying why it is not a row: an
    unknown status, or ``ok`` without a finite time_us > 0."""
    status = result.get("status")
    if status not in STATUSES:
        return {"status": "launch_error", "reason": f"the measure function returned status {status!r}"}
    if status == "ok":
        try:
            t = float(result.get("time_us"))
        except (TypeError, ValueError):
            t = math.nan
        if not (math.isfinite(t) and t > 0):
            return {"status": "launch_error", "reason": f"the measure function returned ok with time_us {result.get('time_us')!r}"}
    return result


def _measure_all(pending, out: Journal, factory, counts: dict, *, timeout_s, context, progress, start_method):
    worker = Worker(factory, start_method) if pending else None
    shown = bar(total=len(pending), desc=f"measuring {out.path.name}", unit="cfg") if progress else None
    try:
        for task in pending:
            if not worker.alive():
                worker = Worker(factory, start_method)
            result = checked(worker.run(task, timeout_s))
            row = {**(context or {}), **task, **result, "timestamp": time.strftime("%Y-%m-%dT%H:%M:%S")}
            out.append(row)
            status = str(row.get("status", "?"))
            counts[status] = counts.get(status, 0) + 1
            if shown is not None:
                shown.update()
                shown.set_postfix_str(" ".join(f"{k}={v}" for k, v in sorted(counts.items())))
    finally:
        if worker is not None:
            worker.close()
        if shown is not None:
            shown.close()
