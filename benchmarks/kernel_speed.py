"""Kernel speed next to cuBLAS on the same GPU, in the same process (GPU machine).

For each shape (default: 4096^3, 8192^3, testlists/dsv3.csv and the testlists/llm.csv
shapes with M >= 128; ``--decode``: the decode testlist and the llm shapes with M <= 64)
in bf16, or with ``--dtype fp8`` in fp8 e4m3 (per-tensor scales, bf16 out; default
shapes the squares and dsv3):

1. cuBLAS first (cool) timing: after an idle pause, a short block of
   ``torch.matmul(A, B.T)`` launches (fp8: ``torch._scaled_mm(A, B.T, scale_a,
   scale_b, out_dtype=bf16)``), the way a one-off benchmark times it.
2. Selection: every candidate configuration of each family gets a short block (ws-hopper's
   split-K and stream-K candidates only on shapes whose tiles do not fill the SMs:
   ``WsHopper.shares_k_usefully``); the fastest is verified on the shape (sampled elements against float64, poisoned output,
   guard after C); a wrong one is printed as WRONG, never counted, and the next fastest
   is verified instead.
3. Interleaved rounds: the verified ws-hopper winner and cuBLAS alternate (ours first in
   even rounds, cuBLAS first in odd ones), each block preceded by the same heavy warm-up
   (a few hundred ms of back-to-back launches of the GEMM about to be timed) and timed
   over the same number of launches on both sides; the figures are medians over rounds.

A block is timed with one pair of CUDA events around its launches (ms per launch =
elapsed / launches); the SM clock, power, temperature, performance state and active
clock-event reasons are read through NVML (never set) while the block's last launches
still run. A figure marked ``*`` was launch-bound: issuing one launch cost the CPU at
least 90 % of the GPU time of one launch, so the GPU may have idled between launches.

Inputs are fresh uniform random values in [-1, 1) (never zeros). torch is optional:
without it there is no cuBLAS figure. ``--max-minutes`` bounds the run: shapes are run
squares first, then the lists in turn, each in an order spread over its length, and the
shapes that do not fit are skipped and named.
"""

from __future__ import annotations

import argparse
import csv
import ctypes
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))

from gemmperf.errors import UserError  # noqa: E402
from gemmperf.kernels import build, check_legal, get_family  # noqa: E402
from gemmperf.kernels.builder import build_all  # noqa: E402
from gemmperf.problem import KernelConfig as KC  # noqa: E402

def _hop(tm, tn, stages, cluster=(1, 1), persistent=True, raster="grouped", **kw) -> KC:
    return KC("ws-hopper", "bf16", tm, tn, 64, stages, cluster[0], cluster[1], persistent, raster, **kw)


def _split(tm, tn, stages, split_k, **kw) -> KC:
    return KC("ws-hopper", "bf16", tm, tn, 64, stages, split_k=split_k, epilogue="tma", **kw)


# ws-hopper: the large tiles with clusters and the TMA-store epilogue that win on big
# shapes (benchmarks/kernel_ablation.py), smaller tiles and ping-pong for small M or N,
# and the direct epilogue; every persistent one is also tried on the balanced grid
# (balanced_grid) of each shape.
CANDIDATES = {
    "ws-hopper": [
        _hop(128, 256, 4, (2, 1), epilogue="tma"),
        _hop(128, 256, 3, (2, 1), epilogue="tma"),
        _hop(256, 128, 4, (1, 2), epilogue="tma"),
        _hop(128, 256, 4, epilogue="tma"),
        _hop(128, 256, 4),
        _hop(256, 128, 4),
        _hop(128, 128, 6, (2, 1), epilogue="tma"),
        _hop(128, 128, 5, epilogue="tma", schedule="pingpong"),
        _hop(128, 128, 6),
        _hop(128, 64, 8),
        _hop(64, 256, 4),
        _hop(128, 256, 4, (2, 1), False, "row", epilogue="tma"),
        # skinny C (decode): small tiles, K split among CTAs or shared by stream-K (tried
        # only where the tiles do not fill the SMs)
        _hop(64, 128, 6, epilogue="tma"),
        _hop(64, 256, 4, epilogue="tma"),
        _hop(64, 64, 8, epilogue="tma"),
        *(_split(tm, tn, st, s) for tm, tn, st in ((64, 64, 8), (64, 128, 6), (64, 256, 4), (128, 128, 4))
          for s in (2, 3, 4, 6, 8, 16)),
        *(_hop(tm, tn, st, epilogue="tma", stream_k=True) for tm, tn, st in ((64, 128, 6), (128, 256, 4))),
    ],
    "ws-ampere": [
        KC("ws-ampere", "bf16", 128, 128, 64, 3),
        KC("ws-ampere", "bf16", 64, 128, 32, 3),
        KC("ws-ampere", "bf16", 128, 64, 32, 4),
    ],
    "simt": [
        KC("simt", "fp32", 128, 128, 8, 2),
        KC("simt", "fp32", 64, 64, 16, 1),
    ],
}

SQUARES = ((4096, 4096, 4096), (8192, 8192, 8192))
LLM_MIN_M = 128
DECODE_MAX_M = 64
# fp8 (e4m3): the same candidates in 1-byte types (tile K 128); cuBLAS's side is
# torch._scaled_mm with per-tensor scales, as the runner's (launch.FP8_SCALES)
DTYPES = ("bf16", "fp8")


def candidates(family: str, dtype: str) -> list[KC]:
    """The family's candidates in ``dtype``: ws-hopper's in fp8 have tile K 128; the
    other families have no fp8 kernel."""
    if dtype == "bf16":
        return CANDIDATES[family]
    if family != "ws-hopper":
        return []
    return [c.replace(dtype=dtype, tile_k=get_family(family).tile_k_for(dtype)) for c in CANDIDATES[family]]
COOL_MS = 20.0  # the cool cuBLAS block: short, so the power controller has not reacted yet
SELECT_WARM_MS, SELECT_MS = 20.0, 30.0  # per candidate in the selection phase
LAUNCH_PROBE = 16  # warm-up launches whose CPU issue time is measured
LAUNCH_BOUND = 0.9  # CPU issue time / GPU time per launch at or above which a figure is marked *
MAX_LAUNCHES = 100_000
GRAPH_BELOW_MS = 0.1  # kernels shorter than this are timed in CUDA graphs (Graphed), both sides
GRAPH_MS, GRAPH_MAX = 2.0, 256  # GPU time of one graph, most kernels in one
SHAPE_OVERHEAD_S = 0.4  # per shape beside the timed blocks: allocation, fills, verification
REASONS = {  # NVML clock-event reason bits (nvmlClocksEventReason*)
    0x1: "idle", 0x2: "app-clocks", 0x4: "sw-power-cap", 0x8: "hw-slowdown", 0x10: "sync-boost",
    0x20: "sw-thermal", 0x40: "hw-thermal", 0x80: "power-brake", 0x100: "display-clocks",
}


