"""Stand-ins for the GPU in the sweep tests (no tests here). They are top-level so the
spawn start method (production's) can pickle them; they import nothing heavy, so a
spawned worker starts fast."""

import os
import time


def tasks(n=12):
    return [dict(m=64 * (i + 1), n=64, k=64, family="simt", dtype="fp32", tile_m=64, tile_n=64, tile_k=16,
                 stages=2, cluster_m=1, cluster_n=1, persistent=False, raster="row", mode="full", epilogue="direct",
                 schedule="cooperative", group_m=8, persistent_ctas=0, split_k=1, stream_k=False)
            for i in range(n)]


class Fake:
    """A picklable factory of a fake measure function: crashes, hangs or fails on the
    given m values, sleeps ``delay`` seconds per task, logs every call's m to ``calls``."""

    def __init__(self, crash_at=(), hang_at=(), fail_at=(), delay=0.0, calls=None, reason="too many resources"):
        self.crash_at, self.hang_at, self.fail_at = set(crash_at), set(hang_at), set(fail_at)
        self.delay, self.calls, self.reason = delay, calls, reason

    def __call__(self):
        return self.measure

    def measure(self, task):
        m = int(task["m"])
        if self.calls:
            log_call(self.calls, f"{m}")
        if m in self.crash_at:
            os._exit(3)  # what a poisoned CUDA context does to a process
        if m in self.hang_at:
            time.sleep(60)
        if m in self.fail_at:
            raise RuntimeError(self.reason)
        time.sleep(self.delay)
        return {"status": "ok", "time_us": float(m), "reason": ""}


def failing_factory():
    raise RuntimeError("cuInit failed: CUDA_ERROR_NO_DEVICE\n(second line of a long message)")


def log_call(path, text):
    """Append one line with a single write (safe with several processes)."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    try:
        os.write(fd, f"{text}\n".encode())
    finally:
        os.close(fd)


def sweep_into(journal, n, delay, result_file):
    """Run one sweep of ``n`` fake tasks into ``journal`` (for the lock test): writes
    'ok' or the one-line error to ``result_file``."""
    from gemmperf.bench.sweep import run_sweep
    from gemmperf.errors import UserError

    try:
        run_sweep(tasks(n), journal, Fake(delay=delay), progress=False)
        text = "ok"
    except UserError as err:
        text = str(err)
    with open(result_file, "w") as fh:
        fh.write(text)


def standin(gpu, **settings):
    """The measure stand-in for ``GEMMPERF_MEASURE_STANDIN=test_sweep_fakes:standin``:
    logs each call's configuration key to $GEMMPERF_TEST_CALLS, takes
    $GEMMPERF_TEST_DELAY seconds, returns an ok row."""
    calls, delay = os.environ["GEMMPERF_TEST_CALLS"], float(os.environ.get("GEMMPERF_TEST_DELAY", "0"))

    from gemmperf.bench.journal import task_key

    def measure(task):
        log_call(calls, "|".join(task_key(task)))
        time.sleep(delay)
        return {"status": "ok", "time_us": 1.0 + int(task["m"]) * int(task["n"]) * int(task["k"]) / 1e9,
                "reason": "", "out_dtype": task["dtype"], "acc_dtype": "fp32"}

    return measure
