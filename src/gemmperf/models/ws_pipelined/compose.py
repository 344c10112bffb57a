"""evaluate(): the ws-pipelined kernel time composed from its stage terms and effects."""

from __future__ import annotations

from dataclasses import dataclass
from enum import IntEnum

import numpy as np

from ..columns import ceil_div
from . import effects as E
from . import epilogue as EP
from . import kshare as K
from .geometry import Grid, Span
from .inputs import INPUTS, Inputs, Switches


class Limiter(IntEnum):
    """What bounds the first wave's steady state (the ``limiter`` column is the lower-case name)."""

    LOAD = 0  # the transfer x, DRAM term (or the wholly out-of-bounds multicast slices' term, oob_multicast)
    L2 = 1  # the transfer x, L2 term
    MATH = 2  # the tensor cores (Tc = T_MATH)
    SMEM = 3  # shared-memory bandwidth (Tc = T_SMEM)
    LATENCY = 4  # the ring's latency term (lat_ring + lat_oob + lat_q + lat_s + Tc) * (1/(B - h) + 1/B_sat)
    EPILOGUE = 5  # the epilogue exceeds the tile's K loop
    WRITES = 6  # the epilogue exceeds the tile's K loop because C's stores wait for DRAM (dram_writes' backlog)


LIMITERS = tuple(limiter.name.lower() for limiter in Limiter)


def math_time(x: Inputs):
    """T_MATH = 2*TM*TN*TK / (math_flops_per_us * warpgroup share) + math_latency_us."""
    return 2.0 * x.tile_m * x.tile_n * x.tile_k / (x.math_flops_per_us * E.consumer_warpgroups(x)) \
        + x.math_latency_us


def smem_time(x: Inputs):
    """T_SMEM: TMA's (TM + TN)*TK*b ring writes plus wgmma's TM*TK*b + (TM/64)*TN*TK*b reads,
    at ``smem_bytes_per_us``."""
    smem_bytes = ((x.tile_m + x.tile_n) * x.tile_k + x.tile_m * x.tile_k
                  + (x.tile_m / 64.0) * x.tile_n * x.tile_k) * x.in_bytes
    return smem_bytes / x.c.smem_bytes_per_us


def epilogue(x: Inputs, backlog):
    """One tile's epilogue, the direct epilogue's 16-byte stores from registers:
        E = t_epilogue_us + max(Ea + Sb / store_bytes_per_us, backlog)
    with Sb the bytes the tile stores inside C (``epilogue.partial_stores``; TM*TN*ob for a
    tile inside C), Ea the consumer threads' own work on their accumulators
    (``epilogue.epilogue_threads``), which with the stores' issue overlaps the DRAM writes
    the next tile does not hide (``backlog``, ``epilogue.dram_writes``; off: E =
    t_epilogue_us + Ea + max(stores, backlog)).
    The TMA-store epilogue (``epilogue.tma_store``) replaces the stores by staging writes to
    shared memory."""
    out_tile = x.tile_m * x.tile_n * x.out_bytes
    stored = EP.partial_stores(x).tile
    if x.on.dram_writes:
        direct = x.t_epilogue_us + np.maximum(EP.epilogue_threads(x) + stored / x.c.store_bytes_per_us, backlog)
    else:
        direct = x.t_epilogue_us + EP.epilogue_threads(x) + np.maximum(stored / x.c.store_bytes_per_us, backlog)
    return EP.tma_store(x, direct, out_tile, backlog)


def store_drain(x: Inputs, d):
    """The last tile's TMA stores drain after its consumers are done: once per kernel,
        max(Sb / store_bytes_per_us, D) - exit
    (Sb: the bytes the tile stores inside C, ``epilogue.partial_stores``; D: the last wave's
    DRAM writes, ``epilogue.dram_writes``; exit: the part of it a non-persistent grid's last
    wave has in its epilogue already, ``epilogue.store_exit``)
    for the TMA-store epilogue (``epilogue.tma_store``), 0 for the direct one."""
    if not x.on.tma_store:
        return np.zeros(x.shape)
    stored = EP.partial_stores(x).tile
    drain = np.maximum(stored / x.c.store_bytes_per_us, d) - EP.store_exit(x, stored)
    return np.where(x.epilogue == 1, drain, 0.0)


