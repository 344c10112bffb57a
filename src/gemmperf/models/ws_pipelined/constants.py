"""ws-pipelined's constants beyond ``params.PARAM_NAMES``: one typed, frozen object.

Each field is one physical constant; its metadata gives the unit, what it is, the
plausible range (lo, hi) of its value on a current NVIDIA GPU, whether the fit
(``fit.constants``) adjusts it, and its default as a function of the GPU descriptor
(``PipelinedConstants.defaults``): adding a constant is adding one field here. Values
stored in ``Params.constants`` (fitted ones, written to params.json) override the
defaults by name. Field order is the order the fit adjusts them in.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

import numpy as np

from ...hardware import GPU
from ...params import ParamSet


def _const(default, unit: str, meaning: str, lo: float, hi: float, fit: bool = True, rows=None,
           scales_with: str | None = None):
    """A constant's field: ``default(gpu)`` gives its descriptor default; ``rows(arrays)``
    the rows of evaluate()'s named input arrays whose prediction it enters (None: all),
    so that a fit on rows none of which it enters leaves it at its value; ``scales_with``
    the microbenchmark figure it scales with from one GPU to another (fit.transfer's
    ``microbench_figures``: the copy rates "dram" and "l2", the cost of clusters
    "cluster"; or a microbenchmarked parameter, "t_epilogue_us"; None: its default's
    ratio)."""
    return field(metadata={"default": default, "unit": unit, "meaning": meaning, "range": (lo, hi), "fit": fit,
                           "rows": rows, "scales_with": scales_with})


def k_shared(v: dict):
    """The rows that share a tile's K among CTAs (split-K or stream-K)."""
    return (v["split_k"] > 1) | (v["stream_k"] > 0)


def streamed(v: dict):
    """The stream-K rows."""
    return v["stream_k"] > 0


def clustered(v: dict):
    """The rows whose CTAs run in clusters of more than one CTA (multicast)."""
    return v["cluster_m"] * v["cluster_n"] > 1


def per_clock(bytes_per_clock: float):
    """Default: a rate of ``bytes_per_clock`` at the SM clock (B/us)."""
    return lambda gpu: bytes_per_clock * gpu.sm_clock_mhz


def of_dram(share: float):
    """Default: ``share`` of the datasheet DRAM rate (B/us)."""
    return lambda gpu: share * (gpu.dram_bytes_per_s / 1e6)


def clocks(n: float):
    """Default: ``n`` SM clocks (us)."""
    return lambda gpu: n / gpu.sm_clock_mhz


def direct_epilogue(v: dict):
    """The rows whose epilogue stores from registers (not through TMA)."""
    return v["epilogue"] == 0


def fixed(value: float):
    """Default: ``value`` on every GPU."""
    return lambda gpu: value


