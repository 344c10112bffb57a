"""Progress bars for long work: sweeps, the NVRTC compile of a sweep, fits, accuracy
folds, the optimizer over a testlist.

One place decides how progress looks: tqdm on stderr, shown when stderr is a terminal
(``disable=None``) so logs and pipes stay clean; ``GEMMPERF_PROGRESS=1`` forces it on
(e.g. to follow a Snakemake job's log), ``GEMMPERF_PROGRESS=0`` off. tqdm is a
dependency of the project; the lent GPU machine has only numpy and cuda-python, so
there, without tqdm, the bar is silently absent and the work itself is unchanged.
"""

from __future__ import annotations

import os
import sys


def _disable() -> bool | None:
    flag = os.environ.get("GEMMPERF_PROGRESS", "").strip()
    if flag == "1":
        return False
    if flag == "0":
        return True
    return None  # tqdm: on when stderr is a terminal


class _Silent:
    """What ``bar`` returns without tqdm: the same calls, no output."""

    def __init__(self, iterable=None, **_):
        self.iterable = iterable

    def __iter__(self):
        return iter(self.iterable if self.iterable is not None else ())

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def update(self, n: int = 1) -> None:
        pass

    def set_postfix_str(self, text: str = "", refresh: bool = True) -> None:
        pass

    def close(self) -> None:
        pass


def bar(iterable=None, *, total: int | None = None, desc: str | None = None, unit: str = "it"):
    """A progress bar over ``iterable`` (or updated by hand with ``update``): a tqdm
    object, or a silent stand-in where tqdm is not installed."""
    try:
        from tqdm import tqdm  # lazy: the GPU machine may not have it
    except ImportError:
        return _Silent(iterable)
    return tqdm(iterable, total=total, desc=desc, unit=unit, file=sys.stderr,
                disable=_disable(), dynamic_ncols=True, leave=False)