@dataclass(frozen=True)
class Wave:
    """One tile's timeline in a wave of ``a`` CTAs."""

    a: np.ndarray
    a_out: np.ndarray  # CTAs of the wave that store C (split-K: ceil(a/Sk))
    h: np.ndarray  # the wave's L2 hit rate (effects.l2_reuse)
    t_load: np.ndarray  # x, per k-block
    l2_bound: np.ndarray  # the L2 term of x binds
    # what a slot's round trip waits beyond lat_ring (effects.latency_term): the zero fill's
    # latency (boundary_fill), the slots in flight (ring_queue), the split rows' extra
    # requests (split_row_latency)
    lat_wait: np.ndarray
    z_mc: np.ndarray  # the wholly out-of-bounds multicast slices' time per k-block (effects.oob_multicast)
    fill: np.ndarray  # load latency + the first k-block's lat_oob (one slot) + z_mc + x (its split rows: first_slot)
    rest: np.ndarray  # K loop after the fill
    period: np.ndarray
    epilogue: np.ndarray
    epilogue_end: np.ndarray  # the epilogue of a kernel's last tile: no next tile hides its DRAM writes
    writes: EP.Writes  # the wave's stores of C to DRAM (epilogue.dram_writes)
    fixup: np.ndarray  # split-K's fix-up before the epilogue (kshare.split_k_fixup)


def wave(x: Inputs, w: Span, h, t_c, pad: E.Padding) -> Wave:
    a, a_bytes, b_bytes = w.a, *E.cta_bytes(x)
    a_out = ceil_div(a, x.split_k)
    lines = E.row_alignment(x)
    t_load, l2_bound = E.bandwidth_sharing(x, w, h, a_bytes + b_bytes, pad.loaded, lines)
    z_mc = E.oob_multicast(x, a)
    lat_wait = (E.boundary_fill(x, a, x.stages) + E.ring_queue(x, a, a_bytes + b_bytes, h)
                + E.split_row_latency(x, a_bytes + b_bytes, lines))
    rest, period = E.pipelining(x, t_load, t_c, lat_wait, z_mc, h)
    writes = EP.dram_writes(x, a_out, t_c)
    return Wave(a=a, a_out=a_out, h=h, t_load=t_load, l2_bound=l2_bound, lat_wait=lat_wait, z_mc=z_mc,
                fill=x.load_latency_us + E.boundary_fill(x, a, 1) + z_mc + E.first_slot(x, t_load, a_bytes + b_bytes),
                rest=rest, period=period,
                epilogue=epilogue(x, writes.backlog), epilogue_end=epilogue(x, writes.end), writes=writes,
                fixup=K.split_k_fixup(x, a))


def full_wave_hit_rate(x: Inputs):
    """A full wave's L2 hit rate, averaged over the full waves: the first has no predecessor
    in L2, the later ones (the second stands for them all) do."""
    g = x.grid
    h_first = E.l2_reuse(x, g.full)
    h_later = E.l2_reuse(x, g.later)
    return np.where(g.full_waves > 1,
                    (h_first + (g.full_waves - 1) * h_later) / np.maximum(g.full_waves, 1), h_first)