@dataclass(frozen=True)
class PipelinedConstants:
    """Constants of ws-pipelined; a field may hold a float or a numpy array (one per row)."""

    dram_eff_bytes_per_us: float = _const(
        of_dram(0.9), "B/us", "achievable whole-GPU DRAM rate, shared by the CTAs of a wave", 5e5, 2e7,
        scales_with="dram")
    dram_write_bytes_per_us: float = _const(
        of_dram(0.75), "B/us", "whole-GPU rate at which a GEMM's stores of C reach DRAM (benchmarks/store_probe.py: "
        "2.5 TB/s on the H100 with TMA stores, 0.75 of the datasheet rate; a 2 GiB memset 3.25 TB/s)", 5e5, 2e7,
        fit=False, scales_with="dram")
    l2_bytes_per_us: float = _const(
        of_dram(2.0), "B/us", "whole-GPU rate at which the L2 serves load requests", 1e6, 5e7, scales_with="l2")
    smem_bytes_per_us: float = _const(
        per_clock(128.0), "B/us", "one SM's shared-memory rate (32 banks x 4 B per clock)", 3e4, 1e6)
    store_bytes_per_us: float = _const(
        per_clock(64.0), "B/us", "one SM's global store issue rate in the epilogue", 1e4, 5e5)
    tile_overhead_us: float = _const(
        fixed(0.05), "us", "persistent kernel: per-tile scheduling and accumulator zeroing", 0.0, 5.0)
    cta_launch_us: float = _const(
        fixed(0.5), "us", "non-persistent kernel: CTA start, barrier init, tensormap prefetch", 0.0, 10.0)
    l2_window_kblocks: float = _const(
        fixed(16.0), "k-blocks", "k-blocks of skew between the CTAs of a wave that the L2 must hold", 1.0, 256.0)
    sm_load_bytes_per_us: float = _const(
        per_clock(48.0), "B/us", "one SM's TMA box rate from L2, zero-filled overhang included", 1e4, 5e5)
    l2_skew_kblocks: float = _const(
        fixed(1.0), "k-blocks", "lag per CTA of launch-order distance between two users of a panel", 0.0, 16.0)
    line_split_cost: float = _const(
        fixed(1.0), "requests", "extra L2 requests of a box row that straddles two 128-byte lines", 0.0, 4.0)
    sector_split_cost: float = _const(
        fixed(1.0), "requests", "extra L2 requests of a box row that is not on a 32-byte sector", 0.0, 4.0)
    split_row_engine_us: float = _const(
        clocks(3.0), "us", "one SM's TMA engine time for a box row that starts off its 32-byte sector, beyond an "
        "aligned row's: the engine issues the row's extra requests one after another, which a tile's first slot "
        "waits for (benchmarks/short_k_probe.py --rows, lent H200: 16 persistent CTAs of 128x128 ping-pong tiles "
        "with TMA stores, 0.33 us a one-k-block tile more for its 128 such rows, 2.6 ns each; over 4 and 16 "
        "k-blocks 1.8-2.0 ns a row, cooperative tiles with direct stores at most 1.5: about 3 clocks at 1980 MHz). "
        "Measured, not fitted (fitted on every development row it goes to 0.97 ns on both GPUs, and left one "
        "testlist out the fitted value buys nothing: benchmarks/MODEL_ACCURACY.md, step 38)", 0.0, 0.02, fit=False)
    ring_extra_latency_us: float = _const(
        fixed(0.15), "us", "a ring slot's round trip beyond the microbenchmarks' load latency (default: the order "
        "the H100's development data fit, 0.14; 0.5 before step 25 took the transfer out of the round trip)",
        0.0, 5.0)
    hit_extra_latency_us: float = _const(
        fixed(0.075), "us", "a ring slot's round trip beyond the microbenchmarks' load latency when the L2 serves its "
        "load (ring_extra_latency_us: when DRAM does); default half the DRAM's", 0.0, 5.0)
    oob_latency_us: float = _const(
        fixed(2.5), "us", "most that zero-filled box rows in flight add to a ring slot's round trip: the "
        "zero-fill path's queue full (benchmarks/zero_fill_rows_probe.py: about 2.2 us on the H100)", 0.0, 10.0)
    oob_half_rows: float = _const(
        fixed(5.0e4), "rows", "zero-filled box rows in flight on the whole GPU (CTAs x overhanging rows x ring "
        "slots) at which they add half of oob_latency_us", 1e3, 1e6)
    oob_multicast_bytes_per_us: float = _const(
        per_clock(1000.0), "B/us", "whole-GPU rate at which clusters write the zeros of multicast slices that lie "
        "wholly out of bounds, once per k-block (benchmarks/oob_box_probe.py, zero_fill_rows_probe.py: about "
        "2 TB/s on the H100)", 1e5, 5e7, rows=clustered)
    tma_epilogue_us: float = _const(
        fixed(0.5), "us", "a TMA-store epilogue's fixed cost per tile: accumulators converted, the staging "
        "buffer's fence and barrier, the bulk stores issued (no wait for global stores)", 0.0, 10.0,
        rows=lambda v: v["epilogue"] == 1, scales_with="t_epilogue_us")
    cluster_jitter: float = _const(
        fixed(0.1), "share", "relative spread of one CTA's k-block period; a cluster's CTAs share every "
        "multicast ring slot, so the cluster runs at the slowest of them", 0.0, 0.5, rows=clustered)
    cluster_sync_us: float = _const(
        fixed(1.5), "us", "a cluster's CTAs start and leave together: its launch on one GPC, the cluster-wide "
        "barrier before the first multicast, the first k-block's wait for every peer's slice, the barrier "
        "before exit (benchmarks/cluster_probe.py: 1.5 us per wave on the H100 with one k-block)", 0.0, 5.0,
        rows=clustered, scales_with="cluster")
    period_sharpness: float = _const(
        fixed(4.0), "1", "exponent of the p-norm that takes the ring's period from its terms (multiply, "
        "transfer, round trip over the slots): infinite for fixed times, lower the more a k-block's times "
        "vary", 1.5, 16.0)
    epilogue_acc_us: float = _const(
        clocks(8.0), "us", "a consumer thread's direct-epilogue time per fp32 accumulator it holds: converted, "
        "exchanged in its quad, stored 16 bytes per 8 (about 8 clocks of instructions)", 0.0, 0.1,
        rows=direct_epilogue, scales_with="t_epilogue_us")
    second_warpgroup_factor: float = _const(
        fixed(1.19), "x", "a consumer thread's direct-epilogue time in a CTA of two consumer warpgroups (ping-pong, "
        "or a cooperative tile of 128 rows or more) over its time in a CTA of one, the second working or waiting. "
        "Measured, not fitted (benchmarks/schedule_probe.py --modes, lent H200: 1.62 us per 64 accumulators a "
        "thread stores in a CTA of 256 threads, 1.93 in one of 384)", 1.0, 2.0, fit=False, rows=direct_epilogue)
    coalesce_distance: float = _const(
        fixed(2.0), "CTAs", "launch-order distance over which simultaneous panel reads merge in L2", 0.1, 64.0)
    one_wg_math_share: float = _const(
        fixed(0.9), "share", "tensor-core busy share one consumer warpgroup sustains (64-row tiles)", 0.25, 1.0)
    shared_sector_cost: float = _const(
        fixed(1.2), "x", "DRAM write time a row of C that starts off its 32-byte sector adds, over the row's plain "
        "write time: its tiles' rows end in sectors their neighbours' begin, whose two halves the L2 merges by "
        "reading them back, which breaks the write stream (rows off 64 or 128 bytes but on a sector cost nothing). "
        "Measured, not fitted (benchmarks/store_probe.py --granule, lent H200: 6144 x 13320 x 64, every other "
        "row off, grouped raster, data-parallel, 1.52x the time of 13328)", 0.0, 4.0, fit=False)
    l2_write_buffer_fraction: float = _const(
        fixed(0.25), "share", "share of the L2 that holds C's written lines before they must leave for DRAM "
        "(benchmarks/store_probe.py's 60 runs are predicted best at 0.125-0.25)", 0.0, 1.0, fit=False)
    l2_effective_fraction: float = _const(
        fixed(0.5), "share", "share of the L2 that holds a CTA's near data (one partition)", 0.05, 1.0, fit=False)
    partial_write_bytes_per_us: float = _const(
        per_clock(64.0), "B/us", "one SM's rate of writing fp32 partial tiles to the L2 workspace (split-K, "
        "stream-K)", 1e4, 5e5, rows=k_shared)
    partial_read_bytes_per_us: float = _const(
        per_clock(32.0), "B/us", "one SM's rate of reading partial tiles back from L2 in the fix-up (dependent "
        "loads and adds, latency-bound)", 5e3, 5e5, rows=k_shared)
    partial_latency_us: float = _const(
        fixed(0.5), "us", "the L2 round trip of one batch of a partial's loads in the fix-up: the read-back loop "
        "takes the partials one after another, each in kshare.fixup_batches round trips", 0.0, 5.0, rows=k_shared)
    fixup_sync_us: float = _const(
        fixed(1.0), "us", "a partial's arrival: memory fence, atomic counter round trip, warpgroup barrier",
        0.0, 10.0, rows=k_shared)
    ring_queue_us_per_mb: float = _const(
        fixed(0.04), "us/MB", "what a ring slot's round trip waits behind each MB of ring slots in flight on the GPU "
        "(every CTA of the wave keeps B slots of its A and B boxes in flight; benchmarks/ring_depth_probe.py --ctas: "
        "the round trip grows 1.3-1.9x from 1 to 64 CTAs, 0.04-0.12 us a MB, the default its lower figure)", 0.0, 0.5)
    queue_hit_share: float = _const(
        fixed(0.5), "share", "share of the queue of slots in flight (ring_queue_us_per_mb) that a slot the L2 serves "
        "waits in, against a DRAM miss's whole queue: a hit leaves the queue at the L2 (fitted on every development "
        "row: 0.56 on the H100, 0.38 on the H200; the default midway)", 0.0, 1.0)
    held_slots: float = _const(
        fixed(1.0), "slots", "ring slots a consumer holds beyond those in flight: it frees k-block j - 1's slot only "
        "once j's wgmma is issued and j - 1's done (kernels/hopper.cu: one slot)", 0.0, 1.5)
    short_tile_held_slots: float = _const(
        fixed(1.0), "slots", "held_slots for 64-row tiles, whose k-block multiply is short: a consumer frees slot "
        "j - 1 once j has arrived, so in a latency-bound ring it holds a slot for about a period; the round trip "
        "counts the multiply as well, and the held share the data fit falls as the multiply grows (fitted on every "
        "development row 0.79 on the H100 and 0.77 on the H200, held_slots 0.58 and 0.59; default the kernel's one "
        "slot, as held_slots')", 0.0, 1.5, rows=lambda v: v["tile_m"] < 128)
    ring_saturation_slots: float = _const(
        fixed(12.0), "slots", "slots a CTA keeps in flight at which its own slots' round trip has doubled: each "
        "slot in flight lengthens it by 1/this (default: the order the H100's development data fit, 11)", 2.0, 200.0)
    stream_k_lookup_us: float = _const(
        clocks(440.0), "us", "stream-K's read-back finds each partial's workspace slot before its loads issue: "
        "its contributor's first iteration (an integer division) and a 64-bit address for each load, about 110 "
        "instructions a consumer warp before the first load (split-K's slots sit at offsets fixed when the kernel "
        "is compiled: 5). Measured, not fitted (benchmarks/stream_k_probe.py --fixup: stream-K's time grows "
        "0.18-0.27 us a partial more than split-K's, 440 clocks on the mean; fitted on the few stream-K rows of "
        "one fold it ran to 0.72 us)", 0.0, 1.0, fit=False, rows=streamed)

    power_clock_drop: float = _const(
        fixed(0.2), "us/us", "what each us of the tensor cores' busy time adds once the power limiter has acted: "
        "the share of the SM clock the cap takes from a run of heavy multiplies (benchmarks/power_probe.py: the "
        "fastest tilings keep 0.84-0.91 of their clock on the H100 at 700 W)", 0.0, 0.6)
    power_time_constant_us: float = _const(
        fixed(1.0e4), "us", "one kernel's tensor-core busy time after which the power limiter has brought the SM "
        "clock to what the cap sustains; one kernel stands for the collector's ~10 back-to-back launches of it "
        "(benchmarks/power_probe.py: the limiter settles over 50-150 ms of wall time)", 1e2, 1e6)

    @classmethod
    def defaults(cls, gpu: GPU) -> PipelinedConstants:
        """Values derived from the GPU descriptor alone, before any fit."""
        return cls(**{f.name: f.metadata["default"](gpu) for f in dataclasses.fields(cls)})

    def as_dict(self) -> dict:
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}