# ------------------------------------------------------------------------------ shapes


def parse_shape(text: str) -> tuple[int, int, int]:
    """'MxNxK' -> (M, N, K), each a positive integer."""
    parts = text.lower().split("x")
    if len(parts) != 3 or not all(p.isdigit() and int(p) > 0 for p in parts):
        raise UserError(f"shape {text!r}: expected MxNxK with positive integers, e.g. 4096x4096x4096")
    return tuple(int(p) for p in parts)


def read_testlist(path: Path, min_m: int = 1, max_m: int | None = None) -> list[tuple[int, int, int]]:
    """The (m, n, k) rows of a testlist CSV with min_m <= m (<= max_m); '#' lines are
    comments."""
    out = []
    with path.open() as fh:
        numbered = [(i, t) for i, t in enumerate(fh, start=1) if t.strip() and not t.lstrip().startswith("#")]
    for (line, _), row in zip(numbered[1:], csv.DictReader(t for _, t in numbered)):
        shape = []
        for col in ("m", "n", "k"):
            raw = (row.get(col) or "").strip()
            if not raw.isdigit() or int(raw) < 1:
                raise UserError(f"{path}:{line}: column {col} = {raw!r}: not a positive integer")
            shape.append(int(raw))
        if shape[0] >= min_m and (max_m is None or shape[0] <= max_m):
            out.append(tuple(shape))
    return out


def shape_lists(shapes: list[str] | None, dsv3: bool = True, llm: bool = True, decode: bool = False,
                squares: bool = True) -> dict[str, list]:
    """The named shape lists to run: the --shapes given, or the squares, dsv3 and llm
    (M >= 128); ``decode``: the decode testlist and the llm shapes with M <= 64."""
    if shapes:
        return {"shapes": [parse_shape(s) for s in shapes]}
    lists = {"square": list(SQUARES)} if squares else {}
    if dsv3:
        lists["dsv3"] = read_testlist(ROOT / "testlists" / "dsv3.csv")
    if llm:
        lists["llm"] = read_testlist(ROOT / "testlists" / "llm.csv", min_m=LLM_MIN_M)
    if decode:
        lists["decode"] = read_testlist(ROOT / "testlists" / "decode.csv", max_m=DECODE_MAX_M)
        lists["llm-decode"] = read_testlist(ROOT / "testlists" / "llm.csv", max_m=DECODE_MAX_M)
    return lists


def tags_of(lists: dict[str, list]) -> dict[tuple, list[str]]:
    """Each distinct shape (table order: list by list) -> the lists it belongs to."""
    tags: dict[tuple, list[str]] = {}
    for name, shapes in lists.items():
        for s in shapes:
            if name not in tags.setdefault(s, []):
                tags[s].append(name)
    return tags


def spread_order(count: int) -> list[int]:
    """0..count-1 in van der Corput order (0, 1/2, 1/4, 3/4, ... of the range): every prefix
    is spread over the whole range."""
    bits = max(1, count.bit_length())  # 2**bits > count: the grid hits every index
    order = {}
    for j in range(2**bits):
        order.setdefault(int(format(j, f"0{bits}b")[::-1], 2) * count >> bits, None)
    return list(order)


def run_order(lists: dict[str, list]) -> list[tuple]:
    """The first list in full, then the other lists in turn, each in spread order, no repeats;
    a run cut short still samples every list across its length."""
    names = list(lists)
    order = list(lists[names[0]])
    queues = [[lists[n][i] for i in spread_order(len(lists[n]))] for n in names[1:]]
    for i in range(max((len(q) for q in queues), default=0)):
        order += [q[i] for q in queues if i < len(q)]
    return list(dict.fromkeys(order))


# ------------------------------------------------------------------------------ budget


def launches_for(ms: float, per_launch_ms: float, floor: int) -> int:
    """Launches filling about ``ms`` milliseconds, at least ``floor``."""
    return int(min(MAX_LAUNCHES, max(floor, round(ms / max(per_launch_ms, 1e-6)))))


def shape_seconds(rounds: int, warmup_ms: float, block_ms: float, candidates: int, cool_pause_s: float) -> float:
    """Estimated wall time of one shape (timed blocks plus fixed overhead)."""
    blocks_ms = COOL_MS + candidates * (SELECT_WARM_MS + SELECT_MS) + rounds * 2 * (warmup_ms + block_ms)
    return cool_pause_s + blocks_ms / 1e3 + SHAPE_OVERHEAD_S


