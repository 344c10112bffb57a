"""ws-pipelined's effects of K shared among CTAs: split-K's and stream-K's partial tiles,
their reduction and fix-up, stream-K's slot lookup and tile boundaries inside a worker's
range. As in effects.py: one function each, with its switch (``x.on.<name>``), taking
the typed inputs ``x`` (inputs.Inputs) and returning the term it models; switched off,
the plain assumption (partials reduce for free, a worker's range is one K loop)."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from .inputs import Inputs


def partial_bytes(x: Inputs):
    """Bytes of one CTA's fp32 partial tile, Pb = min(TM, M) * TN * 4: only rows < M are
    written and read back (M = 1: one row); the largest tile's rows bound the wave."""
    return np.minimum(x.tile_m, x.m) * x.tile_n * 4.0


def reduction(x: Inputs, a, writes, reads, readers):
    """A CTA's share of a partial-tile reduction with ``a`` CTAs in flight: ``writes``
    partials written (each followed by its arrival), then ``reads`` partials read back by
    the last arriver, while ``readers`` CTAs of the wave read as many:
        writes * (max(Pb / partial_write_bytes_per_us, a*Pb / l2_bytes_per_us) + fixup_sync_us)
        + max(reads*(nb*partial_latency_us + L + Pb / partial_read_bytes_per_us), readers*reads*Pb / l2_bytes_per_us)
    (the workspace stays in L2: the wave's writes and reads share its rate). The read-back
    loop takes the partials one after another, each an L2 round trip before its bytes: a
    decode tile's partials (rows < M only: a few hundred bytes) cost their latency; L is
    stream-K's slot lookup before each partial's loads (``stream_k_lookup``); nb the round
    trips a partial's loads take (``fixup_batches``)."""
    pb = partial_bytes(x)
    l2 = x.c.l2_bytes_per_us
    write = np.maximum(pb / x.c.partial_write_bytes_per_us, a * pb / l2) + x.c.fixup_sync_us
    lat = x.c.partial_latency_us * fixup_batches(x)
    read = np.maximum(reads * (lat + stream_k_lookup(x) + pb / x.c.partial_read_bytes_per_us),
                      readers * reads * pb / l2)
    return writes * write + read


# partial values a consumer thread has in flight at once in the fix-up's read-back, beside
# its accumulators: split_k_probe.py --sass finds all 32 float2 loads of a 64-accumulator
# thread issued before its first add, 21-41 of a 128-accumulator thread's 64
FIXUP_BATCH = 64


def fixup_batches(x: Inputs):
    """Round trips a partial's read-back takes (``fixup_batches``): a consumer thread loads
    its share of a partial, one value per accumulator, FIXUP_BATCH at a time, so a tile
    whose threads hold 128 accumulators (64x256, 128x256, 256x128) waits for two batches,
    ceil(acc / FIXUP_BATCH), acc = ``Inputs.accumulators``. Measured (split_k_probe.py --fixup, one
    tile, P CTAs of one k-block, M = 16): one more partial costs 0.64 and 0.56 us on 128x256
    and 256x128 tiles, 0.38 on 128x128. Off: 1."""
    if not x.on.fixup_batches:
        return 1.0
    return np.maximum(np.ceil(x.accumulators / FIXUP_BATCH), 1.0)


def stream_k_lookup(x: Inputs):
    """The time stream-K's read-back spends on each partial before its loads issue
    (``stream_k_lookup``): finding the contributor's workspace slot (its first iteration,
    an integer division) and a 64-bit address for each load, stream_k_lookup_us; split-K's
    partials sit at offsets fixed when the kernel is compiled (one base and immediate
    offsets). Measured (benchmarks/stream_k_probe.py --fixup: one tile, P CTAs of one
    k-block each): split-K's time grows 0.29-0.38 us a partial from P = 4 to 16,
    stream-K's 0.50-0.65 up to P = 64. 0 off stream-K rows, or off."""
    if not x.on.stream_k_lookup:
        return 0.0
    return np.where(x.stream_k > 0, x.c.stream_k_lookup_us, 0.0)


