"""The effects of ws-pipelined: one function each, each with its switch (``x.on.<name>``);
split-K's and stream-K's reductions and tile boundaries are in kshare.py.

Every function takes the typed inputs ``x`` (inputs.Inputs: arrays, constants ``x.c``,
switches ``x.on``, tile grid ``x.grid``) and returns the term it models; switched off,
it returns the plain ws-stage / ws-persistent assumption. Notation as in geometry.py;
b = input bytes per element; per-k-block bytes a CTA requests Bs = (TM/cn + TN/cm)*TK*b
(A is multicast to the cn CTAs of a cluster row, B to the cm CTAs of a column).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from .geometry import HOLDS, Span, line_shares, span_hit_rate
from .geometry import cta_bytes as box_bytes
from .inputs import Inputs


def l2_reuse(x: Inputs, w: Span):
    """L2 hit rate h of the wave ``w`` (tiles t0 .. t0+a-1), from the raster order.

    The wave's a tiles cover r_m distinct A row panels and r_n B column panels; every
    other panel read can hit, while its k-block is still in the effective L2
    L2e = l2_effective_fraction * L2 (geometry.wave_hit_rate has the equations).
    With ``multicast_reads`` the rate is counted among the reads the L2 sees after cluster
    multicast (a cluster row of cn CTAs reads an A box once): the share of the wave's
    multicast-reduced requests (``cta_bytes``) that hit. Counted among every CTA's reads
    instead (off), a read multicast replaces is a hit taken off the requests twice, and a
    cluster's DRAM bytes come out below its unique bytes (benchmarks/ring_depth_probe.py
    --schedules: 1x2 clusters of M = TM, where every A read hits anyway, ran at the 1x1
    rate; the model had 0.75x its DRAM time).
    Off: h = ``l2_hit_rate`` (the global knob, 0 by default)."""
    if not x.on.l2_reuse:
        return np.asarray(x.l2_hit_rate, dtype=np.float64)
    g = x.grid
    l2e = x.c.l2_effective_fraction * x.l2_bytes
    return stream_k_offsets(x, w, l2e, span_hit_rate(w.bytes, l2e, x.c.l2_window_kblocks, x.c.l2_skew_kblocks,
                                                     g.d_m, g.d_n, multicast=x.on.multicast_reads))


# stream_k_offsets' fixed point: its steps from h = 0 rise to the least fixed point
# (the hit rate only grows the hold, the hold only the hit rate); a row stops once it
# moves by no more than SPREAD_TOL, at most SPREAD_MAX_STEPS (per row: the rate of a
# row does not depend on the rows evaluated with it)
SPREAD_TOL = 1e-4
SPREAD_MAX_STEPS = 100


def stream_k_offsets(x: Inputs, w: Span, l2e, plain):
    """The L2 hit rate of a stream-K wave whose workers start inside tiles (parts > 1).

    Worker w starts at iteration w*I, at k offset w*I mod KT of its tile, so its CTAs
    read their panels at offsets of their own, not the few k-blocks the CTAs of a
    data-parallel wave drift apart: a read hits only if a worker ahead on the same panel
    read that k-block at most the L2's hold ago (geometry.stream_k_reuse tabulates the
    share F(hold) of such reads from the workers' positions). The L2 keeps the last
    hold = L2e / (a*(TM'/cn + TN'/cm)*TK*b*(1 - h)) k-blocks of the wave's stream (only
    misses bring new bytes), so
        h = (cm*TM'*F_A(hold) + cn*TN'*F_B(hold)) / (cm*TM' + cn*TN'),
    its least fixed point, stepped to from h = 0, and at most ``plain`` where
    ``stream_k_ceiling`` is on: the workers' tile boundaries, partial writes and fix-ups
    shift them against each other, so the lags their starting points give are not kept
    and the wave shares no more than one whose CTAs read in step
    (benchmarks/stream_k_picks_probe.py, lent H200: no stream-K run beat its
    data-parallel twin by more than 3% under any raster; 1152 x 8640 x 14591 in 128x256
    tiles, row raster, 1.36x its twin, where the fixed point's 0.70 said 0.71x). Off, or on
    other rows: ``plain`` (the wave's panels as if its CTAs ran in step,
    geometry.span_hit_rate)."""
    g = x.grid
    on = (x.stream_k > 0) & (g.sk_parts > 1)
    if not x.on.stream_k_offsets or not np.any(on):
        return plain
    rows = np.flatnonzero(np.broadcast_to(on, x.shape))  # the rows it changes, the only ones stepped

    def at(v):
        return np.broadcast_to(v, x.shape).ravel()[rows]

    tm, tn = at(w.bytes.rows_m), at(w.bytes.rows_n)
    cm, cn = at(x.cluster_m), at(x.cluster_n)
    rows_m, rows_n = cm * tm, cn * tn
    stream = at(w.a1) * sum(box_bytes(tm, tn, at(x.tile_k), cm, cn, at(x.in_bytes), at(x.sf_bytes_per_elem)))
    l2e = at(l2e)
    reuse_m, reuse_n = (table.reshape(-1, len(HOLDS))[rows] for table in (g.sk_reuse_m, g.sk_reuse_n))
    h = np.zeros(len(rows))
    moving = np.arange(len(rows))  # each row steps until it moves by SPREAD_TOL or less, whatever rows it is with
    for _ in range(SPREAD_MAX_STEPS):
        hold = l2e[moving] / np.maximum(stream[moving] * (1.0 - h[moving]), 1.0)
        new = (rows_m[moving] * at_hold(reuse_m[moving], hold) + rows_n[moving] * at_hold(reuse_n[moving], hold)) \
            / (rows_m[moving] + rows_n[moving])
        done = np.abs(new - h[moving]) <= SPREAD_TOL
        h[moving] = new
        moving = moving[~done]
        if not len(moving):
            break
    out = np.array(np.broadcast_to(plain, x.shape), dtype=np.float64)
    out.ravel()[rows] = np.minimum(h, out.ravel()[rows]) if x.on.stream_k_ceiling else h
    return out


def at_hold(table, hold):
    """A (rows x HOLDS) table of geometry.stream_k_reuse at each row's ``hold``,
    interpolated linearly in log2(hold + 1)."""
    top = len(HOLDS) - 1
    pos = np.clip(np.log2(np.maximum(hold, 0.0) + 1.0), 0.0, top)
    pos = np.broadcast_to(pos, table.shape[:1])
    i0 = np.minimum(np.floor(pos).astype(np.int64), top - 1)
    frac = pos - i0
    lo = np.take_along_axis(table, i0[:, None], axis=1)[:, 0]
    hi = np.take_along_axis(table, i0[:, None] + 1, axis=1)[:, 0]
    return lo + frac * (hi - lo)


def bandwidth_sharing(x: Inputs, w: Span, h, req, loaded, lines):
    """(per-k-block transfer time x of one CTA, whether the L2 term binds) in the wave ``w`` of a CTAs.

    DRAM and L2 bandwidth are shared by the a CTAs of the wave:
        x(a) = max(a*Bs*(1 - h) / dram_eff_bytes_per_us, L2w(a) / l2_bytes_per_us)
    with L2w(a) the bytes the L2 serves per k-block (``coalesced_reads``) plus the split
    rows' extra requests (``row_alignment``), which are each CTA's own.
    Off: x = Bs / load_bytes_per_us (each CTA has its own fitted share, as in ws-stage)."""
    req_eff = req * loaded
    if not x.on.bandwidth_sharing:
        return req_eff / x.load_bytes_per_us, np.zeros(x.shape, dtype=bool)
    a = w.a
    x_dram = a * req_eff * (1.0 - h) / x.c.dram_eff_bytes_per_us
    x_l2 = (coalesced_reads(x, w, loaded) + a * req_eff * (lines - 1.0)) / x.c.l2_bytes_per_us
    return sm_load_cap(x, np.maximum(x_dram, x_l2), req), x_l2 > x_dram


def smem_limit(x: Inputs, t_math, t_smem):
    """The consumer's stage time Tc: shared-memory bandwidth can bind before the tensor cores.

    Per k-block TMA writes (TM + TN)*TK*b bytes to the ring and wgmma reads them: each
    m64nTNk16 instruction reads its 64 x 16 A slice and the whole TN x 16 B slice, so B
    is read TM/64 times (T_SMEM, compose.smem_time). Tc = max(T_MATH, T_SMEM).
    Off: Tc = T_MATH."""
    return np.maximum(t_math, t_smem) if x.on.smem_limit else t_math


def latency_term(x: Inputs, t_load, t_c, lat_wait, h):
    """A ring slot's round trip shared by the slots that rotate through it,
        (lat_ring + lat_wait + Tc + w) * (1 / (B - h) + 1 / B_sat)
    (``slot_release``: the round trip is the load's latency and the multiply, and h of the
    B slots are held; ``ring_saturation``: the 1 / B_sat part; w: ``issue_wait``). ``lat_wait``: what the
    round trip waits beyond lat_ring, the zero fill's latency lat_oob (``boundary_fill``),
    the queue of slots in flight lat_q (``ring_queue``) and the split rows' extra requests
    lat_s (``split_row_latency``); ``h`` the wave's L2 hit rate h_L2 (``ring_latency``). Both off:
    (lat_ring + lat_wait + x + Tc) / B, a cycle of load latency, transfer and multiply over
    the B slots."""
    round_trip = ring_latency(x, h) + lat_wait + t_c + (0.0 if x.on.slot_release else t_load) + issue_wait(x, t_c)
    return round_trip * (1.0 / free_slots(x) + ring_saturation(x))


# wgmmas one tensor-core sub-partition holds issued ahead of its multiply
# (benchmarks/ring_depth_probe.py --release: a consumer issuing 16 a k-block waits for
# half of them, one issuing 8 or fewer for none)
WGMMA_QUEUE = 8.0


def issue_wait(x: Inputs, t_c):
    """What a two-stage ring's round trip waits for its consumer to issue the next k-block
    (``issue_wait``), w = max(0, 1 - Q / n) * Tc at B = 2, else 0.

    A consumer frees k-block j - 1's slot only after it has issued j's wgmmas
    (kernels/hopper.cu). Each tensor-core sub-partition takes n = (TK * b / 32) *
    (TM / 64) of them a k-block (four k16 steps of TM / 64 row blocks, whatever the
    schedule: ping-pong's warpgroups take turns) and holds Q = ``WGMMA_QUEUE`` issued
    ahead of its multiply, so issuing n > Q waits for the first n - Q to run: (1 - Q/n)
    of the multiply, half of it for 256-row tiles (n = 16), nothing for the others (n <=
    8; 256-row tiles are ws-hopper's only). With two slots that wait sits in the round
    trip of the one slot in flight: ring_depth_probe.py --release, 32 CTAs, two stages,
    256x128 1.109 -> 0.834 us a k-block and 256x64 0.890 -> 0.752 freeing the slot before
    the issue (0.46 and 0.44 of their multiply), the other tiles about 0.05 us. From three
    stages the next slot is already in flight (256x128 0.09 us of 0.60 at three, none at
    four), and the development rows preferred the wait at two stages only
    (benchmarks/MODEL_ACCURACY.md, issue 17 step 27). No constant. Off: 0."""
    if not x.on.issue_wait:
        return 0.0
    per_sub_partition = (x.tile_k * x.in_bytes / 32.0) * (x.tile_m / 64.0)
    share = np.maximum(0.0, 1.0 - WGMMA_QUEUE / per_sub_partition)
    return np.where(x.stages == 2, share * t_c, 0.0)


def free_slots(x: Inputs):
    """The ring's slots a round trip rotates through, B - h (``slot_release``).

    The consumer issues k-block j's wgmma, waits for j - 1's (``wgmma.wait_group 1``,
    kernels/hopper.cu) and only then frees j - 1's slot, so about one slot of the B is
    held while the next k-block is multiplied: h = ``held_slots`` (at most B - 1: a ring
    of one slot is serial). The round trip of a slot is then the load's latency and the
    multiply; its share of the wave's bandwidth is the queue it waits in (``ring_queue``)
    and the transfer term x of the period, not a third time in the cycle.
    benchmarks/ring_depth_probe.py's 32-CTA rings: (L0 + Tc) / (B - 1) with L0 about
    0.75 us; on the development data the held share fitted 0.8 slots with
    ``ring_saturation`` at step 25, and 0.58-0.59 for 128- and 256-row tiles since step
    41 gave the 64-row ones their own. A 64-row tile's multiply is short: its consumer
    waits for the next k-block with the slot still held, about a period, so its share is
    ``short_tile_held_slots`` (the round trip counts the multiply too, so the share the
    data fit falls as the multiply grows). Off: B slots, and x in the round trip."""
    if not x.on.slot_release:
        return x.stages.astype(np.float64)
    held = np.where(x.tile_m < 128, x.c.short_tile_held_slots, x.c.held_slots)
    return x.stages - np.minimum(held, x.stages - 1.0)


def ring_saturation(x: Inputs):
    """1 / B_sat (``ring_saturation``): each slot a CTA keeps in flight lengthens its own
    slots' round trip, by 1 / ``ring_saturation_slots`` of it, so the latency term
        round_trip * (1 / (B - h) + 1 / B_sat) = round_trip * (1 + (B - h) / B_sat) / (B - h)
    falls more slowly than 1 / (B - h) and no ring is shorter than round_trip / B_sat a
    k-block: one SM's TMA path serves its own slots in turn (the GPU-wide queue is
    ``ring_queue``'s). On the development data the in-sample within-shape error of the
    latency-bound rows ran 0.84 -> 1.01x from 4 to 8 stages of 16 KB slots without it
    (benchmarks/MODEL_ACCURACY.md, step 25); ring_depth_probe.py's rings flatten from six
    slots on. Off: 0."""
    return x.c.ring_saturation_slots ** -1.0 if x.on.ring_saturation else 0.0


def ring_queue(x: Inputs, a, slot_bytes, h):
    """Time lat_q that a ring slot's round trip waits behind the ring slots in flight on
    the GPU (``ring_queue``): each of the wave's ``a`` CTAs keeps its B slots of
    ``slot_bytes`` (its A and B boxes of a k-block, after multicast) in flight, and a load
    queues behind them; one the L2 serves leaves the queue sooner, so with the wave's L2
    hit rate h = ``h`` (``l2_reuse``) and q = ``queue_hit_share``
        lat_q(a) = ring_queue_us_per_mb * a * B * slot_bytes / 1e6 * ((1 - h) + h * q),
    in the period's latency term only (the fill's first loads are at the head of the
    queue). benchmarks/ring_depth_probe.py --ctas: with 1-8 CTAs of one tile row a slot's
    round trip is 0.76-0.92 us, by 64 CTAs 1.3-1.9x that, 0.04-0.12 us for each MB of slots
    in flight, while the multiply alone does not move; the unclustered 64-row rings of
    more than 15 MB in flight at a hit rate above 0.85 ran 0.93x a queue that charged hits
    as misses, in sample on both GPUs (benchmarks/MODEL_ACCURACY.md, issue 17 step 40).
    Both constants carry to another GPU as they are. Off: 0."""
    if not x.on.ring_queue:
        return np.zeros(x.shape)
    share = (1.0 - h) + h * x.c.queue_hit_share
    return x.c.ring_queue_us_per_mb * a * x.stages * slot_bytes / 1e6 * share


def split_row_latency(x: Inputs, slot_bytes, lines):
    """Time lat_s that the split rows' extra requests add to a ring slot's round trip
    (``split_row_latency``). A box row off its 128-byte line or 32-byte sector is more
    than one L2 request (``lines``, ``row_alignment``'s factor), and one SM's TMA path
    issues every request of the slot's A and B boxes before the slot is full, so with the
    aligned requests moving at ``sm_load_bytes_per_us`` (``sm_load_cap``) the extra ones
    take
        lat_s = slot_bytes * (lines - 1) / sm_load_bytes_per_us
    in the period's latency term (the L2's share of the same requests stays in the
    wave's L2 term, ``bandwidth_sharing``); a cluster's CTA issues only its slice of a
    multicast box, so its lat_s is smaller. benchmarks/ring_depth_probe.py --pitch: with
    2-32 CTAs a ring whose rows sit 16 bytes off their sector (K = 8184) runs 6-42%
    slower than at K = 8192, where the L2 term alone changes nothing.
    No constant of its own. Off (or an aligned pitch): 0."""
    if not x.on.split_row_latency:
        return np.zeros(x.shape)
    return slot_bytes * (lines - 1.0) / x.c.sm_load_bytes_per_us


def pipelining(x: Inputs, t_load, t_c, lat_wait, z_mc, h):
    """(K loop of one tile after its fill, steady period) with the loop pipelined through the ring.

    The steady period is the ring's cycle mean, the slowest of its terms
        Pk = max(Tc, x, z_mc, (lat_ring + lat_wait + Tc) * (1 / (B - h) + 1 / B_sat))
    (the last the ring's round trip over its free slots, lat_wait = lat_oob + lat_q + lat_s:
    see ``latency_term``, ``h`` the wave's L2 hit rate; z_mc = ``oob_multicast``'s term)
    taken softly where ``ring_jitter`` is on (times ``cluster_lockstep``'s factor), and the
    loop after the fill takes (S - 1)*Pk + Tc.
    Off: the whole K extent is one block (gemm-model): max(S*x, S*Tc) - x after the fill."""
    s = x.grid.k_blocks
    if not x.on.pipelining:
        return np.maximum(s * t_load, s * t_c) - t_load, np.maximum(t_load, t_c)
    terms = (t_c, t_load, z_mc, latency_term(x, t_load, t_c, lat_wait, h))
    period = ring_jitter(x, *terms) * cluster_lockstep(x)
    return (s - 1) * period + t_c, period


def oob_multicast(x: Inputs, a):
    """z_mc, the time per k-block that a wave's wholly out-of-bounds multicast slices take.

    A multicast slice that holds no row of the matrix (geometry.oob_slices) is not skipped
    like a lone box past the edge: its cluster still writes its zeros to every sharer,
    once per k-block, through a path the whole GPU shares, so a deeper ring does not hide
    it and its cost grows with the wave's slices (benchmarks/oob_box_probe.py: 2x2
    clusters of 128x64 tiles take 0.31 / 0.41 / 0.57 / 0.73 us a k-block with 0 / 1 / 2 / 3
    such slices each, at 4 and at 8 stages; zero_fill_rows_probe.py: 1x2 clusters with one
    add nothing with 16 clusters and 0.2-0.3 us with 66). With the wave's a/cs clusters
    spread over the unit rows and columns, the share 1/units_m of them on the last unit
    row holds oob_a slices, 1/units_n on the last column oob_b:
        z_mc = (a/cs) * (oob_a * TM/cn / units_m + oob_b * TN/cm / units_n) * TK * b
               / oob_multicast_bytes_per_us,
    a term of the ring's period of its own and a part of the fill. Off: 0."""
    if not x.on.oob_multicast:
        return np.zeros(x.shape)
    g = x.grid
    a_bytes, b_bytes = cta_bytes(x)
    slices = g.oob_a * a_bytes / g.units_m + g.oob_b * b_bytes / g.units_n
    return (a / (x.cluster_m * x.cluster_n)) * slices / x.c.oob_multicast_bytes_per_us


def ring_jitter(x: Inputs, *terms):
    """The ring's period from its terms (Tc, x, z_mc, L/B): their p-norm,
        Pk = (Tc^p + x^p + z_mc^p + (L/B)^p)^(1/p),   p = ``period_sharpness``.
    The max-plus cycle mean max(Tc, x, L/B) holds for fixed times; a real k-block's load
    and multiply vary from one to the next, and the ring of B slots absorbs only part of it,
    so the loop runs slower than its slowest term where two terms are close, and the stage
    count matters on both sides of L/B = max(Tc, x) (at p = 3.75, fitted on the H100, two
    equal terms give 1.20x, a term half the other 1.02x). Off: the hard max (p -> inf)."""
    top = np.maximum.reduce(np.broadcast_arrays(*terms))
    if not x.on.ring_jitter:
        return top
    p = x.c.period_sharpness
    safe = np.where(top > 0, top, 1.0)
    return top * sum((t / safe) ** p for t in terms) ** (1.0 / p)


# expected largest of n independent standard normal draws (n = cluster size)
MAX_OF_NORMALS = {1: 0.0, 2: 0.5642, 4: 1.0294, 8: 1.4236, 16: 1.7660}


def cluster_lockstep(x: Inputs):
    """Factor on the steady period Pk: the CTAs of a cluster share every multicast ring
    slot (a slot is refilled for all of them once each has released it), so a k-block
    takes the slowest of their periods. With sigma = ``cluster_jitter`` the relative spread
    of one CTA's period, the expected slowest of cs CTAs is
        Pk * (1 + sigma * E[max of cs standard normals])    (E = 0, 0.56, 1.03 for cs = 1, 2, 4).
    Off (or cs = 1): 1."""
    if not x.on.cluster_lockstep:
        return 1.0
    cs = x.cluster_m * x.cluster_n
    spread = np.select([cs == n for n in MAX_OF_NORMALS], list(MAX_OF_NORMALS.values()), MAX_OF_NORMALS[16])
    return 1.0 + x.c.cluster_jitter * spread


def cluster_sync(x: Inputs, waves):
    """What a kernel's clusters add to its time for starting and leaving together: a
    cluster is launched on one GPC when all its SMs are free; its CTAs meet at a
    cluster-wide barrier after initialising the ring's barriers (before any remote arrive
    or multicast), the first k-block lands only when every peer has issued its multicast
    slice, and they meet again before they exit (while a peer may still write into them):
        cluster_sync_us * (1 on a persistent grid, else the waves)   for cs > 1.
    Off (or cs = 1): 0. Measured by benchmarks/cluster_probe.py (one k-block, 128x128
    tiles, H100): 1.5 us per wave for clusters of 2, once on a persistent grid; the
    launch and barriers alone (``empty`` mode) are 0.2-0.35 us of it."""
    if not x.on.cluster_sync:
        return 0.0
    clustered = x.cluster_m * x.cluster_n > 1
    return np.where(clustered, x.c.cluster_sync_us * np.where(x.persistent, 1, waves), 0.0)


def power_clock(x: Inputs):
    """What the power cap's clock drop adds to a kernel: its tensor cores' busy time at the
    boost clock, Tb = the padded tiles' flops / (math_flops_per_us * SMs), stretched by the
    share of the clock the cap takes once the power limiter has acted:
        power_clock_drop * Tb * (1 - exp(-Tb / power_time_constant_us))
    A run of heavy tensor-core work reaches the card's power cap and the SM clock falls
    (benchmarks/power_probe.py: every heavy configuration at the cap within 50 ms, the
    fastest tilings keeping 0.84-0.91 of their clock on the H100); a kernel of some us, or
    one that waits on memory, finishes before its multiplies have drawn that energy. Tb
    does not depend on the ring depth, so neither does this term (the optimizer's split
    time = A + K(B) holds).    Off: 0."""
    if not x.on.power_clock:
        return np.zeros(x.shape)
    busy = 2.0 * x.m * x.n * x.k / x.grid.useful / (x.math_flops_per_us * x.sms)
    return x.c.power_clock_drop * busy * -np.expm1(-busy / x.c.power_time_constant_us)


class Padding(NamedTuple):
    loaded: np.ndarray | float  # share of the requested box bytes TMA moves
    work_scale: np.ndarray | float  # factor on fill and K loop


def padding(x: Inputs) -> Padding:
    """Sizes that are not tile multiples.

    The kernel computes whole tiles: wgmma and shared memory work on padded tiles
    (S = ceil(K/TK) and full-tile stage times), while TMA skips out-of-bounds bytes, so a
    CTA's requested bytes scale by the useful share
        u_ab = (M/(tiles_m*TM)*TM + N/(tiles_n*TN)*TN) / (TM + TN) * K/(S*TK).
    (C's rows are padded to 16 bytes, ``kernels.launch``, so the epilogue stores 16 bytes
    a lane at every N: no 2-byte fallback to model.)
    Off: an idealized kernel that wastes nothing: fill and K loop scale by the useful
    fraction u = M*N*K / (tiles_m*TM * tiles_n*TN * S*TK) and bytes are not reduced."""
    if not x.on.padding:
        return Padding(1.0, x.grid.useful)
    return Padding(x.grid.useful_ab, 1.0)


def sm_load_cap(x: Inputs, t_load, req):
    """One SM's TMA path moves whole boxes, zero-filled overhang included:
        x >= Bs / sm_load_bytes_per_us.    Off: no such bound."""
    return np.maximum(t_load, req / x.c.sm_load_bytes_per_us) if x.on.sm_load_cap else t_load


def first_slot(x: Inputs, t_load, req):
    """The fill's transfer x of a tile's first slot, ``req`` bytes of boxes: the multiply
    waits for one SM's TMA engine to issue every row of them, the split rows' extra
    requests one after another (``engine_rows``):
        max(x, Bs / sm_load_bytes_per_us + split_rows(x)).
    A later slot's rows are issued while earlier slots are multiplied, so in the ring's
    period only the shared L2's share of them stays (``row_alignment``,
    ``split_row_latency``). Off: x."""
    if not x.on.engine_rows:
        return t_load
    return np.maximum(t_load, req / x.c.sm_load_bytes_per_us + split_rows(x))


def split_rows(x: Inputs):
    """One SM's TMA engine's time for the extra requests of one k-block's box rows that
    start off their 32-byte sector (``engine_rows``):
        R * sector_off * split_row_engine_us,   R = TM/cn + TN/cm
    the rows a CTA issues (its slices of multicast boxes). The engine splits such a row
    into more requests and issues them one after another, whatever the L2 does with them.
    benchmarks/short_k_probe.py --rows (lent H200, 16 persistent CTAs of 128x128 ping-pong
    tiles with TMA stores, where nothing else is shared): every other row 16 bytes into its
    sector costs 0.33 us a tile of one k-block (1.8-2.6 ns a split row), and more with
    each k-block (1.9 us at 16), which at 16 CTAs only the engine can carry; on the
    development data's full waves the shared L2's terms carry the per-k-block part, and
    this once-a-tile part is what they lacked (benchmarks/MODEL_ACCURACY.md, step 38).
    Off (or rows on their sectors): 0."""
    if not x.on.engine_rows:
        return np.zeros(x.shape)
    rows = x.tile_m / x.cluster_n + x.tile_n / x.cluster_m
    return rows * x.grid.sector_off * x.c.split_row_engine_us


def line_factor(k, in_bytes, line_cost=1.0, sector_cost=0.0):
    """L2 requests per 128-byte box row, relative to an aligned one.

    With the shares of rows off their line and off their sector (geometry.line_shares:
    the pitch between rows is pad_k(K)*b), a row off its line straddles two lines
    (``line_cost`` extra requests); one off its sector also spans 5 sectors and is split
    again (``sector_cost``):
        1 + line_cost * (1 - gcd(p, 128)/128) + sector_cost * (1 - gcd(p, 32)/32)."""
    return lines_of(*line_shares(k, in_bytes), line_cost, sector_cost)


def lines_of(line_off, sector_off, line_cost, sector_cost):
    """``line_factor`` from the shares of rows off their line and sector."""
    return 1.0 + line_cost * line_off + sector_cost * sector_off


def row_alignment(x: Inputs):
    """Requests per box row ("lines") for the shared L2's request-bound term.

    The split rows cost the L2, which every SM shares, not one SM's TMA path
    (``sm_load_cap``): ``line_factor`` with the fitted line_split_cost and
    sector_split_cost. Off: lines = 1."""
    if not x.on.row_alignment:
        return 1.0
    return lines_of(x.grid.line_off, x.grid.sector_off, x.c.line_split_cost, x.c.sector_split_cost)


def ring_latency(x: Inputs, h):
    """The latency of a ring slot's round trip, lat_ring, in a wave of L2 hit rate ``h`` (h_L2).

    The consumer releases the slot, the producer's mbarrier wait wakes, TMA issues, the
    load crosses a loaded L2/NoC and complete_tx wakes the consumer: longer than the
    microbenchmarks' load latency, lat_ring = load_latency_us + the extra of
    ``hit_latency``. It enters the period's latency term only; the fill keeps
    load_latency_us. It is what lets deep rings beat shallow ones on load-bound 64-row
    tiles. Off: lat_ring = load_latency_us."""
    lat = x.load_latency_us
    return lat + hit_latency(x, h) if x.on.ring_latency else lat


def hit_latency(x: Inputs, h):
    """The round trip's extra beyond the load latency (``ring_latency``) by where the
    slot's bytes come from: a load the L2 serves returns sooner than one from DRAM, so
    with the wave's hit rate h_L2 = ``h`` (``l2_reuse``)
        extra = (1 - h_L2) * ring_extra_latency_us + h_L2 * hit_extra_latency_us.
    Fitted on the development data, a hit's extra is 0.17-0.21 us shorter than a miss's
    on the H100 and the H200 (benchmarks/MODEL_ACCURACY.md, step 30). Off:
    ring_extra_latency_us, whatever h."""
    if not x.on.hit_latency:
        return x.c.ring_extra_latency_us
    return (1.0 - h) * x.c.ring_extra_latency_us + h * x.c.hit_extra_latency_us


def boundary_fill(x: Inputs, a, slots):
    """Time lat_oob that zero-filled box rows in flight add to a ring slot's round trip.

    A TMA box that overhangs M or N takes the boundary-check path and zero-fills its
    out-of-bounds rows. The zero fill queues on a path the whole GPU shares, so the latency
    it adds follows the zero-filled rows in flight on the GPU, every ring slot of every
    CTA of the wave, and levels off once that queue is full
    (benchmarks/zero_fill_rows_probe.py: at 32 CTAs hardly any cost, at 132 up to about
    2 us added to the round trip; 2 and 4 stages on one curve of the rows in flight). With
    o the tile-average overhanging rows of a CTA's A and B boxes per k-block and
    R = a * o * slots,
        lat_oob(a) = oob_latency_us * R^2 / (R^2 + oob_half_rows^2),
    in the period's latency term with slots = B (every slot of the ring in flight), in the
    fill with slots = 1: the first k-block's boxes are at the head of the queue, behind
    the other CTAs' first boxes only (and so the ring depth enters the kernel's time
    through the period alone, as the optimizer's split needs). The rows that overhang K
    join them (``k_tail_rows``). Off: lat_oob = 0."""
    if not x.on.boundary_fill:
        return np.zeros(x.shape)
    g = x.grid
    oob_rows = ((g.tiles_m * x.tile_m - x.m) * g.tiles_n + (g.tiles_n * x.tile_n - x.n) * g.tiles_m) \
        / g.tiles.astype(np.float64) + k_tail_rows(x)
    r2 = (a * oob_rows * slots) ** 2
    return x.c.oob_latency_us * r2 / (r2 + x.c.oob_half_rows ** 2)


def k_tail_rows(x: Inputs):
    """Rows per k-block, on the tile average, of a CTA's A and B boxes that overhang K.

    Where K is not a multiple of TK, the last of a tile's KT k-blocks reads boxes whose
    columns past K are zero-filled: every row of both boxes takes the zero-fill path, as
    a row past M or N does (``boundary_fill``). Averaged over the tile's k-blocks,
        o_K = (TM + TN) * [K mod TK != 0] / KT.
    benchmarks/k_tail_probe.py (lent H200): one k-block of 16 or 32 columns ran 1.11-1.23x
    the time of one of 64 over 8 waves of 128x128 and 128x256 tiles, 1.08-1.14x in one
    wave, though it moves a quarter to half the bytes. Off: 0."""
    if not x.on.k_tail_fill:
        return 0.0
    return (x.tile_m + x.tile_n) * (x.k % x.tile_k != 0) / x.grid.k_tiles.astype(np.float64)


def coalesced_reads(x: Inputs, w: Span, loaded):
    """Bytes the L2 serves per k-block for the wave ``w`` (tiles t0 .. t0+a-1).

    Reads of one panel k-block that CTAs close in launch order issue at the same time are
    served once; panels shared only by CTAs far apart are read by each. With d_m, d_n the
    launch-order distance between consecutive users of an A / B panel
    (geometry.reuse_distance), c = exp(-(d - 1) / coalesce_distance) and r_m, r_n the
    wave's distinct panels:
        L2w(a) = [(c_m*r_m + (1 - c_m)*a)*TM/cn + (c_n*r_n + (1 - c_n)*a)*TN/cm]*TK*b*u_ab
    Off: every CTA's request is served: L2w(a) = a*Bs*u_ab."""
    a_bytes, b_bytes = cta_bytes(x)
    a = w.a
    if not x.on.coalesced_reads:
        return a * ((a_bytes + b_bytes) * loaded)
    g = x.grid
    c_m = np.exp(-(g.d_m - 1) / x.c.coalesce_distance)
    c_n = np.exp(-(g.d_n - 1) / x.c.coalesce_distance)
    r_m, r_n = w.r_m * w.mult, w.r_n * w.mult  # distinct panel segments (split-K: K segments)
    part_a = (c_m * np.minimum(r_m, a) + (1 - c_m) * a) * a_bytes
    part_b = (c_n * np.minimum(r_n, a) + (1 - c_n) * a) * b_bytes
    return (part_a + part_b) * loaded


def consumer_warpgroups(x: Inputs):
    """Share of the tensor cores' rate the consumer warpgroups sustain.

    A 64-row tile has one consumer warpgroup, which keeps the tensor cores busy only
    ``one_wg_math_share`` of the time; 128- and 256-row tiles have two:
        T_MATH = 2*TM*TN*TK / (math_flops_per_us * share) + math_latency_us.
    Off: share 1."""
    if not x.on.consumer_warpgroups:
        return 1.0
    return np.where(x.tile_m < 128, x.c.one_wg_math_share, 1.0)


def cta_bytes(x: Inputs):
    """(A bytes, B bytes) a CTA requests per k-block, block-scale factors included, after
    cluster multicast: TM/cn * TK * (b + sf) and TN/cm * TK * (b + sf) (geometry.cta_bytes,
    in the grid)."""
    return x.grid.a_bytes, x.grid.b_bytes