def fit_budget(order: list, per_shape_s: float, left_s: float) -> tuple[list, list]:
    """(shapes that fit in ``left_s`` seconds, shapes skipped), keeping ``order``."""
    fit = max(0, int(left_s // per_shape_s)) if per_shape_s > 0 else len(order)
    return order[:fit], order[fit:]


# ------------------------------------------------------------------------------ clocks and power


def decode_reasons(bits: int) -> list[str]:
    """Names of the active NVML clock-event reason bits."""
    names = [name for bit, name in REASONS.items() if bits & bit]
    rest = bits & ~sum(REASONS)
    return names + ([f"0x{rest:x}"] if rest else [])


def _number(text: str):
    text = text.strip()
    try:
        return float(text)
    except ValueError:
        return None if text.startswith("[") or not text else text


def parse_smi(line: str) -> dict:
    """One line of ``nvidia-smi --query-gpu=clocks.sm,power.draw,temperature.gpu,pstate
    --format=csv,noheader,nounits`` -> the fields Telemetry.read returns."""
    vals = [_number(v) for v in line.split(",")]
    if len(vals) != 4:
        return {}
    return {"sm_mhz": vals[0], "power_w": vals[1], "temp_c": vals[2],
            "pstate": vals[3] if isinstance(vals[3], str) else None, "reasons": None}


class Telemetry:
    """SM clock, power, temperature, performance state and clock-event reasons of one GPU,
    read (never set) through NVML (ctypes on libnvidia-ml.so.1), else nvidia-smi, else not."""

    def __init__(self, index: int = 0, pci_bus_id: str | None = None):
        self.index, self.lib, self.handle, self.source = index, None, None, "none"
        try:
            lib = ctypes.CDLL("libnvidia-ml.so.1")
            if lib.nvmlInit_v2() != 0:
                raise OSError("nvmlInit_v2 failed")
            handle = ctypes.c_void_p()
            rc = lib.nvmlDeviceGetHandleByPciBusId_v2(pci_bus_id.encode(), ctypes.byref(handle)) if pci_bus_id else 1
            if rc != 0:
                rc = lib.nvmlDeviceGetHandleByIndex_v2(ctypes.c_uint(index), ctypes.byref(handle))
            if rc != 0:
                raise OSError(f"no NVML handle for GPU {index}")
            self.lib, self.handle, self.source = lib, handle, "nvml"
        except (OSError, AttributeError):
            if shutil.which("nvidia-smi"):
                self.source = "nvidia-smi"

    def _get(self, name: str, *args, ctype=ctypes.c_uint):
        fn = getattr(self.lib, name, None)
        out = ctype()
        if fn is None or fn(self.handle, *args, ctypes.byref(out)) != 0:
            return None
        return out.value

    def _text(self, name: str, *lead) -> str | None:
        fn = getattr(self.lib, name, None)
        buf = ctypes.create_string_buffer(96)
        if fn is None or fn(*lead, buf, ctypes.c_uint(96)) != 0:
            return None
        return buf.value.decode(errors="replace")

    def read(self) -> dict:
        """{sm_mhz, power_w, temp_c, pstate, reasons} now (None where unknown)."""
        if self.source == "nvml":
            reasons = self._get("nvmlDeviceGetCurrentClocksEventReasons", ctype=ctypes.c_ulonglong)
            if reasons is None:
                reasons = self._get("nvmlDeviceGetCurrentClocksThrottleReasons", ctype=ctypes.c_ulonglong)
            mw = self._get("nvmlDeviceGetPowerUsage")
            pstate = self._get("nvmlDeviceGetPerformanceState", ctype=ctypes.c_int)
            return {"sm_mhz": self._get("nvmlDeviceGetClockInfo", ctypes.c_int(1)),  # NVML_CLOCK_SM
                    "power_w": None if mw is None else mw / 1000,
                    "temp_c": self._get("nvmlDeviceGetTemperature", ctypes.c_int(0)),  # NVML_TEMPERATURE_GPU
                    "pstate": f"P{pstate}" if pstate is not None and 0 <= pstate < 16 else None,
                    "reasons": None if reasons is None else decode_reasons(reasons)}
        if self.source == "nvidia-smi":
            q = ["nvidia-smi", f"--id={self.index}", "--query-gpu=clocks.sm,power.draw,temperature.gpu,pstate",
                 "--format=csv,noheader,nounits"]
            try:
                out = subprocess.run(q, capture_output=True, text=True, timeout=10).stdout
                return parse_smi(out.strip().splitlines()[0]) if out.strip() else {}
            except (OSError, subprocess.SubprocessError):
                return {}
        return {}

    def describe(self) -> str:
        """One line: name, driver, maximum SM clock, memory clock, power limit (as found)."""
        if self.source == "nvml":
            mw = self._get("nvmlDeviceGetEnforcedPowerLimit")
            fields = [self._text("nvmlDeviceGetName", self.handle), self._text("nvmlSystemGetDriverVersion"),
                      f"SM max {self._get('nvmlDeviceGetMaxClockInfo', ctypes.c_int(1))} MHz",
                      f"memory {self._get('nvmlDeviceGetClockInfo', ctypes.c_int(2))} MHz",
                      f"power limit {mw / 1000:.0f} W" if mw else "power limit unknown"]
            return ", ".join(str(f) for f in fields)
        if self.source == "nvidia-smi":
            q = "name,driver_version,clocks.max.sm,clocks.mem,power.limit"
            try:
                return subprocess.run(["nvidia-smi", f"--id={self.index}", f"--query-gpu={q}", "--format=csv,noheader"],
                                      capture_output=True, text=True, timeout=20).stdout.strip()
            except (OSError, subprocess.SubprocessError) as err:
                return f"nvidia-smi failed: {err}"
        return "no NVML and no nvidia-smi: clocks and power unknown"


# ------------------------------------------------------------------------------ timing


class BlockTimer:
    """Times blocks of back-to-back launches on one stream with one pair of CUDA events."""

    def __init__(self, stream: int, telemetry: Telemetry):
        from cuda.bindings import driver as cu

        from gemmperf.kernels.driver import check

        self.cu, self.check, self.stream, self.telemetry = cu, check, stream, telemetry
        flags = cu.CUevent_flags.CU_EVENT_DEFAULT
        self.start, self.mark, self.end = (check(cu.cuEventCreate(flags)) for _ in range(3))

    def run(self, launch, n_warm: int, n: int, read: bool = True) -> dict:
        """``n_warm`` untimed launches, then ``n`` timed ones: ms per launch, the CPU's issue
        time per launch (first warm-up launches, queue empty), the GPU state near the end.
        A ``launch`` with ``per_call`` > 1 (a ``Graphed`` one) runs that many kernels a
        call: it is called n / per_call times, and the figures are per kernel."""
        cu, check = self.cu, self.check
        per_call = getattr(launch, "per_call", 1)
        n_warm, n = -(-n_warm // per_call), max(1, -(-n // per_call))
        probe, cpu_ms, t0 = max(1, min(LAUNCH_PROBE, n_warm)), 0.0, time.perf_counter()
        for i in range(n_warm):
            launch()
            if i + 1 == probe:
                cpu_ms = (time.perf_counter() - t0) * 1e3 / probe
        check(cu.cuEventRecord(self.start, self.stream))
        tail = n - max(1, n // 8)
        for i in range(n):
            if i == tail:
                check(cu.cuEventRecord(self.mark, self.stream))
            launch()
        check(cu.cuEventRecord(self.end, self.stream))
        check(cu.cuEventSynchronize(self.mark))
        state = self.telemetry.read() if read else {}  # the last eighth of the block still runs
        check(cu.cuEventSynchronize(self.end))
        ms = float(check(cu.cuEventElapsedTime(self.start, self.end))) / (n * per_call)
        cpu_ms /= per_call
        return {"ms": ms, "launches": n * per_call, "warmup": n_warm * per_call, "launch_cpu_ms": cpu_ms,
                "graphed": per_call > 1, "launch_bound": cpu_ms >= LAUNCH_BOUND * ms, **state}

    def calibrate(self, launch) -> float:
        """ms of one launch: one untimed launch (first-call set-up), three timed."""
        return self.run(launch, 1, 3, read=False)["ms"]


class Graphed:
    """``per_call`` launches captured in one CUDA graph; a call replays the graph. Short
    GEMMs (decode shapes: a few microseconds) are timed this way on both sides, so what
    is timed is the GPU, not Python issuing launches."""

    def __init__(self, replay, per_call: int, keep=None):
        self.replay, self.per_call, self.keep = replay, per_call, keep

    @classmethod
    def of_plan(cls, plans: list, stream: int, count: int) -> Graphed:
        """``count`` launches of gemmperf LaunchPlans, cycling through ``plans`` (input
        copies), captured on a stream of their own, replayed on ``stream``."""
        from cuda.bindings import driver as cu

        from gemmperf.kernels.driver import check

        cap = check(cu.cuStreamCreate(cu.CUstream_flags.CU_STREAM_NON_BLOCKING.value))
        check(cu.cuStreamBeginCapture(cap, cu.CUstreamCaptureMode.CU_STREAM_CAPTURE_MODE_THREAD_LOCAL))
        for i in range(count):
            plans[i % len(plans)](cap)
        graph = check(cu.cuStreamEndCapture(cap))
        exe = check(cu.cuGraphInstantiate(graph, 0))
        check(cu.cuStreamDestroy(cap))
        return cls(lambda: check(cu.cuGraphLaunch(exe, stream)), count, keep=(graph, exe))

    @classmethod
    def of_torch(cls, torch, launch, count: int) -> Graphed:
        """``launch`` (torch work) ``count`` times in a torch CUDA graph, replayed on the
        current stream."""
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for _ in range(3):
                launch()
        torch.cuda.current_stream().wait_stream(side)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            for _ in range(count):
                launch()
        torch.cuda.synchronize()
        return cls(graph.replay, count, keep=graph)

    def __call__(self) -> None:
        self.replay()


def graph_count(ms: float) -> int:
    """Kernels per graph for a kernel of ``ms``: about GRAPH_MS of GPU time a graph."""
    return max(1, min(GRAPH_MAX, round(GRAPH_MS / max(ms, 1e-6))))


class Cublas:
    """torch.matmul(A, B.T) in bf16 (B.T is a view, made once) on inputs drawn like
    ours: uniform in [-1, 1) in float32, rounded to bf16 (``fill.cu``). The data moves
    the power a GEMM draws, and on a power-limited card its clock: ``torch.rand`` in
    bf16 (``data="torch-bf16"``, what this benchmark used before) draws 8-bit
    mantissas, whose products toggle fewer bits than full ones. fp8: the same values
    rounded to e4m3, ``torch._scaled_mm(A, B.T, scale_a, scale_b, out_dtype=bf16)``
    with the per-tensor scales our fp8 runner uses (cuBLASLt's fp8 GEMM)."""

    def __init__(self, torch, m: int, n: int, k: int, data: str = "uniform", dtype: str = "bf16", copies: int = 1):
        self.torch, self.dtype, self.i = torch, dtype, 0
        self.pairs = [(self.draw(m, k, data), self.draw(n, k, data).t()) for _ in range(copies)]
        if dtype == "fp8":
            from gemmperf.kernels.launch import FP8_SCALES

            self.scales = [torch.tensor(s, device="cuda", dtype=torch.float32) for s in FP8_SCALES]
        torch.cuda.synchronize()

    def draw(self, rows: int, cols: int, data: str):
        torch = self.torch
        if data == "torch-bf16":
            return torch.rand(rows, cols, device="cuda", dtype=torch.bfloat16) * 2 - 1
        kind = torch.float8_e4m3fn if self.dtype == "fp8" else torch.bfloat16
        return (torch.rand(rows, cols, device="cuda", dtype=torch.float32) * 2 - 1).to(kind)

    def launch(self) -> None:
        a, bt = self.pairs[self.i % len(self.pairs)]
        self.i += 1
        if self.dtype == "fp8":
            self.torch._scaled_mm(a, bt, scale_a=self.scales[0], scale_b=self.scales[1], out_dtype=self.torch.bfloat16)
        else:
            self.torch.matmul(a, bt)

    def close(self) -> None:
        self.pairs = []
        self.__dict__.pop("launch", None)  # a Graphed launch holds the tensors too
        self.torch.cuda.empty_cache()


def figure(blocks: list[dict], flops: float) -> dict:
    """Median over blocks: TFLOP/s, ms, SM clock, power; the hottest temperature, every
    reason seen, launch-bound if any block was."""
    def med(key):
        vals = [b[key] for b in blocks if isinstance(b.get(key), (int, float))]
        return statistics.median(vals) if vals else None

    ms = statistics.median(b["ms"] for b in blocks)
    temps = [b["temp_c"] for b in blocks if isinstance(b.get("temp_c"), (int, float))]
    reasons = sorted({r for b in blocks for r in (b.get("reasons") or [])})
    return {"tflops": flops / ms / 1e9, "ms": ms, "sm_mhz": med("sm_mhz"), "power_w": med("power_w"),
            "temp_c": max(temps) if temps else None, "pstate": blocks[-1].get("pstate"), "reasons": reasons,
            "launch_bound": any(b["launch_bound"] for b in blocks), "blocks": blocks}


# ------------------------------------------------------------------------------ one shape


def balanced_grid(kern, shape: tuple, sms: int):
    """``kern`` on the balanced persistent grid for ``shape``: the fewest clusters that
    still take every work unit in the same number of rounds (e.g. 64 clusters of 2 for
    4096^3 in 128x256 tiles: 4 rounds, as on 66), or None where that is the full grid."""
    from gemmperf.kernels import build
    from gemmperf.kernels.launch import max_active_clusters, work_units

    cfg = kern.config
    if not cfg.persistent or cfg.persistent_ctas or cfg.stream_k:
        return None
    size = cfg.cluster_size
    full = min(sms // size, max_active_clusters(kern) or sms)
    units = work_units(cfg, shape[0], shape[1])
    if units <= full:
        return None
    clusters = -(-units // -(-units // full))
    return build(cfg.replace(persistent_ctas=clusters * size), kern.arch) if clusters < full else None


def select(timer: BlockTimer, kernels: list, shape: tuple, t_est: float | None,
           sms: int | None = None, l2_bytes: int | None = None) -> list[tuple[float, object]]:
    """(ms per launch, kernel) of every candidate, fastest first; each on a short block;
    with the GPU's ``sms``, persistent candidates also on their balanced grid."""
    from gemmperf.kernels.launch import GemmRunner

    if sms:
        kernels = [kern for kern in kernels
                   if get_family(kern.config.family).shares_k_usefully(kern.config, *shape, sms)]
        kernels = kernels + [b for b in (balanced_grid(kern, shape, sms) for kern in kernels) if b is not None]
    out = []
    for kern in kernels:
        with GemmRunner(kern, *shape, stream=timer.stream) as run:
            run.fill(int.from_bytes(os.urandom(4), "little"))
            copies = Copies(run, copies_for(*shape, run.esize, l2_bytes))
            try:
                t = t_est if t_est else timer.calibrate(copies)
                launch = short_launch(copies, timer, t)
                res = timer.run(launch, launches_for(SELECT_WARM_MS, t, 2), launches_for(SELECT_MS, t, 3),
                                read=False)
            finally:
                copies.close()
        out.append((res["ms"], kern))
    return sorted(out, key=lambda x: x[0])


class Copies:
    """Launches of a GemmRunner's kernel cycling through ``count`` copies of A and B
    (its own first), so that with enough copies every launch reads its operands from
    DRAM, as a decode step reads weights that do not stay in L2 (``--cold-l2``)."""

    def __init__(self, run, count: int):
        from gemmperf.kernels.launch import DeviceBuffer, fill_random

        self.run, self.buffers, plans = run, [], [run.plan]
        for i in range(count - 1):
            a, b = DeviceBuffer(run.A.nbytes), DeviceBuffer(run.B.nbytes)
            fill_random(a, run.m, run.k, run.lda, run.in_dtype, 11 + 2 * i, run.arch, run.stream)
            fill_random(b, run.n, run.k, run.ldb, run.in_dtype, 12 + 2 * i, run.arch, run.stream)
            self.buffers += [a, b]
            plans.append(run.plan_for(a.ptr, b.ptr))
        self.plans, self.i = plans, 0

    def __call__(self) -> None:
        self.plans[self.i % len(self.plans)](self.run.stream)
        self.i += 1

    def close(self) -> None:
        for b in self.buffers:
            b.free()


def copies_for(m: int, n: int, k: int, esize: float, l2_bytes: int | None) -> int:
    """Input copies covering three times the L2 (1 without ``l2_bytes``: hot L2)."""
    if not l2_bytes:
        return 1
    return max(1, min(64, -(-3 * l2_bytes // int((m + n) * k * esize))))


def short_launch(launcher: Copies, timer: BlockTimer, t_ms: float):
    """``launcher``'s launches, in a CUDA graph (``Graphed``) when one launch takes under
    GRAPH_BELOW_MS."""
    if t_ms >= GRAPH_BELOW_MS:
        return launcher
    return Graphed.of_plan(launcher.plans, timer.stream, graph_count(t_ms))


def verified_winner(ranked: list, shape: tuple, stream: int):
    """The fastest candidate that verifies: (ms, kernel, open runner, VerifyResult) or None,
    and {config key: why} of the wrong ones tried before it."""
    from gemmperf.kernels.launch import GemmRunner
    from gemmperf.kernels.verify import verify

    wrong = {}
    for ms, kern in ranked:
        run = GemmRunner(kern, *shape, stream=stream)
        res = verify(kern, *shape, runner=run)
        if res.ok:
            return (ms, kern, run, res), wrong
        wrong[kern.config.key()] = res.reason
        print(f"  WRONG {'x'.join(map(str, shape))} {kern.config.key()}: {res.reason}", flush=True)
        run.close()
    return None, wrong


def family_entry(kern, res, tflops: float, selection: list, flops: float, wrong: dict) -> dict:
    return {"config": kern.config.key(), "tflops": tflops, "ok": True, "rel_err": res.max_rel_err,
            "why": res.reason, "registers": kern.resources.registers, "smem": kern.resources.smem_total,
            "spills": kern.resources.spills, "wrong": wrong,
            "selection": {k.config.key(): flops / ms / 1e9 for ms, k in selection}}


def interleave(timer: BlockTimer, sides: dict, n_warm: int, n: int, rounds: int) -> dict[str, list]:
    """Rounds of one block per side, the order reversed every round; each block after its
    own heavy warm-up, the same launch counts on every side."""
    names, out = list(sides), {name: [] for name in sides}
    for r in range(rounds):
        for name in (names if r % 2 == 0 else names[::-1]):
            out[name].append({**timer.run(sides[name], n_warm, n), "round": r})
    return out


def measure_shape(timer: BlockTimer, torch, kernels: dict, shape: tuple, opts) -> dict:
    """Everything measured for one shape (see the module docstring)."""
    m, n, k = shape
    flops = 2.0 * m * n * k
    row = {"shape": f"{m}x{n}x{k}", "flops": flops, "cublas_tflops": None, "cublas": {}}
    l2 = getattr(opts, "l2_bytes", None) if getattr(opts, "cold_l2", False) else None
    dtype = getattr(opts, "dtype", "bf16")
    ref = Cublas(torch, m, n, k, dtype=dtype, copies=copies_for(m, n, k, 1 if dtype == "fp8" else 2, l2)) \
        if torch else None
    t_ref = None
    try:
        if ref:
            try:
                t_ref = timer.calibrate(ref.launch)
            except RuntimeError as err:  # e.g. cuBLASLt's fp8 wants N and K in multiples of 16
                row["cublas"]["refused"] = str(err).splitlines()[0]
                print(f"  cuBLAS refused {m}x{n}x{k}: {row['cublas']['refused']}", flush=True)
                ref.close()
                ref = None
        if ref:
            t_ref = timer.calibrate(ref.launch)
            if t_ref < GRAPH_BELOW_MS:  # both sides in CUDA graphs: the GPU's time, not Python's
                ref.launch = Graphed.of_torch(torch, ref.launch, graph_count(t_ref))
                t_ref = timer.calibrate(ref.launch)
            time.sleep(opts.cool_pause)
            cool = figure([timer.run(ref.launch, 2, launches_for(COOL_MS, t_ref, 3))], flops)
            row["cublas"]["cool"], row["cublas_tflops"] = cool, cool["tflops"]
        for i, (fam, kerns) in enumerate(kernels.items()):
            ranked = select(timer, kerns, shape, t_ref if i == 0 else None, getattr(opts, "sms", None), l2)
            won, wrong = verified_winner(ranked, shape, timer.stream)
            if won is None:
                row[fam] = {"config": None, "tflops": None, "ok": False, "wrong": wrong}
                continue
            ms, kern, run, res = won
            copies = Copies(run, copies_for(*shape, run.esize, l2))
            launch = short_launch(copies, timer, ms)
            try:
                if i == 0:  # the headline family, cool like cuBLAS: after the same pause, a short block
                    time.sleep(opts.cool_pause)
                    cool_ours = figure([timer.run(launch, 2, launches_for(COOL_MS, ms, 3))], flops)
                if i == 0 and opts.rounds:  # the headline family: interleaved with cuBLAS
                    t = t_ref or ms
                    sides = {"ours": launch, **({"cublas": ref.launch} if ref else {})}
                    got = interleave(timer, sides, launches_for(opts.warmup_ms, t, 2),
                                     launches_for(opts.block_ms, t, 3), opts.rounds)
                    ours = figure(got["ours"], flops)
                    if ref:
                        row["cublas"]["interleaved"] = figure(got["cublas"], flops)
                    row[fam] = {**family_entry(kern, res, ours["tflops"], ranked, flops, wrong), "figure": ours,
                                "cool": cool_ours}
                elif i == 0:
                    row[fam] = {**family_entry(kern, res, flops / ms / 1e9, ranked, flops, wrong), "cool": cool_ours}
                else:
                    row[fam] = family_entry(kern, res, flops / ms / 1e9, ranked, flops, wrong)
            finally:
                copies.close()
                run.close()
    finally:
        if ref:
            ref.close()
    row["cublas_interleaved_tflops"] = (row["cublas"].get("interleaved") or {}).get("tflops")
    return row


# ------------------------------------------------------------------------------ report


def ratios(row: dict, fam: str) -> tuple[float | None, float | None]:
    """(fam / cool cuBLAS, fam / interleaved cuBLAS), None where either side is missing or wrong."""
    v = row.get(fam) or {}
    if not v.get("ok") or not v.get("tflops"):
        return None, None
    cool, inter = row.get("cublas_tflops"), row.get("cublas_interleaved_tflops")
    return (v["tflops"] / cool if cool else None), (v["tflops"] / inter if inter else None)


def cool_ratio(row: dict, fam: str) -> float | None:
    """fam's own cool figure (after the same pause, the same short block) / cool cuBLAS."""
    v = row.get(fam) or {}
    mine, cool = (v.get("cool") or {}).get("tflops"), row.get("cublas_tflops")
    return mine / cool if v.get("ok") and mine and cool else None


def summarize(rows: list[dict], tags: dict, fam: str, names: list[str] | None = None) -> dict:
    """Per list (in ``names``' order): shapes in it, shapes counted (correct, with cuBLAS),
    median % of cool and interleaved cuBLAS, and of fam cool against cuBLAS cool."""
    out = {}
    measured = {t for row in rows for t in tags[row["key"]]}
    for name in [t for t in (names or dict.fromkeys(t for ts in tags.values() for t in ts)) if t in measured]:
        mine = [row for row in rows if name in tags[row["key"]]]
        cool = [c for c, _ in (ratios(r, fam) for r in mine) if c is not None]
        inter = [i for _, i in (ratios(r, fam) for r in mine) if i is not None]
        both = [c for c in (cool_ratio(r, fam) for r in mine) if c is not None]
        out[name] = {"shapes": len(mine), "counted": len(inter) or len(cool),
                     "median_pct_cool": 100 * statistics.median(cool) if cool else None,
                     "median_pct_cool_vs_cool": 100 * statistics.median(both) if both else None,
                     "median_pct_interleaved": 100 * statistics.median(inter) if inter else None}
    return out


def fmt_fig(fig: dict | None) -> str:
    """'760.1 (1755 MHz, 699 W)' with * when launch-bound; '-' when absent."""
    if not fig or fig.get("tflops") is None:
        return "-"
    bits = [f"{fig['sm_mhz']:.0f} MHz" if fig.get("sm_mhz") is not None else None,
            f"{fig['power_w']:.0f} W" if fig.get("power_w") is not None else None]
    state = ", ".join(b for b in bits if b)
    return f"{fig['tflops']:.1f}{'*' if fig.get('launch_bound') else ''}" + (f" ({state})" if state else "")


def pct(x: float | None) -> str:
    return f"{100 * x:.0f}%" if x is not None else "-"


def shape_line(row: dict, tags: list[str], fam: str, seconds: float) -> str:
    """The one line printed per shape as it finishes."""
    v = row.get(fam) or {}
    cool, inter = ratios(row, fam)
    ours = "WRONG (every candidate)" if v and not v.get("ok") else fmt_fig(v.get("figure") or v)
    return (f"{row['shape']:>18s} [{','.join(tags)}] cuBLAS cool {fmt_fig(row['cublas'].get('cool'))} | "
            f"interleaved {fmt_fig(row['cublas'].get('interleaved'))} | {fam} {ours} = {pct(inter)} of "
            f"interleaved, {pct(cool)} of cool; cool {fmt_fig(v.get('cool'))} = {pct(cool_ratio(row, fam))} "
            f"of cool | {v.get('config') or '-'} | {seconds:.1f} s")


def markdown(rows: list[dict], tags: dict, fams: list[str], summary: dict, notes: list[str]) -> str:
    """The speed table, the medians per list, the other families, and the notes."""
    fam = fams[0]
    lines = [f"| shape | lists | cuBLAS cool | cuBLAS interleaved | {fam} interleaved | % of interleaved | "
             f"% of cool | {fam} cool | cool % of cool | {fam} configuration |",
             "|---|---|---:|---:|---:|---:|---:|---:|---:|---|"]
    for row in rows:
        v = row.get(fam) or {}
        cool, inter = ratios(row, fam)
        ours = "WRONG" if v and not v.get("ok") else fmt_fig(v.get("figure") or v)
        lines.append(f"| {row['shape']} | {', '.join(tags[row['key']])} | {fmt_fig(row['cublas'].get('cool'))} | "
                     f"{fmt_fig(row['cublas'].get('interleaved'))} | {ours} | {pct(inter)} | {pct(cool)} | "
                     f"{fmt_fig(v.get('cool'))} | {pct(cool_ratio(row, fam))} | {v.get('config') or '-'} |")
    lines.append("")
    for name, s in summary.items():
        med = [f"{s[k]:.0f}% {w}" for k, w in (("median_pct_interleaved", "of interleaved cuBLAS"),
                                               ("median_pct_cool", "of cool cuBLAS"),
                                               ("median_pct_cool_vs_cool", "cool of cool cuBLAS"))
               if s.get(k) is not None]
        lines.append(f"- median of {fam} over {name} ({s['counted']} of {s['shapes']} shapes counted): "
                     + (", ".join(med) if med else "no cuBLAS figure"))
    if len(fams) > 1:
        lines += ["", "| shape | " + " | ".join(f"{f} | % of cool cuBLAS" for f in fams[1:]) + " |",
                  "|---|" + "---:|---:|" * (len(fams) - 1)]
        for row in rows:
            cells = []
            for f in fams[1:]:
                v = row.get(f) or {}
                cells += ["WRONG" if v and not v.get("ok") else fmt_fig(v), pct(ratios(row, f)[0])]
            lines.append(f"| {row['shape']} | " + " | ".join(cells) + " |")
    return "\n".join(lines + [""] + [f"- {n}" for n in notes]) + "\n"


# ------------------------------------------------------------------------------ main


def parse_args(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        prog="kernel_speed.py", formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Time the best configuration of each kernel family against cuBLAS (torch.matmul in bf16, "
                    "torch._scaled_mm in fp8) "
                    "on the local GPU: cuBLAS cool, then interleaved with the ws-hopper winner; clocks and power "
                    "next to every figure. Writes kernel_speed.json and kernel_speed.md under --out.",
        epilog="examples:\n"
               "  PYTHONPATH=src python3 benchmarks/kernel_speed.py --out $OUT           # squares, dsv3, llm (M >= 128)\n"
               "  PYTHONPATH=src python3 benchmarks/kernel_speed.py --shapes 4096x4096x4096 8192x8192x8192\n"
               "  PYTHONPATH=src python3 benchmarks/kernel_speed.py --no-dsv3 --no-llm --rounds 8\n"
               "  PYTHONPATH=src python3 benchmarks/kernel_speed.py --families ws-hopper ws-ampere simt --no-llm\n"
               "  PYTHONPATH=src python3 benchmarks/kernel_speed.py --decode --no-squares --no-dsv3 --no-llm\n"
               "  PYTHONPATH=src python3 benchmarks/kernel_speed.py --dtype fp8              # squares and dsv3")
    p.add_argument("--shapes", nargs="*", metavar="MxNxK", help="only these shapes (default: 4096^3, 8192^3, "
                   "testlists/dsv3.csv and the testlists/llm.csv shapes with M >= 128)")
    p.add_argument("--no-dsv3", action="store_true", help="leave out testlists/dsv3.csv")
    p.add_argument("--no-llm", action="store_true", help="leave out testlists/llm.csv")
    p.add_argument("--decode", action="store_true", help="add the decode shapes: testlists/decode.csv and the "
                   f"testlists/llm.csv shapes with M <= {DECODE_MAX_M}")
    p.add_argument("--no-squares", action="store_true", help="leave out 4096^3 and 8192^3")
    p.add_argument("--cold-l2", action="store_true", help="both sides cycle through copies of A and B covering "
                   "3x the L2, so operands come from DRAM as a decode step's weights do (default: the same "
                   "A and B every launch)")
    p.add_argument("--dtype", choices=DTYPES, default="bf16", help="input type (default bf16; fp8: e4m3 with "
                   "per-tensor scales and bf16 out against torch._scaled_mm, default shapes squares and dsv3)")
    p.add_argument("--families", nargs="+", default=["ws-hopper"], choices=list(CANDIDATES), metavar="FAMILY",
                   help="families to time (default ws-hopper; the first is interleaved with cuBLAS): "
                   + ", ".join(CANDIDATES))
    p.add_argument("--rounds", type=int, default=4, help="interleaved rounds per shape, order reversed "
                   "every round (default 4; 0: no interleaving)")
    p.add_argument("--warmup-ms", type=float, default=200.0, help="heavy warm-up before every interleaved "
                   "block, in ms of back-to-back launches (default 200)")
    p.add_argument("--block-ms", type=float, default=80.0, help="length of one interleaved timed block (default 80)")
    p.add_argument("--cool-pause", type=float, default=0.3, metavar="S",
                   help="idle seconds before the cool cuBLAS timing of each shape (default 0.3)")
    p.add_argument("--max-minutes", type=float, default=6.0, help="stop starting shapes once the run would "
                   "pass this many minutes; the skipped shapes are named (default 6)")
    p.add_argument("--out", default=os.environ.get("OUT", "."), help="folder for kernel_speed.{json,md} "
                   "(default $OUT or .)")
    args = p.parse_args(argv)
    for name in ("rounds", "warmup_ms", "block_ms", "cool_pause", "max_minutes"):
        value = getattr(args, name)
        if not value >= 0 or value == float("inf"):
            raise UserError(f"--{name.replace('_', '-')} = {value}: must be a finite number >= 0")
    return args


def pci_bus_id(index: int) -> str | None:
    try:
        from cuda.bindings import driver as cu

        from gemmperf.kernels.driver import check

        bus = check(cu.cuDeviceGetPCIBusId(32, check(cu.cuDeviceGet(index))))
        bus = bus.split(b"\0")[0].decode() if isinstance(bus, bytes) else str(bus)
        return bus or None
    except Exception:  # NVML then falls back to the device index
        return None


def versions() -> dict:
    out = {}
    try:
        import cuda.bindings
        import cuda.core

        from gemmperf.kernels.builder import nvrtc_version

        out = {"cuda_core": cuda.core.__version__, "cuda_bindings": cuda.bindings.__version__,
               "nvrtc": ".".join(map(str, nvrtc_version()))}
    except Exception as err:  # informational only
        out["versions"] = str(err)
    return out


def load_torch():
    try:
        import torch
    except ImportError:
        print("torch is not importable: no cuBLAS figures, ours timed alone", flush=True)
        return None
    return torch


def compile_candidates(families: list[str], gpu, arch: str, dtype: str = "bf16") -> dict[str, list]:
    """Each family's legal candidates in ``dtype``, compiled once (in parallel, through the
    NVRTC disk cache)."""
    configs = {}
    for fam in families:
        if not get_family(fam).runs_on_arch(arch):
            print(f"{fam}: needs {get_family(fam).arch_rule}, this GPU is {arch}: skipped", flush=True)
            continue
        if not candidates(fam, dtype):
            print(f"{fam}: no {dtype} kernel: skipped", flush=True)
        for cfg in candidates(fam, dtype):
            why = check_legal(cfg, gpu)
            if why:
                print(f"{cfg.key()}: not legal here ({why}): skipped", flush=True)
            else:
                configs.setdefault(fam, []).append(cfg)
    flat = [c for cs in configs.values() for c in cs]
    failed = build_all(flat, arch, jobs=max(1, min(len(flat), os.cpu_count() or 1)))
    for key, err in failed.items():
        print(f"{key}: does not compile ({err}): skipped", flush=True)
    kernels = {f: [build(c, arch) for c in cs if c.key() not in failed] for f, cs in configs.items()}
    kernels = {f: ks for f, ks in kernels.items() if ks}
    if not kernels:
        raise UserError(f"no candidate of {', '.join(families)} runs on this {arch} GPU")
    return kernels


def plan(args, lists: dict, n_candidates: int, elapsed_s: float) -> tuple[list, list, list[str]]:
    """(shapes to run in run order, shapes skipped, notes) within --max-minutes."""
    order = run_order(lists)
    per = shape_seconds(args.rounds, args.warmup_ms, args.block_ms, n_candidates, args.cool_pause)
    todo, skipped = fit_budget(order, per, args.max_minutes * 60 - elapsed_s)
    notes = []
    if skipped:
        notes.append(f"--max-minutes {args.max_minutes:g}: {len(order)} shapes need about "
                     f"{(elapsed_s + per * len(order)) / 60:.1f} min; running {len(todo)}, skipping "
                     + " ".join("x".join(map(str, s)) for s in skipped))
        print(notes[-1], flush=True)
    return todo, skipped, notes


def run_shapes(timer, torch, kernels, todo, tags, args, t_start) -> tuple[list, list, str | None]:
    """Measure ``todo`` in order until --max-minutes would pass: (rows, skipped, error line)."""
    rows, done_s = [], []
    for i, shape in enumerate(todo):
        elapsed = time.monotonic() - t_start
        if done_s and elapsed + 1.5 * statistics.mean(done_s) > args.max_minutes * 60:
            return rows, todo[i:], None
        t0 = time.monotonic()
        try:
            row = measure_shape(timer, torch, kernels, shape, args)
        except Exception as err:  # a failing launch: keep what was measured, name the shape
            return rows, todo[i + 1:], f"{'x'.join(map(str, shape))}: {type(err).__name__}: {err}"
        row["key"] = shape
        rows.append(row)
        done_s.append(time.monotonic() - t0)
        print(shape_line(row, tags[shape], next(iter(kernels)), done_s[-1]), flush=True)
    return rows, [], None


def write(out: Path, result: dict, md: str) -> None:
    out.mkdir(parents=True, exist_ok=True)
    (out / "kernel_speed.json").write_text(json.dumps(result, indent=1, default=str))
    (out / "kernel_speed.md").write_text(md)


def main(argv=None) -> int:
    t_start = time.monotonic()
    try:
        args = parse_args(argv)
        lists = shape_lists(args.shapes, not args.no_dsv3, not args.no_llm and args.dtype == "bf16", args.decode,
                            not args.no_squares)  # bad input fails before the GPU
        from gemmperf.hardware import probe

        gpu = probe(0)
    except UserError as err:
        print(f"kernel_speed: {err}", file=sys.stderr)
        return 2
    from gemmperf.kernels.launch import device_arch, ensure_context

    ensure_context(0)
    arch = device_arch(0)
    telemetry = Telemetry(0, pci_bus_id(0))
    info = {"host": platform.node(), "nvidia_smi": telemetry.describe(), "telemetry": telemetry.source,
            "at_start": telemetry.read(), **versions()}
    print(json.dumps(info), flush=True)
    torch = load_torch()
    if torch:
        info["torch"] = torch.__version__
    try:
        kernels = compile_candidates(args.families, gpu, arch, args.dtype)
    except UserError as err:
        print(f"kernel_speed: {err}", file=sys.stderr)
        return 2
    args.sms, args.l2_bytes = gpu.sms, gpu.l2_bytes
    todo, skipped, notes = plan(args, lists, sum(map(len, kernels.values())), time.monotonic() - t_start)
    tags = tags_of(lists)
    stream = int(torch.cuda.current_stream().cuda_stream) if torch else 0
    timer = BlockTimer(stream, telemetry)
    rows, late, error = run_shapes(timer, torch, kernels, todo, tags, args, t_start)
    if late:
        notes.append(f"--max-minutes {args.max_minutes:g}: time was up after {len(rows)} shapes; not measured: "
                     + " ".join("x".join(map(str, s)) for s in late))
        print(notes[-1], flush=True)
    if error:
        notes.append(f"stopped by an error: {error}")
        print(f"kernel_speed: {error}", file=sys.stderr)
    rank = {s: i for i, s in enumerate(tags)}
    rows.sort(key=lambda r: rank[r["key"]])
    fams = list(kernels)
    summary = summarize(rows, tags, fams[0], list(lists))
    wrong = sorted({key for row in rows for f in fams for key in (row.get(f) or {}).get("wrong", {})})
    notes += [f"{len(wrong)} configurations verified WRONG" + (f": {', '.join(wrong)}" if wrong else ""),
              "* launch-bound: the CPU issued launches about as fast as the GPU ran them; the figure is a lower bound",
              f"GPU: {info['nvidia_smi']}; clocks and power read through {telemetry.source} near the end of each "
              f"timed block (medians over rounds); {time.strftime('%Y-%m-%d %H:%M:%S')}, "
              f"{(time.monotonic() - t_start) / 60:.1f} min"]
    md = markdown(rows, tags, fams, summary, notes)
    for row in rows:
        row["lists"] = tags[row.pop("key")]
    settings = {k: v for k, v in vars(args).items() if k not in ("out", "sms", "l2_bytes")}
    write(Path(args.out), {"gpu": info, "arch": arch, "settings": settings, "rows": rows, "summary": summary,
                           "skipped": ["x".join(map(str, s)) for s in skipped + late], "notes": notes}, md)
    print(md, flush=True)
    return 1 if wrong or error else 0


if __name__ == "__main__":
    sys.exit(main())
