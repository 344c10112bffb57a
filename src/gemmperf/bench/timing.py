"""Kernel timing with CUDA events, with nvbench-style noise control.

A *repeat* is one batch of launches between two events; its time per launch is the
batch time over the launch count, so launch gaps are amortized the same way for every
kernel. Repeats go on until the relative spread of the last repeats falls under a
threshold or a time cap is hit; which of the two ended the measurement is recorded.

Inputs are rotated by the caller's ``launch(i)``: launch i uses buffer set i mod n, so
A and B are not served from L2 unless the run asks for warm L2.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass

from cuda.bindings import driver as cu

from ..kernels.driver import check


@dataclass
class Timing:
    time_us: float  # median time per launch
    time_us_min: float
    time_us_max: float
    spread: float  # (max - min) / median over the repeats kept
    repeats: int
    launches_per_repeat: int
    converged: bool  # True: spread under the threshold; False: the time cap ended it

    def as_row(self) -> dict:
        return dict(self.__dict__)


def time_kernel(
    launch: Callable[[int], None],
    stream,
    *,
    rel_spread: float = 0.02,
    max_seconds: float = 2.0,
    min_repeats: int = 5,
    window: int = 5,
    target_batch_us: float = 2000.0,
    max_batch: int = 1000,
    warmup_us: float = 5000.0,
) -> Timing:
    """Time ``launch`` (one kernel launch on ``stream``; argument: launch index).

    The batch size is chosen so one repeat takes about ``target_batch_us``.
    """
    start_evt = check(cu.cuEventCreate(0))
    stop_evt = check(cu.cuEventCreate(0))
    counter = 0

    def batch(n: int) -> float:
        nonlocal counter
        check(cu.cuEventRecord(start_evt, stream))
        for _ in range(n):
            launch(counter)
            counter += 1
        check(cu.cuEventRecord(stop_evt, stream))
        check(cu.cuEventSynchronize(stop_evt))
        return check(cu.cuEventElapsedTime(start_evt, stop_evt)) * 1000.0 / n

    try:
        first = batch(1)  # also surfaces launch errors before the timed loop
        n_warm = max(1, min(max_batch, int(warmup_us / max(first, 1e-3))))
        per_launch = batch(n_warm)
        n = max(1, min(max_batch, int(target_batch_us / max(per_launch, 1e-3))))
        samples: list[float] = []
        t_end = time.monotonic() + max_seconds
        converged = False
        while True:
            samples.append(batch(n))
            if len(samples) >= min_repeats:
                recent = samples[-window:]
                med = statistics.median(recent)
                if (max(recent) - min(recent)) / med <= rel_spread:
                    converged = True
                    break
            if time.monotonic() > t_end and len(samples) >= 3:
                break
        kept = samples[-window:] if converged else samples
        med = statistics.median(kept)
        return Timing(
            time_us=med,
            time_us_min=min(kept),
            time_us_max=max(kept),
            spread=(max(kept) - min(kept)) / med,
            repeats=len(samples),
            launches_per_repeat=n,
            converged=converged,
        )
    finally:
        cu.cuEventDestroy(start_evt)
        cu.cuEventDestroy(stop_evt)