def split_k_fixup(x: Inputs, a):
    """Split-K's fix-up on a wave's critical path (``split_k`` = Sk > 1): the Sk items of a
    tile run their K splits at once; each writes its partial and arrives, and the last to
    arrive reads all Sk partials back and then runs the epilogue, so each wave of ``a``
    CTAs (a/Sk of them finishing a tile) adds
        F_split(a) = ``reduction``(a, writes=1, reads=Sk, readers=a/Sk)
    to its epilogue. The items' shorter K loops (S = ceil(KT/Sk)) and their waves are the
    geometry's (geometry.py), on whatever this switch says. Off, or Sk = 1: 0 (partials
    reduce for free)."""
    return _split_k_reduction(x, a, writes=1.0)


def _split_k_reduction(x: Inputs, a, writes):
    """``reduction``(a, writes, reads=Sk, readers=a/Sk) on split-K rows with the fix-up on, else 0."""
    if not x.on.split_k_fixup:
        return np.zeros(x.shape)
    sk = x.split_k
    return np.where(sk > 1, reduction(x, a, writes, sk, a / sk), 0.0)


def split_k_overlap(x: Inputs, full_epilogue, full_read):
    """The (epilogue, read-back) time split-K's waves before the last do not spend, to take
    off their sum over the waves. A tile's Sk CTAs write their partials and arrive; only
    the last to arrive reads the partials back and runs the epilogue, and the other Sk - 1
    leave, so their SMs take the next wave's CTAs (or their next items) at once instead of
    waiting for the slowest of the wave. Every wave but the last thus costs its SMs
        (read + E) / Sk
    on average instead of read + E; the last wave's chain stays whole. Off (or Sk = 1):
    every wave waits for its slowest CTA, (0, 0)."""
    if not x.on.split_k_overlap:
        return 0.0, 0.0
    g = x.grid
    before_last = np.maximum(g.full_waves - (g.rem == 0), 0)
    share = np.where(x.split_k > 1, before_last * (1.0 - 1.0 / x.split_k), 0.0)
    return share * full_epilogue, share * full_read


def split_k_read(x: Inputs, a):
    """The part of ``split_k_fixup`` only the last arriver of a tile does: reading the Sk
    partials back."""
    return _split_k_reduction(x, a, writes=0.0)


class StreamKTerms(NamedTuple):
    segments: np.ndarray  # n_seg - 1: tile ends inside a worker's range (0 off stream-K rows)
    epilogues: np.ndarray  # epilogues beyond the one the wave composition counts
    reduction: np.ndarray  # the worker's partial writes and its fix-up read (us)


def stream_k_fixup(x: Inputs, a):
    """Stream-K's tile boundaries and fix-up (``stream_k``), for the one wave of ``a``
    workers' CTAs, each running I iterations (geometry.py: n_seg segments, tiles shared
    by up to ``parts`` workers). Where tiles are shared (parts > 1), a worker's first
    segment ends a tile another worker finishes: it writes its partial; its last segment
    starts a tile, whose other workers are done by then: it writes its partial, reads the
    parts partials back and runs the epilogue; the segments between are whole tiles. On
    the worker's critical path, beyond one K loop of I k-blocks and one epilogue:
        n_seg - 1 segment ends (each the last k-block's Tc instead of a period Pk, the
                    next segment's fill exposed beyond the epilogue, a tile overhead),
        e - 1 epilogues, e the tiles it stores (``Grid.stores``: max(n_seg - 1, 1), n_seg
                    where no tile is shared),
        ``reduction``(a, writes=w, reads=parts, readers=a*w/parts), w = min(n_seg, 2)
                    (0 unshared): the last arriver of a tile reads its parts partials one
                    after another, and the wave reads back each of the a*w partials it
                    writes once, so a*w/parts CTAs read parts each (a tile shared by all
                    a workers: one reader, not a).
    Off: the worker's iterations are one K loop and one epilogue (an ideal split of the
    iteration space: no boundaries, no partials); None off stream-K rows' terms."""
    if not x.on.stream_k_fixup:
        return None
    g = x.grid
    on = x.stream_k > 0
    shared = g.sk_parts > 1
    seg = g.sk_segments
    writes = np.minimum(seg, 2)
    red = np.where(shared, reduction(x, a, writes, g.sk_parts, a * writes / g.sk_parts), 0.0)
    return StreamKTerms(segments=np.where(on, seg - 1, 0), epilogues=np.where(on, g.stores - 1, 0),
                        reduction=np.where(on, red, 0.0))
