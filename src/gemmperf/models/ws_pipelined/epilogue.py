"""The epilogue's effects of ws-pipelined: what a tile's stores of C cost, one function each
with its switch (``x.on.<name>``), as in effects.py (the K loop's effects) and kshare.py
(split-K's and stream-K's reductions).

The stores of the part of a tile inside C (``partial_stores``), the direct epilogue's
per-thread work (``epilogue_threads``), C reaching DRAM at its write rate
(``dram_writes``), the TMA-store epilogue's own cost and its exit (``tma_store``,
``store_exit``), ping-pong consumers hiding a tile's epilogue (``pingpong_overlap``) as far
as the SM's one TMA engine lets them (``tma_engine``), and a second consumer warpgroup
slowing a thread's direct stores (``second_warpgroup``).
compose.epilogue puts them together.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from .effects import split_rows
from .inputs import Inputs


class Stored(NamedTuple):
    tile: np.ndarray  # bytes of C the fullest tile of a wave stores to global memory
    share: np.ndarray | float  # the in-bounds share of the tiles' bytes of C (a wave's DRAM writes)


def partial_stores(x: Inputs) -> Stored:
    """The epilogue stores only the part of a tile inside C: the direct epilogue's stores
    are predicated on row < M and col < N, and a TMA store's box is clipped at C's edges
    (kernels/hopper.cu), while the accumulators are converted, and staged in shared memory,
    whole. A wave's critical path is its fullest tile, which stores
        min(TM, M) * min(TN, N16) * ob   bytes
    (N16: N padded to 16 bytes, as C's rows are, ``padding``), and the wave's DRAM writes
    are the in-bounds share M*N16 / (tiles_m*TM * tiles_n*TN) of its tiles' bytes. So a
    tile of 128 rows over a decode GEMM of M = 8 stores 8 rows. Off: the whole tile,
    share 1."""
    if not x.on.partial_stores:
        return Stored(tile=x.tile_m * x.tile_n * x.out_bytes, share=1.0)
    return Stored(tile=x.grid.stored_tile, share=x.grid.useful_c)  # geometry.stored_c, once per grid


def epilogue_threads(x: Inputs):
    """Ea, the direct epilogue's per-thread work: each consumer thread converts its fp32
    accumulators, exchanges them within its quad (shuffles) and stores them 16 bytes at a
    time, one after another, so the time grows with the accumulators one thread holds,
        Ea = epilogue_acc_us * WG_M * TN / 128   (``Inputs.accumulators``),
    WG_M the rows one consumer warpgroup holds: TM / 2 for a cooperative 128- or 256-row
    tile (two warpgroups), TM for a 64-row tile (one) and for ping-pong (each warpgroup a
    whole tile). A tile one warpgroup holds takes twice the time of the same tile split
    over two, where the store terms see the same bytes. The epilogue-only microbenchmark
    (t_epilogue_us) runs on accumulators that are compile-time zeros, so it need not see
    this. A thread in a CTA of two consumer warpgroups stores more slowly (``second_warpgroup``).
    Off: 0."""
    if not x.on.epilogue_threads:
        return 0.0
    return x.c.epilogue_acc_us * x.accumulators * second_warpgroup(x)


def second_warpgroup(x: Inputs):
    """How much longer a consumer thread's direct stores take in a CTA of two consumer
    warpgroups (ping-pong, whose second takes the other tiles, or a cooperative tile of
    128 rows or more, whose two share it) than in one of one (a cooperative 64-row tile):
    ``second_warpgroup_factor``, measured (benchmarks/schedule_probe.py --modes, lent
    H200: per 64 accumulators a thread stores, 1.62 us in a CTA of 256 threads, 1.93 us in
    one of 384, whether the second warpgroup works or waits). Off: 1."""
    if not x.on.second_warpgroup:
        return 1.0
    return np.where(x.consumer_warpgroups == 2, x.c.second_warpgroup_factor, 1.0)


def next_loop(x: Inputs):
    """k-blocks of the K loop a tile's epilogue overlaps: the next tile's, the work item's S
    (``Grid.k_blocks``), but at most a tile's KT, since a stream-K worker's range of S
    iterations holds several tiles, each a segment of at most KT k-blocks with an epilogue
    of its own."""
    return np.minimum(x.grid.k_blocks, x.grid.k_tiles)


def store_rounds(x: Inputs):
    """How many times a CTA stores a tile of C (``Grid.stores``): the kernel's W waves, or
    the tiles a stream-K worker's one wave finishes."""
    return np.maximum(x.grid.stores, 1)


def shared_sectors(x: Inputs):
    """s, the DRAM write time of C's bytes that leave the L2 over their plain time, where
    tiles share sectors: a row of C that starts off its 32-byte sector (``Grid.c_sector_off``:
    a share of the rows when pad_n(N) * ob is an odd multiple of 16) ends each tile's row
    in a sector the next tile's row begins, and the L2 merges the two halves by reading
    the sector back (rows off 64 or 128 bytes but on their sector cost nothing:
    benchmarks/store_probe.py --granule):
        s = 1 + [tiles_n > 1] * c_sector_off * shared_sector_cost
    A row's cost, not a sector's: the H100's probe (``--pitch``) ran 128-column tiles
    1.6-1.8x, 256-column ones 1.4-1.6x, far from the twice the extra that a cost per
    shared sector would give the narrower tiles. One tile column shares no sector with
    another. The cost grows with the time between a sector's two stores (the probe, against
    grouped order: row order 0.91x, column order 1.14x, stream-K in column or grouped order
    1.43-1.44x), which s does not see. Off: 1."""
    if not x.on.shared_sectors:
        return 1.0
    return 1.0 + (x.grid.tiles_n > 1) * x.grid.c_sector_off * x.c.shared_sector_cost


class Writes(NamedTuple):
    d: np.ndarray  # the wave's stores of C at the DRAM's write rate, less its share of the L2's buffer
    backlog: np.ndarray  # what of them the next tile's K loop does not hide
    end: np.ndarray  # the same for the kernel's last tile, which no next tile hides


def dram_writes(x: Inputs, a, t_c) -> Writes:
    """The time a wave's tiles of C take to reach DRAM, and what of it is exposed. Stores,
    from registers or by TMA, do not wait for DRAM: they drain behind the next tile's main
    loop (at least S*Tc; S at most a tile's KT, ``next_loop``), and the L2 holds up to a
    share f of itself of written lines before they must leave, spread over the W rounds of
    tiles a CTA stores (``store_rounds``):
        D(a) = (a*TM*TN*ob*u - f*L2 / W) * s / dram_write_bytes_per_us,   backlog(a) = D(a) - S*Tc,
    (f = l2_write_buffer_fraction; u the in-bounds share of the tiles' bytes,
    ``partial_stores``; s the cost of the sectors two tiles share, ``shared_sectors``);
    the last tile's stores have no next tile: the direct epilogue
    waits for all of D, the TMA-store one drains it after (compose.store_drain),
    so end = D or nothing. A kernel with little K and a large C runs at the write rate
    whatever its epilogue (benchmarks/store_probe.py: one k-block, C of 34-400 MB, TMA
    stores at 2.5 TB/s on the H100). Off: every tile's stores at the load rate, none
    hidden, D = backlog = end = a*TM*TN*ob*u / dram_eff_bytes_per_us."""
    out_tile = x.tile_m * x.tile_n * x.out_bytes * partial_stores(x).share
    if not x.on.dram_writes:
        d = a * out_tile / x.c.dram_eff_bytes_per_us
        return Writes(d=d, backlog=d, end=d)
    buffer = x.c.l2_write_buffer_fraction * x.l2_bytes / store_rounds(x)
    d = (a * out_tile - buffer) * shared_sectors(x) / x.c.dram_write_bytes_per_us
    staged = (x.epilogue == 1) & x.on.tma_store  # the TMA-store epilogue (tma_store)
    return Writes(d=d, backlog=d - next_loop(x) * t_c, end=np.where(staged, -np.inf, d))


def tma_store(x: Inputs, direct, out_tile, backlog):
    """The TMA-store epilogue: the consumers write the tile to a shared-memory staging
    buffer and hand it to the copy engine, which stores it while they go on with the next
    tile, so a tile's exposed epilogue is
        E_tma = max(tma_epilogue_us + TM*TN*ob / smem_bytes_per_us + exit, backlog)
    (its own fixed cost, which waits for no global store, and the staging writes, or the
    DRAM writes the next tile does not hide, ``dram_writes``; exit: a non-persistent CTA's
    wait for its stores to leave shared memory, ``store_exit``); the stores drain behind
    the next tile (compose.store_drain adds the last tile's).
    Off, or with the direct epilogue: ``direct`` (compose.epilogue)."""
    if not x.on.tma_store:
        return direct
    staged = x.c.tma_epilogue_us + out_tile / x.c.smem_bytes_per_us + store_exit(x, partial_stores(x).tile)
    if x.on.dram_writes:
        staged = np.maximum(staged, backlog)
    return np.where(x.epilogue == 1, staged, direct)


def store_exit(x: Inputs, out_tile):
    """A TMA-store CTA waits before it exits until the copy engine has read its staging
    buffers (the kernel's cp.async.bulk.wait_group.read 0), and an SM's next CTA of a
    non-persistent grid starts only then: every wave's epilogue holds the tile's drain
    from shared memory (``store_exit``), which a persistent grid pays once, after its last
    tile (compose.store_drain):
        non-persistent: Sb / store_bytes_per_us;   persistent: 0
    (Sb: the bytes the tile stores inside C, ``partial_stores``; ``out_tile`` here)
    Measured (benchmarks/store_probe.py --exit, H200): with one to four k-blocks a
    non-persistent wave costs 0.9-1.5 us more than its persistent twin's with TMA stores,
    0.6-1.1 us with direct ones (cooperative tilings); the difference follows the tile
    less than this drain does (MODEL_ACCURACY, step 24). Off: 0 (the drain behind the
    next CTA, as a persistent grid hides it behind its next tile)."""
    if not x.on.store_exit:
        return 0.0
    return np.where(x.persistent, 0.0, out_tile / x.c.store_bytes_per_us)


class Overlap(NamedTuple):
    on: np.ndarray  # rows where the ping-pong overlap applies
    epilogue: np.ndarray  # the kernel's exposed epilogue time on those rows


def pingpong_overlap(x: Inputs, e_full, e_final, t_c, backlog):
    """Ping-pong consumers on a persistent grid: the two consumer warpgroups take turns
    with whole tiles, so a tile's epilogue runs while the other warpgroup's main loop of
    the next tile keeps the tensor cores busy (at least S*Tc), and the producer fills the
    next tile's ring meanwhile; both warpgroups may be in their epilogues at once, so two
    tiles take max(2*S*Tc, S*Tc + E). Of a CTA's n tiles (W waves), all but the last hide
        exposed epilogue = (W - 1) * max(max(E - S*Tc, 0) / 2, backlog) + E_last,   later fills = 0
    (the DRAM writes, ``dram_writes``, bound every tile whichever warpgroup stores it; with
    TMA stores the SM's one TMA engine keeps the two warpgroups' epilogues apart,
    ``tma_engine``).
    (S*Tc and not the pipelined loop: the hiding is bounded by the math, which keeps the
    ring depth out of it.) Non-persistent ping-pong runs one tile a CTA: nothing to
    overlap. (W is ``Grid.stores``; stream-K runs the cooperative schedule only.) Off, or
    cooperative: None (compose keeps the cooperative terms)."""
    if not x.on.pingpong_overlap:
        return None
    on = (x.schedule == 1) & x.persistent
    s_tc = next_loop(x) * t_c
    hidden = np.maximum(0.5 * np.maximum(e_full - s_tc, 0.0), tma_engine(x, e_full, s_tc))
    if x.on.dram_writes:
        hidden = np.maximum(hidden, backlog)
    return Overlap(on=on, epilogue=np.maximum(x.grid.stores - 1, 0) * hidden + e_final)


def tma_engine(x: Inputs, e_full, s_tc):
    """What a ping-pong tile with TMA stores exposes beyond the other warpgroup's S*Tc:
    one SM's TMA engine issues the producer's loads and the consumers' TMA stores in turn
    (the stores of a warp's staging buffer wait for it, kernels/hopper.cu epilogue_tma's
    bulk_wait_read), so the two warpgroups' epilogues do not overlap each other and each
    tile holds the engine for its epilogue E, its S k-blocks' boxes and its first slot's
    split rows:
        exposed = max(E + S * Bs / sm_load_bytes_per_us + split_rows - S*Tc, 0)
    (Bs: the boxes' bytes a CTA loads per k-block, after multicast, zero fill included, as
    ``sm_load_cap``; split_rows: ``effects.split_rows``, once a tile as in the fill,
    ``engine_rows``). Measured (benchmarks/short_k_probe.py --ctas, lent H200: 797 x
    19040 x 64, 128x128 persistent ping-pong, 16 CTAs of 65 tiles each, where nothing
    else is shared): 0.94 us a tile with TMA stores against 2.98 with direct ones, about
    Tc + E, not the (Tc + E) / 2 of two epilogues at once. No constant of its own. Off, or
    the direct epilogue (whose stores leave from registers): 0."""
    if not (x.on.tma_engine and x.on.tma_store):
        return np.zeros(x.shape)
    engine = next_loop(x) * (x.grid.a_bytes + x.grid.b_bytes) / x.c.sm_load_bytes_per_us + split_rows(x)
    return np.where(x.epilogue == 1, np.maximum(e_full + engine - s_tc, 0.0), 0.0)