def kernel_terms(x: Inputs, first: Wave, full: Wave, last: Wave, scale, t_c) -> dict:
    """init, fill, mainloop, epilogue, reduction and overhead of the whole kernel (us), and
    the steady periods of the full waves' and the last wave's K loops on the critical path
    (``full_periods``, ``last_periods``: F*(S-1) and [R>0]*(S-1), less stream-K's
    segment ends), which the optimizer's split of the time reads (optimize/pipelined.py).

    persistent (grid = min(T, P)): the producer prefetches the next tile's ring during
    the epilogue, so only the part of a later fill longer than the epilogue is exposed;
    non-persistent (grid = T): each wave's CTAs start cold and pay ``cta_launch_us``.
    Ping-pong (``epilogue.pingpong_overlap``) hides epilogues and later fills behind the
    other consumer warpgroup's main loop; the TMA-store epilogue drains its last tile's
    stores at the end (``store_drain``). Split-K's fix-up (``kshare.split_k_fixup``)
    precedes each wave's epilogue, the waves before the last paying their read-back and
    epilogue over Sk (``kshare.split_k_overlap``); stream-K's one wave of workers adds its
    segment ends, epilogues and fix-up (``stream_k_terms``)."""
    g = x.grid
    has_rem = g.rem > 0
    mainloop = scale * (g.full_waves * full.rest + has_rem * last.rest)
    # every wave's epilogue, the kernel's last tile's without a next tile to hide its DRAM writes
    final = np.where(has_rem, last.epilogue_end, full.epilogue_end)
    epi = g.full_waves * full.epilogue + has_rem * last.epilogue - np.where(has_rem, last.epilogue, full.epilogue) \
        + final
    red = g.full_waves * full.fixup + has_rem * last.fixup
    epi_off, red_off = K.split_k_overlap(x, full.epilogue, K.split_k_read(x, full.a))
    epi, red = epi - epi_off, red - red_off
    exposed_full = np.maximum(full.fill - (full.epilogue + full.fixup), 0.0)
    exposed_last = np.maximum(last.fill - (full.epilogue + full.fixup), 0.0)
    later_fills = np.where(has_rem, np.maximum(g.full_waves - 1, 0) * exposed_full
                           + (g.full_waves > 0) * exposed_last,
                           np.maximum(g.full_waves - 1, 0) * exposed_full)
    overlap = EP.pingpong_overlap(x, full.epilogue, final, t_c, full.writes.backlog)
    if overlap is not None:
        epi, later_fills = np.where(overlap.on, overlap.epilogue, epi), np.where(overlap.on, 0.0, later_fills)
    fill_p = scale * (first.fill + later_fills)
    fill_np = scale * (g.full_waves * full.fill + has_rem * last.fill)
    terms = {
        "init_us": np.asarray(x.t_init_us, dtype=np.float64),
        "fill_us": np.where(x.persistent, fill_p, fill_np),
        "mainloop_us": mainloop,
        "epilogue_us": epi + store_drain(x, np.where(has_rem, last.writes.d, full.writes.d)),
        "reduction_us": red,
        "overhead_us": np.where(x.persistent, g.n_waves * x.c.tile_overhead_us, g.n_waves * x.c.cta_launch_us)
        + E.cluster_sync(x, g.n_waves),
        "full_periods": g.full_waves * (g.k_blocks - 1),
        "last_periods": has_rem * (g.k_blocks - 1),
    }
    return stream_k_terms(x, terms, first, scale, t_c)


def stream_k_terms(x: Inputs, terms: dict, first: Wave, scale, t_c) -> dict:
    """``terms`` with stream-K's (``kshare.stream_k_fixup``) added on its rows: its one wave
    of workers (the first) runs n_seg segments, so n_seg - 1 of its steady periods are a
    segment's last k-block (Tc) instead, each later segment's fill is exposed beyond the
    epilogue and costs a tile overhead; the extra epilogues and the partials' reduction."""
    sk = K.stream_k_fixup(x, first.a)
    if sk is None:
        return terms
    on = x.stream_k > 0
    seg = sk.segments
    exposed = np.maximum(first.fill - first.epilogue, 0.0)
    add = {"mainloop_us": scale * seg * (t_c - first.period), "fill_us": scale * seg * exposed,
           "epilogue_us": sk.epilogues * first.epilogue, "reduction_us": sk.reduction,
           "overhead_us": seg * x.c.tile_overhead_us}
    out = {name: np.where(on, value + add[name], value) if name in add else value for name, value in terms.items()}
    for name in ("full_periods", "last_periods"):
        out[name] = np.where(on & (terms[name] > 0), terms[name] - seg, terms[name])
    return out