CONSTANTS = tuple(f.name for f in dataclasses.fields(PipelinedConstants))
# constants of earlier versions of the model, and why they went: a params.json that holds
# one was fitted with a different model and has to be fitted again
RETIRED = {
    "oob_row_us": "the zero fill per zero-filled row of a wave (issue 17 steps 9 and 11); since step 15 its "
    "latency follows the rows in flight, ring slots included (oob_latency_us, oob_half_rows)",
    "oob_sat_rows": "the zero fill per zero-filled row of a wave (issue 17 steps 9 and 11); since step 15 its "
    "latency follows the rows in flight, ring slots included (oob_latency_us, oob_half_rows)",
    "scalar_store_factor": "2-byte epilogue stores; C's rows are padded to 16 bytes since 2026-11-23",
    "scalar_l2_bytes_per_us": "2-byte epilogue stores; C's rows are padded to 16 bytes since 2026-11-23",
}
FITTED = tuple(f.name for f in dataclasses.fields(PipelinedConstants) if f.metadata["fit"])


def rows_of(name: str, arrays: dict):
    """Whether constant ``name`` enters the prediction of any row of evaluate()'s named
    input ``arrays`` (its ``rows`` predicate; True for a constant every row uses)."""
    rows = next(f for f in dataclasses.fields(PipelinedConstants) if f.name == name).metadata["rows"]
    return rows is None or bool(np.any(rows(arrays)))


def scales_with() -> dict[str, str | None]:
    """The microbenchmark figure each constant scales with across GPUs, by name."""
    return {f.name: f.metadata["scales_with"] for f in dataclasses.fields(PipelinedConstants)}


def ranges() -> dict[str, tuple[float, float]]:
    """Plausible (lo, hi) of every constant, by name."""
    return {f.name: f.metadata["range"] for f in dataclasses.fields(PipelinedConstants)}


def default_constants(gpu: GPU) -> PipelinedConstants:
    return PipelinedConstants.defaults(gpu)


def constants_for(params: ParamSet, family: str, dtype: str) -> PipelinedConstants:
    """The constants of one (family, dtype): stored values over the descriptor defaults."""
    stored = params.get(family, dtype).constants or {}
    return dataclasses.replace(default_constants(params.gpu),
                               **{c: float(stored[c]) for c in CONSTANTS if c in stored})