def limiter(x: Inputs, first: Wave, t_c, t_math, t_smem):
    """The Limiter code of the first wave's steady state, per row (int8)."""
    if x.on.pipelining:
        lat_term = E.latency_term(x, first.t_load, t_c, first.lat_wait, first.h)
    else:
        lat_term = np.zeros_like(first.t_load)
    core = np.where(t_smem > t_math, Limiter.SMEM, Limiter.MATH) if x.on.smem_limit else Limiter.MATH
    # the wholly out-of-bounds multicast slices' term (oob_multicast) is load work: LOAD where it binds
    zero = first.z_mc if x.on.pipelining else np.zeros_like(first.t_load)
    load = np.where(zero > first.t_load, Limiter.LOAD, np.where(first.l2_bound, Limiter.L2, Limiter.LOAD))
    mem_or = np.where(np.maximum(first.t_load, zero) >= np.maximum(t_c, lat_term), load,
                      np.where(t_c >= lat_term, core, Limiter.LATENCY))
    loop_first = first.fill + (x.grid.k_blocks - 1) * first.period + t_c
    over = first.epilogue + first.fixup > loop_first
    # bound by the writes: the tile's epilogue (first.epilogue, with its writes' backlog) is
    # longer than it would be without the DRAM writes it waits on
    writes = over & x.on.dram_writes & (first.epilogue > epilogue(x, -np.inf))
    return np.select([writes, over], [Limiter.WRITES, Limiter.EPILOGUE], mem_or).astype(np.int8)


def evaluate(*, model_options: dict | None = None, grid: Grid | None = None, **named) -> dict[str, np.ndarray]:
    """Predicted time and breakdown per row, from the named arrays of INPUTS (numpy, one
    element per row, broadcast together) and effect switches (keywords or
    ``model_options``). ``grid``: ``inputs.grid_of`` these same arrays, computed once by
    a caller that varies only the constants and the switches (a fit); None: computed here."""
    flags = {name: value for name, value in named.items() if name not in INPUTS}
    x = Inputs.of(named, Switches.of(model_options, flags), grid)
    g = x.grid
    t_math, t_smem = math_time(x), smem_time(x)
    t_c = E.smem_limit(x, t_math, t_smem)
    pad = E.padding(x)
    h_first = E.l2_reuse(x, g.first)
    first = wave(x, g.first, h_first, t_c, pad)
    full = wave(x, g.full, full_wave_hit_rate(x), t_c, pad)
    last = wave(x, g.last, E.l2_reuse(x, g.last), t_c, pad)
    terms = kernel_terms(x, first, full, last, pad.work_scale, t_c)
    # the part of the main loop the ring depth B changes (the optimizer splits the time by it)
    ring = pad.work_scale * (terms["full_periods"] * full.period + terms["last_periods"] * last.period)
    total = terms["init_us"] + terms["fill_us"] + terms["mainloop_us"] + terms["epilogue_us"] + terms["overhead_us"]
    total = np.where(terms["reduction_us"] > 0, total + terms["reduction_us"], total)
    terms["power_us"] = E.power_clock(x)
    total = total + terms["power_us"]
    columns = {
        "predicted_us": total,
        "limiter": limiter(x, first, t_c, t_math, t_smem),
        **terms,
        "stage_load_us": first.t_load,
        "stage_math_us": t_math,
        "stage_smem_us": t_smem,
        "ring_us": ring,
        "stage_period_us": first.period,
        "full_wave_period_us": np.where(g.full_waves > 0, full.period, first.period),
        "l2_hit_rate_est": h_first,
        "padding_waste": 1.0 - g.useful,
        "tiles": g.tiles,
        "work_items": g.items,
        "wave_ctas": g.wave_ctas,
        "waves": g.n_waves,
        "last_wave_sms": g.last_a,
        "k_stages": g.k_blocks,
    }
    ints = ("limiter", "tiles", "work_items", "wave_ctas", "waves", "last_wave_sms", "k_stages", "full_periods",
            "last_periods")
    return {name: np.broadcast_to(value, x.shape).astype(np.int8 if name == "limiter" else
                                                         np.int64 if name in ints else np.float64)
            for name, value in columns.items()}
